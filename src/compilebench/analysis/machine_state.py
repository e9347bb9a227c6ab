"""What a result says of the machine it ran on: other work beside it, its parallel speedup at each end of its
processes, page faults a call, and the experiments whose level was not steady."""

from __future__ import annotations

import numpy as np

from ..core.thresholds import CAPACITY_SHIFT, FAULTS_PER_CALL
from .stats import (
    verdict,
)


def busy(result: dict) -> bool:
    """Whether any of a result's processes measured on a machine that other work kept busy beyond `BUSY_SHARE`."""
    return any((p.get("machine") or {}).get("busy") is True for p in result.get("processes") or [result])


def parallel_capacity(result: dict) -> dict | None:
    """A result's parallel speedups (`machine.parallel_capacity`): the median over its processes of each probe, before
    eager was first timed and after the interleaved timing, over both (`overall`), and whether the two ends differ
    by more than `CAPACITY_SHIFT` (`shifted`); None for a result measured without the probes."""
    probes = [(p.get("machine") or {}).get("capacity") for p in result.get("processes") or []]
    if not probes or None in probes:
        return None
    before = float(np.median([c["before"]["parallel_speedup"] for c in probes]))
    after = float(np.median([c["after"]["parallel_speedup"] for c in probes]))
    return {
        "before": before,
        "after": after,
        "overall": float(np.median([c[end]["parallel_speedup"] for c in probes for end in ("before", "after")])),
        "shifted": capacity_differs(before, after),
    }


def capacity_differs(a: float, b: float) -> bool:
    """Whether two parallel speedups tell two states of the machine apart."""
    return max(a, b) / min(a, b) > 1 + CAPACITY_SHIFT


def faults_differ(a: float, b: float) -> bool:
    """Whether two counts of page faults a call tell two states of the memory allocator apart."""
    return abs(a - b) >= FAULTS_PER_CALL


def unstable_experiments(results: dict[tuple[str, str, str], dict], threshold: float) -> set[tuple[str, str, str]]:
    """The experiments of one run whose verdicts cannot be trusted: measured on a busy machine, or on a hardware
    entry where their model's noise floor (eager against itself) is itself faster or slower beyond 1 ± threshold."""
    unsteady_floors = set()
    for (hardware, model, mode), result in results.items():
        if mode == "eager" and result["status"] == "ok" and result.get("noise"):
            low, high = result["noise"]["ci95"]
            if verdict(low, high, threshold) in ("faster", "slower"):
                unsteady_floors.add((hardware, model))
    return {key for key, result in results.items() if busy(result) or key[:2] in unsteady_floors}
