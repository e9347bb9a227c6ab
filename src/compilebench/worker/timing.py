"""Device-synchronized clocks and the loops that take timed samples."""

from __future__ import annotations

import logging
import math
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..core.experiment import Measure

log = logging.getLogger(__name__)


class Clock:
    """Times one call: CUDA events on a GPU, perf_counter_ns on the CPU."""

    def __init__(self, device: str):
        self.cuda = device.startswith("cuda")

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def time(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        """Milliseconds taken by `fn()`, and what it returned."""
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end), out
        begin = time.perf_counter_ns()
        out = fn()
        return (time.perf_counter_ns() - begin) / 1e6, out


def enough(samples: list[float], iterations: int, min_time_s: float, max_iterations: int) -> bool:
    """Both a minimum count and a minimum time, unless the cap is reached."""
    if len(samples) >= max_iterations:
        return True
    return len(samples) >= iterations and sum(samples) >= min_time_s * 1e3


class Progress:
    """Logs "timing k of n" at most once every few seconds, so a long job's log shows where it is."""

    def __init__(self, iterations: int, min_time_s: float, what: str = "", every_s: float = 5.0):
        self.iterations, self.min_time_s, self.what, self.every_s = iterations, min_time_s, what, every_s
        self.last = time.monotonic()
        log.info("timing %d iterations and at least %.1f s%s", iterations, min_time_s, what)

    def tick(self, done: int) -> None:
        if time.monotonic() - self.last >= self.every_s:
            self.last = time.monotonic()
            log.info("timing %d of %d%s", done, self.iterations, self.what)


def timed_loop(
    fn: Callable[[], Any], clock: Clock, *, iterations: int, min_time_s: float, max_iterations: int
) -> list[float]:
    samples: list[float] = []
    progress = Progress(iterations, min_time_s)
    while not enough(samples, iterations, min_time_s, max_iterations):
        samples.append(clock.time(fn)[0])
        progress.tick(len(samples))
    return samples


def warm_up(fn: Callable[[], Any], clock: Clock, count: int) -> list[float]:
    return [clock.time(fn)[0] for _ in range(count)]


def minor_faults() -> int:
    """The page faults this process has taken that mapped memory afresh without reading a disk (`ru_minflt`): a
    call that frees and maps tens of megabytes again takes thousands, and pays for each."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def counted(fn: Callable[[], Any], clock: Clock, calls: int) -> tuple[list[float], list[int]]:
    """`calls` timed calls, and [page faults taken over them, calls]."""
    before = minor_faults()
    times = [clock.time(fn)[0] for _ in range(calls)]
    return times, [minor_faults() - before, calls]


@dataclass(frozen=True)
class BlockPlan:
    """How eager and the mode alternate: the calls kept in each side's blocks, the calls each block discards
    first (its own warm-up: the first calls after a switch run slower, their allocations still settling), and the
    fewest blocks per side for the block bootstrap."""

    eager: int
    mode: int
    warmup: int
    min_blocks: int
    caps: tuple[str, ...] = ()  # where a side's block is shorter than `interleave_block_s` asks, and why

    def record(self, blocks: int, block_s: float | None, caps: list[str] = ()) -> dict:
        return {
            "eager_block": self.eager,
            "mode_block": self.mode,
            "block_warmup": self.warmup,
            "blocks": blocks,
            "block_s": block_s,
            "caps": [*self.caps, *caps],
        }


def plan_blocks(measure: Measure, eager_ms: list[float], mode_ms: list[float]) -> BlockPlan:
    """Blocks of `interleave_block` calls where the config fixes them; else each side's block sized once, from its
    warm-up calls, to last about `interleave_block_s`, long enough to reach steady state after each switch. Capped
    so that `min_blocks` blocks fit in `max_iterations`."""
    cap = max(1, measure.max_iterations // measure.min_blocks)
    if measure.interleave_block:
        return BlockPlan(measure.interleave_block, measure.interleave_block, measure.block_warmup, measure.min_blocks)
    caps = []

    def length(side: str, samples: list[float]) -> int:
        call_ms = statistics.median(samples)
        asked = max(1, math.ceil(measure.interleave_block_s * 1e3 / call_ms))
        if asked <= cap:
            return asked
        caps.append(
            f"{side}'s blocks hold {cap} calls (max_iterations // min_blocks), about {cap * call_ms / 1e3:.3g} s, "
            f"not the {measure.interleave_block_s:g} s interleave_block_s asks"
        )
        return cap

    return BlockPlan(length("eager", eager_ms), length("the mode", mode_ms), measure.block_warmup,
                     measure.min_blocks, tuple(caps))  # fmt: skip


def stopped_short(samples: list[float], blocks: int, measure: Measure) -> str | None:
    """Why the timed phase ended at `max_iterations` before what `iterations`, `min_time_s` and `min_blocks` ask,
    or None where it did not."""
    timed_s = sum(samples) / 1e3
    if len(samples) < measure.max_iterations or (timed_s >= measure.min_time_s and blocks >= measure.min_blocks):
        return None
    return (
        f"the timed phase stopped at max_iterations ({len(samples)} calls, {timed_s:.3g} s in {blocks} blocks per "
        f"side), short of min_time_s ({measure.min_time_s:g} s) or min_blocks ({measure.min_blocks})"
    )


@dataclass
class Interleaved:
    """Both sides' kept samples, the blocks per side, and each block's [page faults, calls] over its kept calls."""

    eager_ms: list[float] = field(default_factory=list)
    mode_ms: list[float] = field(default_factory=list)
    blocks: int = 0
    eager_faults: list[list[int]] = field(default_factory=list)
    mode_faults: list[list[int]] = field(default_factory=list)


def interleaved(
    eager: Callable[[], Any],
    mode: Callable[[], Any],
    clock: Clock,
    *,
    plan: BlockPlan,
    iterations: int,
    min_time_s: float,
    max_iterations: int,
) -> Interleaved:
    """Time eager and the mode in alternating blocks (ABBA order), so drift hits both alike; each block's first
    `plan.warmup` calls are not kept."""
    out = Interleaved()
    progress = Progress(iterations, min_time_s, " (interleaved with eager)")
    while len(out.mode_ms) < max_iterations and not (
        enough(out.mode_ms, iterations, min_time_s, max_iterations) and out.blocks >= plan.min_blocks
    ):
        order = [(mode, out.mode_ms, out.mode_faults, plan.mode), (eager, out.eager_ms, out.eager_faults, plan.eager)]
        for fn, samples, faults, kept in order if out.blocks % 2 == 0 else reversed(order):
            warm_up(fn, clock, plan.warmup)
            times, taken = counted(fn, clock, kept)
            samples.extend(times)
            faults.append(taken)
        out.blocks += 1
        progress.tick(len(out.mode_ms))
    return out


def kept(calls: list, warmup: int, block: int) -> list:
    """Of one side's calls in the interleaved phase, in order, those whose timings were kept (not a block's first)."""
    return [call for i, call in enumerate(calls) if i % (warmup + block) >= warmup]


def alone(fn: Callable[[], Any], clock: Clock, *, warmup: int, **loop) -> tuple[list[float], list[int]]:
    """A side timed on its own, away from its interleaved phase (the steady state a result checks itself against),
    and [page faults, calls] over its timed calls."""
    warm_up(fn, clock, warmup)
    before = minor_faults()
    samples = timed_loop(fn, clock, **loop)
    return samples, [minor_faults() - before, len(samples)]
