"""A level that moves inside a measuring process is seen, the process measured again, and the result says so."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from helpers import tiny_config
from synthetic import synthetic_results

from compilebench.analysis import levels, summaries
from compilebench.configuration import config as configuration
from compilebench.core import files, layout, supervise
from compilebench.parent import jobs
from compilebench.report import speedup_tables, tables


def calls(n: int, level_ms: float, seed: int, spread: float = 0.03) -> list[float]:
    """Timed calls at one level: log-normal spread, a stray slow call now and then, as a quiet machine gives."""
    rng = np.random.default_rng(seed)
    ms = level_ms * np.exp(rng.normal(0.0, spread, n))
    ms[rng.random(n) < 0.03] *= 1.8
    return [float(x) for x in ms]


def record(mode: list[float], eager: list[float]) -> dict:
    return {"status": "ok", "latency_ms": mode, "eager_latency_ms": eager, "alone_latency_ms": mode[:20]}


def stepped(series: list[float], at: int, by: float) -> list[float]:
    return series[:at] + [x * by for x in series[at:]]


def test_a_steady_pair_has_no_shift_and_a_step_in_one_side_is_found_where_it_is():
    for seed in range(10):
        steady = record(calls(120, 17.0, seed), calls(120, 14.0, seed + 100))
        assert levels.level_shift(steady) is None, seed
    moved = record(stepped(calls(120, 17.0, 1), 47, 1.7), calls(120, 14.0, 2))
    shift = levels.level_shift(moved)
    assert shift["side"] == "mode" and abs(shift["at_call"] - 47) <= 2
    assert shift["before_ms"] == pytest.approx(17.0, rel=0.05) and shift["after_ms"] == pytest.approx(28.9, rel=0.05)
    assert shift["method"] == levels.METHOD
    assert "moved from 17" in levels.said(shift) and "to 2" in levels.said(shift)


def test_both_sides_moving_alike_is_the_machine_and_by_different_factors_is_a_shift():
    alike = record(stepped(calls(120, 17.0, 3), 60, 1.3), stepped(calls(120, 14.0, 4), 60, 1.3))
    assert levels.level_shift(alike) is None  # the interleaved ratio holds across both levels
    unlike = record(stepped(calls(120, 17.0, 3), 60, 1.76), stepped(calls(120, 14.0, 4), 60, 1.13))
    assert levels.level_shift(unlike)["side"] == "mode"
    twin = {"status": "ok", "latency_ms": calls(120, 14.0, 5), "twin_latency_ms": stepped(calls(120, 14.0, 6), 30, 1.5)}
    assert levels.level_shift(twin)["side"] == "twin"  # eager's A/A noise floor moved: its floor describes neither


def test_the_mode_alone_moving_between_its_two_stretches_is_drift_and_within_one_a_shift():
    """The mode is timed alone before and after its interleaved phase: a level that differs between the two
    stretches is the machine's drift over that phase (the steady-state check weighs it), not a shift."""
    steady = record(calls(120, 17.0, 7), calls(120, 14.0, 8))
    apart = {**steady, "alone_latency_ms": calls(20, 26.0, 9) + calls(20, 14.0, 10), "alone_calls": [20, 20]}
    assert levels.level_shift(apart) is None
    as_one = {key: value for key, value in apart.items() if key != "alone_calls"}  # a record from before the split
    assert levels.level_shift(as_one)["side"] == "alone"
    within = {**apart, "alone_latency_ms": calls(20, 26.0, 9) + stepped(calls(30, 14.0, 10), 12, 1.8)}
    within["alone_calls"] = [20, 30]
    shift = levels.level_shift(within)
    assert shift["side"] == "alone" and 20 + 10 <= shift["at_call"] <= 20 + 14 and shift["of_calls"] == 50


def test_a_short_or_flat_series_is_left_alone():
    assert levels.strongest_change([10.0] * 100) is None
    assert levels.strongest_change(calls(10, 5.0, 0)) is None
    assert levels.level_shift({"status": "ok", "latency_ms": calls(12, 5.0, 0)}) is None


