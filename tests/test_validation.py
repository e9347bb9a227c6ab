"""Every accuracy check in benchmarks/validation runs to its printed figures, on tiny models with short budgets, so
that none can rot between the times someone runs it in full. The figures' values are not targets here (a tiny
model in a fraction of a second says nothing of a mode); what is asserted is what a reader of each script's output
relies on: every experiment asked for is reported, with finite figures, and identical runs never compare as
different."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import CPU, FAST_MEASURE, ROOT, TINY_MODELS, write_config

VALIDATION = ROOT / "benchmarks" / "validation"
NUMBER = r"(\d+\.\d+)"


def run_check(script: str, *args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [sys.executable, str(VALIDATION / script), *args], capture_output=True, text=True, timeout=900, cwd=cwd
    )
    assert done.returncode == 0, f"{script} {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def figures(pattern: str, text: str) -> list[float]:
    found = [float(x) for match in re.findall(pattern, text) for x in ([match] if isinstance(match, str) else match)]
    assert found, f"no figure matching {pattern!r} in:\n{text}"
    assert all(math.isfinite(x) and x > 0 for x in found), text
    return found


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """A config with a tiny CNN (eager and TorchScript) and a tiny decoder's training step, measured briefly."""
    config = {
        "modes": ["eager", "jit", "compile-default"],
        "measure": dict(FAST_MEASURE),
        "models": {
            "resnet": {**TINY_MODELS["resnet"], "modes": ["eager", "jit"]},
            "llama": {**TINY_MODELS["llama"], "modes": ["eager"],
                      "train": {"batch_size": 2, "modes": ["compile-default"]}},
        },
        "hardware": {"cpu": dict(CPU)},
    }  # fmt: skip
    path = tmp_path_factory.mktemp("validation") / "config.yaml"
    write_config(path, config)
    return path


@pytest.mark.slow  # measures real models
def test_fidelity_sets_each_mode_beside_a_plain_measurement(tiny):
    together = run_check("fidelity.py", "--config", str(tiny), "--only", "resnet", "--modes", "jit",
                         "--processes", "1", "--seconds", "0.05")  # fmt: skip
    assert "resnet/jit" in together
    figures(r"worst ratio: " + NUMBER, together)
    apart = run_check("fidelity.py", "--separate", "--config", str(tiny), "--only", "resnet", "--modes", "jit",
                      "--processes", "1", "--seconds", "0.05")  # fmt: skip
    figures(r"resnet/jit\s+" + NUMBER, apart)
    figures(r"in-process " + NUMBER + ", cross-job " + NUMBER, apart)


@pytest.mark.slow  # measures real models
def test_training_fidelity_sets_a_training_step_beside_a_plain_loop(tiny):
    out = run_check("training_fidelity.py", "--config", str(tiny), "--only", "llama.train", "--modes",
                    "compile-default", "--processes", "1", "--seconds", "0.1")  # fmt: skip
    figures(r"llama.train/compile-default: plain speedup " + NUMBER, out)
    figures(r"worst ratio \(either way\): " + NUMBER, out)


@pytest.mark.slow  # measures real models
def test_eager_beside_times_eager_in_every_phase(tiny):
    out = run_check("eager_beside.py", "--config", str(tiny), "--only", "resnet", "--modes", "jit",
                    "--seconds", "0.05")  # fmt: skip
    line = next(line for line in out.splitlines() if line.startswith("resnet/jit:"))
    for phase in ("fresh", "mode", "after", "interleaved", "workers", "own process"):
        figures(rf"\b{phase} " + NUMBER + " ms", line)


@pytest.mark.slow  # measures real models
def test_noise_coverage_reports_both_intervals_coverage(tiny):
    out = run_check("noise_coverage.py", "--config", str(tiny), "--repeats", "2", "--min-time-s", "0.02")
    assert re.search(r"A/A coverage over 4 measurements of 2 models: bootstrap of single samples \d+%", out), out


@pytest.mark.slow  # measures real models
def test_engine_overhead_sets_the_engine_beside_timer():
    out = run_check("engine_overhead.py", "--rounds", "1", "--seconds", "0.1", "--threads", "1")
    figures(r"engine median / Timer median = " + NUMBER, out)
    assert re.search(r"per-iteration overhead on a no-op model: -?\d+\.\d+ us", out), out


@pytest.mark.slow  # measures real models
def test_two_speeds_times_a_compiled_model_in_fresh_processes():
    out = run_check("two_speeds.py", "--variants", "plain", "--processes", "1", "--model", "alexnet",
                    "--image-size", "64", "--blocks", "2", "--block-calls", "2")  # fmt: skip
    figures(r"round 1 plain: speedup " + NUMBER, out)
    assert re.search(r"\nplain +\d/1 +\d+\.\d+ \(", out), out


def test_level_shifts_calibrates_on_a_finished_run(finished):
    project, _, _ = finished
    out = run_check("level_shifts.py", "--results", str(project / "results"), "--draws", "1")
    assert re.search(r"\n(\d+) records, (\d+) series", out), out
    assert "step detected:" in out


def test_verdicts_aa_finds_no_difference_between_identical_runs(finished, tmp_path):
    project, _, _ = finished
    for name in ("a", "b"):
        (tmp_path / name).symlink_to(project)
    out = run_check("verdicts_aa.py", "--reuse", str(tmp_path), "--scale", "1.3")
    aa = next(line for line in out.splitlines() if line.startswith("A/A verdicts over"))
    assert " 0 faster" in aa and " 0 slower" in aa, aa
    assert re.search(r"verdicts with the second run's latencies × 1\.3 over \d+ experiments", out), out


def test_run_to_run_spread_sets_two_runs_beside_timer(finished):
    project, _, _ = finished
    out = run_check("run_to_run_spread.py", "--config", str(project / "config" / "config.yaml"),
                    "--reuse", str(project), str(project), "--only", "resnet", "--timer-modes", "eager",
                    cwd=project)  # fmt: skip  # the config's asset paths are the project's
    line = next(line for line in out.splitlines() if line.startswith("cpu/resnet/eager"))
    compilebench_spread, timer_spread = re.findall(r"(\d+\.\d)%", line)
    assert compilebench_spread == "0.0", line  # the same run read twice
    assert "median run-to-run spread, eager models: compilebench 0.0% over 1" in out, out


@pytest.mark.slow  # measures real models
def test_history_calibration_runs_the_config_again_and_injects_a_step(tmp_path):
    config = {
        "modes": ["eager"],
        "measure": {**FAST_MEASURE, "processes": 1},
        "models": {"resnet": TINY_MODELS["resnet"]},
        "hardware": {"cpu": dict(CPU)},
    }
    write_config(tmp_path / "aa.yaml", config)
    out = run_check("history_calibration.py", "--config", str(tmp_path / "aa.yaml"), "--runs", "2",
                    "--step-at", "2", "--keep", str(tmp_path / "keep"), "--step-modes", "eager",
                    "--steps", "1.2", "1.5", "--processes", "1")  # fmt: skip
    assert sorted(p.name for p in (tmp_path / "keep").glob("run*")) == ["run01", "run02"]
    assert re.search(r"(\d+) of (\d+) series with a change found \(false alarms\)", out), out
    assert len(re.findall(r"detected in \d+ of [1-9]\d* stepped series", out)) == 2, out
    assert "a 1.2x step" in out and "a 1.5x step" in out
