"""The machine's parallel capacity: a probe that sees the cores a process can use, and what a result's probes say."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from compilebench.analysis import machine_state
from compilebench.worker.machine import parallel_capacity


def probed_with(cores: set[int]) -> dict:
    """The probe in a fresh process of two threads that may run on `cores` only (its threads inherit them)."""
    code = (
        f"import json, os; os.sched_setaffinity(0, {cores!r})\n"
        "import torch; torch.set_num_threads(2)\n"
        "from compilebench.worker.machine import parallel_capacity; print(json.dumps(parallel_capacity('cpu')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.skipif(len(getattr(os, "sched_getaffinity", lambda _: ())(0)) < 2, reason="needs two cores")
def test_the_probe_sees_the_cores_a_process_can_use():
    """A VM whose two vCPUs do not always run together (this project's 2-core VM, in its slow state) reads near 1
    on two cores for seconds at a time: the two-core probe is taken up to five times, one core once."""
    two = sorted(os.sched_getaffinity(0))[:2]
    one = probed_with({two[0]})
    tries = [probed_with(set(two))]
    while tries[-1]["parallel_speedup"] <= 1.3 and len(tries) < 5:
        time.sleep(2)
        tries.append(probed_with(set(two)))
    both = tries[-1]
    assert both["threads"] == one["threads"] == 2 and one["one_thread_ms"] > 0 and one["all_threads_ms"] > 0
    assert one["parallel_speedup"] < 1.1 < 1.3 < both["parallel_speedup"], (one, tries)
    assert machine_state.capacity_differs(both["parallel_speedup"], one["parallel_speedup"])


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
    held = machine_state.parallel_capacity(probes((1.70, 1.74), (1.80, 1.76), (1.75, 1.71)))
    assert held == {"before": pytest.approx(1.75), "after": pytest.approx(1.74), "overall": pytest.approx(1.745),
                    "shifted": False}  # fmt: skip
    moved = machine_state.parallel_capacity(probes((1.75, 1.40), (1.74, 1.42)))
    assert moved["shifted"] is True and moved["before"] == pytest.approx(1.745)
    assert machine_state.parallel_capacity({"processes": [{"machine": {"busy": False}}]}) is None
    assert machine_state.parallel_capacity({"processes": []}) is None
