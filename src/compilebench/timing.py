"""Device-synchronized clocks and the loops that take timed samples."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import torch

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


def interleaved(
    eager: Callable[[], Any],
    mode: Callable[[], Any],
    clock: Clock,
    *,
    block: int,
    iterations: int,
    min_time_s: float,
    max_iterations: int,
) -> tuple[list[float], list[float]]:
    """Time eager and the mode in alternating blocks (ABBA order), so drift hits both alike."""
    eager_samples: list[float] = []
    mode_samples: list[float] = []
    pair = 0
    progress = Progress(iterations, min_time_s, " (interleaved with eager)")
    while not enough(mode_samples, iterations, min_time_s, max_iterations):
        order = [(mode, mode_samples), (eager, eager_samples)]
        for fn, samples in order if pair % 2 == 0 else reversed(order):
            samples.extend(clock.time(fn)[0] for _ in range(block))
        pair += 1
        progress.tick(len(mode_samples))
    return eager_samples, mode_samples