def test_a_result_rests_on_the_processes_without_a_shift_and_says_how_many_were_set_aside(tmp_path):
    out = tmp_path / "1.json"
    out.write_text(json.dumps({"status": "ok"}))
    aside = layout.set_aside_path(out, 1)
    aside.write_text(json.dumps(record(stepped(calls(120, 17.0, 7), 50, 1.7), calls(120, 14.0, 8))))
    assert layout.set_aside_records(out) == [aside]
    fields = summaries.level_fields([out], [record(calls(120, 17.0, 9), calls(120, 14.0, 10))])
    (set_aside,) = fields["set_aside"]
    assert set_aside["process"] == 1 and set_aside["side"] == "mode" and set_aside["record"] == aside.name
    assert fields["level_shift"] is None
    kept = summaries.level_fields([out], [record(stepped(calls(120, 17.0, 11), 60, 1.7), calls(120, 14.0, 12))])
    assert kept["level_shift"]["process"] == 1 and kept["level_shift"]["side"] == "mode"


def test_a_speedup_resting_on_a_shifted_process_is_unclear_with_the_shift_in_words(tmp_path):
    runs = tables.runs_table(synthetic_results(tmp_path))
    row = runs.index[(runs["mode"] != "eager") & (runs["status"] == "ok")][0]
    runs.loc[row, ["level_shift", "level_shift_side"]] = [
        "the mode's calls moved from 17.00 to 30.00 ms at call 48",
        "mode",
    ]
    table = speedup_tables.speedups(runs)
    shifted = table[table["level_shift"].notna()]
    assert list(shifted["against_noise"]) == ["unclear"]
    assert (table[table["level_shift"].isna()]["against_noise"] != "unclear").any()
    # The mode timed alone feeds the steady-state check only: a shift there leaves the speedup's verdict standing.
    before = speedup_tables.speedups(tables.runs_table(synthetic_results(tmp_path)))["against_noise"]
    runs.loc[row, ["level_shift", "level_shift_side"]] = [
        "the mode's calls timed alone moved from 9 to 7.9 ms",
        "alone",
    ]
    assert list(speedup_tables.speedups(runs)["against_noise"]) == list(before)
    assert not levels.moves_speedup({"side": "alone"}) and levels.moves_speedup({"side": "eager"})


