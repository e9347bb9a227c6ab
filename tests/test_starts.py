"""From process start to first output: each path torch offers, in fresh processes, and what the tables and paper
make of them."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from helpers import TINY_MODELS, tiny_config
from synthetic import synthetic_starts

from compilebench.analysis import summaries
from compilebench.configuration import config as configuration
from compilebench.configuration import plan
from compilebench.core.errors import ConfigError
from compilebench.core.records import START_PARTS, START_PATHS, StartRequest
from compilebench.parent import starts
from compilebench.report import figures, findings, start_tables
from compilebench.worker import starts as worker_starts

EVERY_PATH = list(START_PATHS)


def experiment(mode: str = "compile-default", model: str = "resnet", definitions: dict | None = None, **measure):
    raw = tiny_config({model: TINY_MODELS[model]}, mode_definitions=definitions or {})
    raw["measure"].update(measure)
    config = configuration.validate(raw)
    return config, configuration.experiment(config, model, mode, "cpu", any_mode=True)


@pytest.fixture(scope="module")
def every_path(finished):
    """The shared run's own model (`source: python`) in compile-default, started once on every path and checked
    against its reference by its starts job."""
    project, _, _ = finished
    return json.loads((project / "results" / "starts" / "cpu" / "own" / "compile-default.json").read_text())


@pytest.mark.slow
def test_every_path_starts_a_fresh_process_to_a_correct_first_output(every_path):
    rows = {row["path"]: row for row in every_path["rows"]}
    assert list(rows) == EVERY_PATH
    for path, row in rows.items():
        assert row["status"] == "ok", (path, row["reason"])
        assert row["correct"] is True and row["timed_from"] == "spawn", path
        parts = row["parts"]
        assert set(parts) == set(START_PARTS) and min(parts.values()) >= 0
        assert sum(parts.values()) == pytest.approx(row["total_s"], rel=0.02), path  # the parts are the whole
        assert parts["import_s"] > 0.1  # torch is imported inside the timed start, not before it
    # what each path skips shows where the time went
    assert rows["warm"]["parts"]["first_call_s"] < 0.5 * rows["cold"]["parts"]["first_call_s"]
    assert rows["package"]["parts"]["first_call_s"] < 0.5 * rows["cold"]["parts"]["first_call_s"]
    assert rows["eager"]["total_s"] < rows["cold"]["total_s"]
    for path in ("warm", "artifacts", "package", "precompiled"):
        assert rows[path]["artifact_bytes"] > 0, path
    assert rows["eager"]["artifact_bytes"] is None and rows["cold"]["artifact_bytes"] is None
    # each start's peak memory, as a user running the mode alone sees it: torch's import alone is over 100 MB
    assert all(row["peak_bytes"] > 100e6 for row in rows.values())
    assert rows["cold"]["peak_bytes"] > rows["eager"]["peak_bytes"]  # compiling in the process costs memory
    builds = every_path["builds"]
    assert builds["package"]["status"] == "ok" and builds["precompiled"]["build_s"] > 0


@pytest.mark.slow
def test_the_summary_of_every_path_sets_each_against_eager(every_path):
    frame = start_tables.start_paths([every_path])
    assert list(frame["path"]) == EVERY_PATH and (frame["status"] == "ok").all()
    cold = frame.set_index("path").loc["cold"]
    assert cold["overhead_over_eager_s"] == pytest.approx(
        cold["total_s"] - frame.set_index("path").loc["eager", "total_s"]
    )
    assert (frame["peak_bytes"] > 0).all()
    rows = start_tables.starts([every_path])
    assert rows["overhead_over_eager_s"].isna().tolist() == [True] + [False] * 5


@pytest.mark.parametrize(
    "path, attribute",
    [("artifacts", ("compiler", "load_cache_artifacts")), ("precompiled", ("compiler", "load_compiled_function"))],
)
def test_a_path_this_torch_lacks_is_unsupported_with_its_reason(monkeypatch, tmp_path, path, attribute):
    import torch

    owner = getattr(torch, attribute[0])
    monkeypatch.delattr(owner, attribute[1])
    _, exp = experiment()
    record = worker_starts.start(StartRequest(str(tmp_path / "s.json"), exp, path=path), entered_at=0.0)
    assert record["status"] == "unsupported"
    assert f"torch {torch.__version__} has no torch.{attribute[0]}.{attribute[1]}" in record["error"]["message"]
    if path == "precompiled":
        build = worker_starts.build_artifact(
            worker_starts.ArtifactRequest(str(tmp_path / "b.json"), exp, path, str(tmp_path / "f.bin"))
        )
        assert build["status"] == "unsupported" and "load_compiled_function" in build["error"]["message"]


def test_what_a_mode_cannot_start_from_is_refused_with_why():
    definitions = {
        "compile-freezing": {"kind": "compile", "compile": {"options": {"freezing": True}}},
        "compile-dynamic": {"kind": "compile", "compile": {"dynamic": True}},
        "compile-regional": {"kind": "compile", "compile": {"regional": True}},
        "export-aoti": {"kind": "export"},
    }

    def why(mode, path, model="resnet"):
        return starts.obstacle(experiment(mode, model, definitions)[1], path)

    assert all(why("compile-default", path) is None for path in START_PATHS)
    assert "frozen constants" in why("compile-freezing", "artifacts")
    assert "dynamic shapes" in why("compile-dynamic", "package")
    assert "blocks one by one" in why("compile-regional", "precompiled")
    assert "its package" in why("export-aoti", "precompiled") and "export mode" in why("export-aoti", "artifacts")
    assert why("export-aoti", "package") is None and why("export-aoti", "warm") is None
    assert "generation loop" in why("compile-default", "package", "llama")


def test_each_path_gets_a_median_with_an_interval_its_overhead_and_its_break_even():
    record = synthetic_starts(
        {"eager": [2.0, 2.1, 2.2], "cold": [30.0, 32.0, 31.0], "warm": [5.0, 5.2, 5.1]},
        precompiled="torch 2.4 has no torch.compiler.load_compiled_function",
    )
    # a mode that saves 1 ms a call: a warm start (3 s over eager's) is repaid after 3000 calls
    result = {"status": "ok", "measure": {"bootstrap_resamples": 200}, "processes": [
        {"eager_latency_ms": [10.0] * 20, "latency_ms": [9.0] * 20, "interleave": {"eager_block": 5, "mode_block": 5}}
    ], "eager_latency_ms": [10.0] * 20, "latency_ms": [9.0] * 20}  # fmt: skip
    by_path = {row["path"]: row for row in summaries.path_summaries(record, result, resamples=200)}
    warm = by_path["warm"]
    assert warm["n"] == 3 and warm["total_s"] == 5.1
    assert warm["total_ci95_low"] <= 5.1 <= warm["total_ci95_high"]
    assert warm["overhead_over_eager_s"] == pytest.approx(3.0)
    assert warm["overhead_ci95_low"] > 0
    assert warm["break_even_calls"] == pytest.approx(3000, rel=0.01)
    assert (
        by_path["precompiled"]["status"] == "unsupported"
        and "load_compiled_function" in by_path["precompiled"]["reason"]
    )
    rows = start_tables.starts([record]).set_index(["path", "repeat"])
    assert rows.loc[("warm", 3), "overhead_over_eager_s"] == pytest.approx(5.1 - 2.1)  # eager's median start
    assert pd.isna(rows.loc[("eager", 1), "overhead_over_eager_s"])
    said = " ".join(findings.start_findings(pd.DataFrame(by_path.values())))
    assert "warm 5.10 s" in said and "+3.00 s over eager's" in said and "3,000 calls" in said
    assert "precompiled was unsupported (torch 2.4 has no" in said


def test_a_start_no_different_from_eagers_is_said_so():
    record = synthetic_starts({"eager": [2.0, 2.4, 2.2], "package": [2.1, 2.3, 2.25]})
    said = findings.start_findings(start_tables.start_paths([record]))
    assert "package 2.25 s" in said[0] and "no detectable difference from eager's start" in said[0]


def test_the_starts_figure_draws_every_path_and_names_the_unsupported(tmp_path):
    record = synthetic_starts({"eager": [2.0, 2.1, 2.2], "cold": [30.0, 32.0, 31.0]}, package="a reason")
    frame = start_tables.start_paths([record])
    frame.to_csv(tmp_path / "paths.csv", index=False)
    empty = pd.DataFrame()
    fig = figures.starts(figures.Tables(*[empty] * 9, pd.read_csv(tmp_path / "paths.csv"), empty))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["eager", "cold", "package"]
    assert any("unsupported: a reason" in t.get_text() for t in ax.texts)


def test_starts_are_set_per_mode_and_a_mode_that_does_not_compile_is_refused():
    config, _ = experiment(starts={"compile-default": ["warm", "eager"]}, start_repeats=2)
    assert configuration.starts_plan(config, "resnet", "compile-default", "cpu") == {
        "paths": ["eager", "warm"],
        "repeats": 2,
    }
    assert configuration.starts_plan(config, "resnet", "compile-max-autotune", "cpu") is None
    assert configuration.planned(config).starts == plan.start_processes(["eager", "warm"], 2)[0] == 1 + 1 + 4
    with pytest.raises(ConfigError, match=r"`measure\.starts\.jit` names a mode that does not compile"):
        experiment(starts={"jit": ["cold"]})
    with pytest.raises(ConfigError, match=r"`measure\.starts` is invalid"):
        experiment(starts=["lukewarm"])


def test_starts_that_could_never_run_are_refused_at_check_naming_measure_starts():
    raw = tiny_config({"resnet": {**TINY_MODELS["resnet"], "modes": ["eager", "jit"]}})
    raw["models"]["resnet"]["measure"] = {"starts": ["eager", "cold"]}
    with pytest.raises(ConfigError, match=r"`models\.resnet\.measure\.starts` asks eager, cold starts, but no mode"):
        configuration.validate(raw)
    raw["models"]["resnet"]["measure"] = {}
    raw["measure"]["starts"] = ["cold"]
    with pytest.raises(ConfigError, match=r"`measure\.starts` asks cold starts, but no mode among any model's"):
        configuration.validate(raw)
    streamed = tiny_config()
    streamed["models"] = {"resnet": {**TINY_MODELS["resnet"], "stream": {"batch_size": [1, 2]}}}
    streamed["models"]["resnet"]["measure"] = {"starts": ["cold"]}
    with pytest.raises(ConfigError, match=r"`models\.resnet\.measure\.starts` asks starts of a model with a `stream`"):
        configuration.validate(streamed)


def test_every_start_counts_toward_the_plans_time_bound_and_repeats_are_bounded():
    few, _ = experiment(starts={"compile-default": ["cold"]}, start_repeats=2)
    many, _ = experiment(starts={"compile-default": ["cold"]}, start_repeats=100)
    added = configuration.planned(many).lower_bound_s - configuration.planned(few).lower_bound_s
    assert added == pytest.approx(98 * (plan.START_FLOOR_S + plan.COMPILE_FLOOR_S))
    with pytest.raises(ConfigError, match=r"`measure\.start_repeats` is invalid"):
        experiment(starts=["cold"], start_repeats=1_000_000)
    with pytest.raises(ConfigError, match=r"max_hours` is 0.01 hours, .* start processes"):
        plan.check_max_hours(configuration.planned(many), 0.01)


def test_starts_leave_the_experiment_and_its_fingerprint_alone():
    _, plain = experiment()
    _, with_starts = experiment(starts=["cold"], start_repeats=5)
    assert plain.digest() == with_starts.digest()


def test_a_mode_that_saves_nothing_per_call_never_catches_up_with_eagers_start():
    record = synthetic_starts({"eager": [2.0, 2.1, 2.2], "warm": [5.0, 5.2, 5.1]})
    slower = {"status": "ok", "measure": {"bootstrap_resamples": 200}, "eager_latency_ms": [9.0] * 20,
              "latency_ms": [10.0] * 20, "interleave": {"eager_block": 5, "mode_block": 5}}  # fmt: skip
    said = findings.start_findings(pd.DataFrame(summaries.path_summaries(record, slower, resamples=200)))
    assert "warm 5.10 s" in said[0] and "never caught up (the mode saves nothing per call)" in said[0]
