"""What else used the machine while a process measured: other processes' CPU time and the hypervisor's steal."""

from __future__ import annotations

import os
import time

import psutil

from .thresholds import BUSY_SHARE

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