@pytest.mark.slow
def test_a_process_whose_level_moved_is_set_aside_and_measured_again(tmp_path, monkeypatch):
    """A 3x step injected into the mode's calls of the first measuring process, as a machine that changed state
    would leave it (larger than eager's own moves beside the other tests): the job sets that record aside, measures
    a fresh process, and the result rests on it."""
    raw = tiny_config({"resnet": tiny_config()["models"]["resnet"]})
    raw["measure"].update(iterations=60, interleave_block=6, min_blocks=10, max_extra_processes=2)  # levels to find
    exp = configuration.experiment(configuration.validate(raw), "resnet", "compile-default", "cpu")
    real, attempts, unstepped = supervise.supervised, [], []

    def step_in_first(request, *args, **kwargs):
        code = real(request, *args, **kwargs)
        attempts.append(code)
        written = json.loads(open(request.out).read())
        if len(attempts) == 1 and written["status"] == "ok":
            series = written["latency_ms"]
            third = len(series) // 3
            unstepped.append(float(np.median(series[third:]) / np.median(series[:third])))  # the machine's own move
            written["latency_ms"] = stepped(series, third, 3.0)
            written["samples_sha256"] = files.samples_digest(written)  # as a worker that saw the step writes it
            files.sealed(written)
            open(request.out, "w").write(json.dumps(written))
        return code

    monkeypatch.setattr(jobs, "supervised", step_in_first)
    out = tmp_path / "processes" / "1.json"
    out.parent.mkdir()
    result_path = tmp_path / "result.json"
    assert jobs.process_job(exp, out, 1, tmp_path / "caches")["status"] == "ok"
    set_aside = layout.set_aside_records(out)
    assert len(attempts) >= 2 and len(set_aside) == len(attempts) - 1  # this machine may move a level again
    assert set_aside[0].name == "1.set-aside-1.json"
    kept, first_record = json.loads(out.read_text()), json.loads(set_aside[0].read_text())
    assert kept["first_call_from"] == set_aside[0].name  # its first call read the caches the first process left
    assert kept["compile_s"] == first_record["compile_s"] and kept["preparation"] == first_record["preparation"]
    result = summaries.result_job(exp, [out], result_path)
    first = result["set_aside"][0]
    assert result["status"] == "ok" and first["side"] == "mode"
    # the step injected, on top of what the machine did in the same calls (this VM's level moves by itself)
    assert first["after_ms"] / first["before_ms"] > 1.3 * unstepped[0]
    row = tables.runs_table([result_path])
    assert int(row["set_aside"].iloc[0]) == len(set_aside)
    assert (result["level_shift"] is None) == bool(row["level_shift"].isna().all())

    # With no process to spare, the step stays in the result: its verdict is unclear and it says why.
    no_spare = exp.replace(measure=exp.measure.replace(max_extra_processes=0))
    attempts.clear()
    assert jobs.process_job(no_spare, out, 1, tmp_path / "caches")["status"] == "ok"
    assert len(attempts) == 1 and layout.set_aside_records(out) == []  # a stale set-aside record is cleared
    result = summaries.result_job(no_spare, [out], result_path)
    assert result["level_shift"]["side"] == "mode" and result["set_aside"] == []
    runs = tables.runs_table([result_path])
    assert runs["level_shift"].iloc[0].startswith("the mode's calls moved from")


def test_max_extra_processes_bounds_the_measuring_again_of_the_whole_experiment(tmp_path, monkeypatch):
    """A machine whose level moves in every process: process 2 measures again only what process 1 left of the
    experiment's `max_extra_processes`, and the last record stands (shifted, its verdict unclear)."""
    raw = tiny_config({"resnet": tiny_config()["models"]["resnet"]})
    raw["measure"].update(max_extra_processes=2, processes=2)
    exp = configuration.experiment(configuration.validate(raw), "resnet", "compile-default", "cpu")
    shift = {"side": "mode", "before_ms": 9.0, "after_ms": 7.9, "at_call": 30}
    monkeypatch.setattr(jobs.levels, "level_shift", lambda record: shift)
    monkeypatch.setattr(jobs.levels, "moves_speedup", lambda found: True)
    out = tmp_path / "2.json"
    (tmp_path / "1.set-aside-1.json").write_text("{}")  # process 1 was measured again once already
    measured = []

    def measure_once(limit_s, again=False):
        measured.append(again)
        out.write_text(json.dumps({"status": "ok"}))
        return 0

    measure_once(100)
    jobs._measured_again_while_shifted(exp, out, 2, 0, time.monotonic() + 100, measure_once)
    assert measured == [False, True]  # one more, not two: the experiment's bound is 2 in all
    assert [p.name for p in layout.set_aside_records(out)] == ["2.set-aside-1.json"]


def test_a_step_in_five_thousand_calls_of_a_fast_model_is_found_where_it_is():
    """A fast model's eager side can hold thousands of calls: the change is looked for at every tenth or so of
    them (`levels.MAX_CANDIDATES` places), and found within that step of where it is."""
    rng = np.random.default_rng(0)
    calls = np.concatenate([rng.normal(1.5, 0.02, 1430), rng.normal(1.8, 0.02, 3830)])
    change = levels.strongest_change(list(calls))
    assert change is not None and abs(change["at_call"] - 1430) <= len(calls) // levels.MAX_CANDIDATES
    assert change["before_ms"] == pytest.approx(1.5, rel=0.02) and change["after_ms"] == pytest.approx(1.8, rel=0.02)
