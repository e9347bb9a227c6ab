"""A run as a suite: pass rate, failures by cause and the geometric-mean speedup with an interval, on known values."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from helpers import compilebench

from compilebench.analysis import stats
from compilebench.report import suite_tables


def test_the_suite_geomean_interval_resamples_the_models():
    value, low, high = stats.population_geomean([2.0, 0.5], [2.0, 0.5], [2.0, 0.5])
    assert value == pytest.approx(1.0) and low == pytest.approx(0.5) and high == pytest.approx(2.0)


def test_the_suite_geomean_interval_carries_each_models_own_uncertainty():
    value, low, high = stats.population_geomean([1.2], [1.1], [1.3], resamples=20000)
    assert value == pytest.approx(1.2) and low == pytest.approx(1.1, rel=0.02) and high == pytest.approx(1.3, rel=0.02)
    exact = stats.population_geomean([1.2, 1.2, 1.2], [1.2] * 3, [1.2] * 3)
    assert exact == pytest.approx((1.2, 1.2, 1.2))
    assert all(math.isnan(x) for x in stats.population_geomean([], [], []))


def run(model, mode, status="ok", speedup=None, low=None, high=None, correct=True, **more) -> dict:
    row = {"hardware": "cpu", "model": model, "mode": mode, "status": status, "speedup": speedup,
           "speedup_ci95_low": low, "speedup_ci95_high": high, "correct": correct, "compile_s": 10.0,
           "graph_breaks": 0, "peak_memory_bytes": 100.0, "error": None, "train_of": None}  # fmt: skip
    return {**row, **more}


def known_suite() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Six models: one faster, one slower, one the mode cannot compile, one that fails in eager too, one whose
    output fails the accuracy rule, one out of time."""
    runs = pd.DataFrame([
        *(run(m, "eager") for m in ("fast", "slow", "nocompile", "accurate", "late")),
        run("broken", "eager", "failed", correct=None, error="RuntimeError: shapes"),
        run("fast", "compile-default", speedup=1.5, low=1.4, high=1.6, compile_s=5.0, peak_memory_bytes=50.0),
        run("slow", "compile-default", speedup=0.8, low=0.75, high=0.85, compile_s=20.0, graph_breaks=2),
        run("nocompile", "compile-default", "failed", correct=None, error="BackendCompilerFailed: inductor"),
        run("broken", "compile-default", "failed", correct=None, error="RuntimeError: shapes"),
        run("accurate", "compile-default", speedup=1.1, low=1.0, high=1.2, correct=False),
        run("late", "compile-default", "timeout", correct=None),
    ])  # fmt: skip
    verdicts = {"fast": "faster", "slow": "slower", "accurate": "no detectable difference"}  # as every table says
    speedups = pd.DataFrame(
        [{"hardware": "cpu", "model": m, "mode": "compile-default", "verdict": v} for m, v in verdicts.items()]
    )
    return runs, speedups


def test_pass_rate_failures_by_cause_and_the_geomean_of_a_known_suite():
    models = suite_tables.suite_models(*known_suite(), command="snakemake --cores 4 --configfile suite.yaml")
    causes = {
        model: cause if isinstance(cause, str) else None for model, cause in zip(models["model"], models["cause"])
    }
    assert causes == {"fast": None, "slow": None, "nocompile": "compile", "broken": "build", "accurate": "accuracy",
                      "late": "timeout"}  # fmt: skip
    fast = models.set_index("model").loc["fast"]
    assert fast["memory_ratio"] == 2.0 and fast["verdict"] == "faster"
    assert fast["command"] == "snakemake --cores 4 --configfile suite.yaml results/runs/cpu/fast/compile-default.json"
    (row,) = suite_tables.suite(models).to_dict("records")
    assert (row["models"], row["passed"], row["pass_rate"]) == (6, 2, pytest.approx(1 / 3))
    assert [row[f"failed_{c}"] for c in suite_tables.CAUSES] == [1, 1, 1, 1, 0]
    assert row["geomean_speedup"] == pytest.approx(math.sqrt(1.5 * 0.8))
    assert row["geomean_ci95_low"] < 0.85 and row["geomean_ci95_high"] > 1.4  # two models: either may be drawn twice
    assert row["geomean_speedup_clipped"] == pytest.approx(math.sqrt(1.5))  # the slowdown counted as 1.0
    assert (row["faster"], row["same"], row["slower"], row["unclear"]) == (1, 0, 1, 0)
    assert (row["graph_breaks"], row["models_with_graph_breaks"]) == (2, 1)
    assert row["compile_s_median"] == 10.0 and row["compile_s_p90"] == pytest.approx(18.0)  # of the three that ran


def test_expected_statuses_are_written_from_a_run_and_any_change_either_way_fails_the_check(tmp_path):
    project = tmp_path / "project"
    tables_dir = project / "results" / "tables"
    tables_dir.mkdir(parents=True)
    models = suite_tables.suite_models(*known_suite())
    models.to_csv(tables_dir / "suite_models.csv", index=False)
    expected = tmp_path / "expected.csv"
    done = compilebench("suite", "expect", project, expected)
    assert done.returncode == 0 and "wrote 6 expected statuses" in done.stdout, done.stderr
    rows = expected.read_text().splitlines()
    assert rows[0] == "hardware,model,mode,status" and "cpu,late,compile-default,timeout" in rows
    assert "cpu,accurate,compile-default,fail_accuracy" in rows and "cpu,broken,compile-default,fail_to_run" in rows
    assert compilebench("suite", "check", project, expected).returncode == 0
    # a model that now fails, and one that now passes: both fail the check until the file is updated
    changed = models.copy()
    changed.loc[changed["model"] == "fast", "cause"] = "compile"
    changed.loc[changed["model"] == "late", "cause"] = None
    changed.to_csv(tables_dir / "suite_models.csv", index=False)
    done = compilebench("suite", "check", project, expected)
    assert done.returncode == 1
    assert "cpu/fast/compile-default: expected pass, found fail_to_run (regression)" in done.stdout
    assert "cpu/late/compile-default: expected timeout, found pass (improvement)" in done.stdout
    assert "2 statuses differ" in done.stdout
    expected.write_text("hardware,model,mode,status\ncpu,fast,compile-default,great\n")
    done = compilebench("suite", "check", project, expected)
    assert done.returncode == 2 and "line 2 is not an expected status" in done.stderr
    done = compilebench("suite", "expect", tmp_path / "nothing", expected)
    assert done.returncode == 2 and "expected a finished run" in done.stderr


def test_the_shipped_suite_has_sixty_models_from_four_sources_in_three_modes_and_a_run_of_it_is_a_suite():
    from helpers import ROOT

    from compilebench.configuration import config as configuration
    from compilebench.configuration.yaml_files import read_yaml

    config = configuration.validate(read_yaml(ROOT / "config" / "experiments" / "suite.yaml"))
    sources = pd.Series([entry["source"] for entry in config["models"].values()]).value_counts()
    assert len(config["models"]) >= 60 and config["modes"] == ["eager", "compile-default", "compile-freezing"]
    assert sources["torchvision"] >= 20 and sources["timm"] >= 20 and sources["transformers"] >= 15
    assert sources["python"] == 1
    tasks = {entry.get("task") for entry in config["models"].values() if entry["source"] == "transformers"}
    assert {"text-classification", "fill-mask", "text-generation", "image-classification"} <= tasks
    runs = pd.DataFrame({"model": list(config["models"]), "mode": "eager", "train_of": None, "sweep_of": None})
    assert suite_tables.is_suite(runs) and not suite_tables.is_suite(runs.head(4))
