"""The machine's parallel capacity: a probe that sees a core taken away, and what a result's probes say."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import psutil
import pytest
import torch

from compilebench import comparisons
from compilebench.machine import parallel_capacity


def median_of(probes: int) -> float:
    return statistics.median(parallel_capacity("cpu")["parallel_speedup"] for _ in range(probes))


@pytest.mark.skipif(torch.get_num_threads() < 2 or not hasattr(os, "sched_setaffinity"), reason="needs two threads")
def test_the_probe_sees_a_core_that_another_process_takes():
    quiet = median_of(5)
    last_core = max(os.sched_getaffinity(0))
    spin = f"import os; os.sched_setaffinity(0, {{{last_core}}})\nwhile True: pass"
    hog = subprocess.Popen([sys.executable, "-c", spin])
    try:
        while psutil.Process(hog.pid).cpu_times().user < 0.2:  # spinning, past its start
            time.sleep(0.05)
        hogged = median_of(5)
    finally:
        hog.kill()
    probe = parallel_capacity("cpu")
    assert probe["threads"] == torch.get_num_threads() and probe["one_thread_ms"] > 0 and probe["all_threads_ms"] > 0
    assert hogged < quiet and comparisons.capacity_differs(quiet, hogged), (quiet, hogged)


def test_a_gpu_process_is_not_probed():
    assert parallel_capacity("cuda") is None


def probes(*pairs: tuple[float, float]) -> dict:
    return {
        "processes": [
            {"machine": {"capacity": {"before": {"parallel_speedup": b}, "after": {"parallel_speedup": a}}}}
            for b, a in pairs
        ]
    }


def test_a_results_capacity_is_the_median_over_its_processes_and_a_move_between_its_ends_is_named():
    held = comparisons.parallel_capacity(probes((1.70, 1.74), (1.80, 1.76), (1.75, 1.71)))
    assert held == {"before": pytest.approx(1.75), "after": pytest.approx(1.74), "overall": pytest.approx(1.745),
                    "shifted": False}  # fmt: skip
    moved = comparisons.parallel_capacity(probes((1.75, 1.40), (1.74, 1.42)))
    assert moved["shifted"] is True and moved["before"] == pytest.approx(1.745)
    assert comparisons.parallel_capacity({"processes": [{"machine": {"busy": False}}]}) is None
    assert comparisons.parallel_capacity({"processes": []}) is None
