"""What a mode spends its time on: a torch.profiler trace and the top operators by self time."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..core.files import atomic_write
from .timing import Clock

log = logging.getLogger(__name__)

TOP_OPS = 15


def _self_time_us(event: Any, on_device: bool) -> float:
    if not on_device:
        return event.self_cpu_time_total
    return getattr(event, "self_device_time_total", None) or getattr(event, "self_cuda_time_total", 0.0)


def profile(call: Callable[[], Any], clock: Clock, iterations: int, trace_path: str | Path) -> dict:
    """Record `iterations` calls; write the Chrome trace (for Perfetto) and return the top operators per call.

    On a GPU the operators are ranked by their kernels' device time, on the CPU by host self time.
    """
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if clock.cuda else [])
    log.info("profiling %d calls", iterations)
    with torch_profile(activities=activities) as recording:
        for _ in range(iterations):
            call()
        clock.sync()
    Path(trace_path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(trace_path, lambda handle: recording.export_chrome_trace(handle.name))
    events = [(e, _self_time_us(e, clock.cuda)) for e in recording.key_averages()]
    events = [(e, t) for e, t in events if t > 0]
    total_us = sum(t for _, t in events)
    ranked = sorted(events, key=lambda pair: pair[1], reverse=True)[:TOP_OPS]
    return {
        "trace": str(trace_path),
        "iterations": iterations,
        "time_basis": "device" if clock.cuda else "cpu",
        "self_us_per_call": total_us / iterations,
        "top_ops": [
            {
                "op": e.key,
                "self_us_per_call": t / iterations,
                "calls_per_call": e.count / iterations,
                "share": t / total_us,
            }
            for e, t in ranked
        ],
    }


def flops_per_call(module: torch.nn.Module, inputs: tuple) -> int | None:
    """Floating-point operations of one eager forward pass, as torch's FLOP counter counts them; None, with why in
    the log, where the counter cannot follow the model (its module tracker fails on a parameter handed to a
    submodule without autograd, as in timm's test_vit3): the limits table then leaves that fraction unsaid, and the
    experiment goes on."""
    from torch.utils.flop_counter import FlopCounterMode

    try:
        with FlopCounterMode(display=False) as counter:
            module(*inputs)
    except Exception as exc:  # a count for the limits table only: never the experiment's failure
        log.warning("FLOPs not counted: %s: %s", type(exc).__name__, exc)
        return None
    return int(counter.get_total_flops())
