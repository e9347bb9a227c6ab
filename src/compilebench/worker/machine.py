"""What else used the machine while a process measured: other processes' CPU time and the hypervisor's steal, and
how much faster all of the process's threads multiply than one (the cores it could use)."""

from __future__ import annotations

import os
import statistics
import time

import psutil

from ..core.thresholds import BUSY_SHARE

IDLE_FIELDS = ("idle", "iowait", "steal", "guest", "guest_nice")  # guest time is counted in user time already
# The kernel counts CPU time in ticks of 10 ms: over a shorter phase than this, one tick of another process would
# read as a busy machine, so `busy` stays unjudged (None).
SHORTEST_JUDGED_S = 1.0


class Load:
    """Started before the timed phase, read after it: the share of the machine's CPU time that processes other
    than this one used (`others_share`) and that the hypervisor took (`steal_share`, where the kernel reports it)."""

    def __init__(self):
        self.me = psutil.Process()
        self.start = self._snapshot()

    def _snapshot(self) -> tuple[float, float, float, float]:
        system = psutil.cpu_times()
        used = sum(value for name, value in system._asdict().items() if name not in IDLE_FIELDS)
        own = self.me.cpu_times()
        return time.monotonic(), used, own.user + own.system, getattr(system, "steal", 0.0)

    def report(self) -> dict:
        (begin, used0, own0, steal0), (end, used1, own1, steal1) = self.start, self._snapshot()
        capacity = max(end - begin, 1e-9) * (psutil.cpu_count() or 1)
        others = max(0.0, (used1 - used0) - (own1 - own0))
        others_share, steal_share = others / capacity, (steal1 - steal0) / capacity
        judged = end - begin >= SHORTEST_JUDGED_S
        return {
            "wall_s": end - begin,
            "cpus": psutil.cpu_count(),
            "others_cpu_s": others,
            "others_share": others_share,
            "steal_share": steal_share,
            "load_average": list(os.getloadavg()),
            "busy_share": BUSY_SHARE,
            "busy": (others_share > BUSY_SHARE or steal_share > BUSY_SHARE) if judged else None,
        }


PROBE_SIZE = 256  # a square matrix product of this size: about 34 MFLOP, a few ms on one core
PROBE_S = 0.05  # each side of the probe repeats its product for at least this long


def parallel_capacity(device: str) -> dict | None:
    """How much faster this process's threads multiply a matrix than one thread (`parallel_speedup`): the cores it
    can use at this moment. A core the process may not use, or a host that does not run its threads together,
    lowers it; probed at both ends of a measuring process, it tells the machine's state from a mode's effect. Not a
    detector of other work (`Load` is): beside a spinning process it reads low in some tries and not in others.
    None on a GPU, where the host's threads do not set the speed."""
    if device != "cpu":
        return None
    import torch

    threads = torch.get_num_threads()
    a = torch.randn(PROBE_SIZE, PROBE_SIZE)
    try:
        torch.set_num_threads(1)
        one_ms = _median_call_ms(lambda: torch.mm(a, a))
    finally:
        torch.set_num_threads(threads)
    all_ms = _median_call_ms(lambda: torch.mm(a, a))
    return {
        "threads": threads,
        "one_thread_ms": one_ms,
        "all_threads_ms": all_ms,
        "parallel_speedup": one_ms / all_ms,
    }


def _median_call_ms(call) -> float:
    call()  # the first call sets up the kernel and its threads
    times, begin = [], time.perf_counter()
    while time.perf_counter() - begin < PROBE_S or len(times) < 5:
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)
