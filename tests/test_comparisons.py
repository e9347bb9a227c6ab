"""Comparisons: ratios with intervals (one process or several), and the one verdict rule, within a run and
between two runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import CPU, TINY_MODELS, compilebench, tiny_config, write_config
from synthetic import resealed, scaled_latencies, synthetic_results, synthetic_starts

from compilebench import cli
from compilebench.analysis import comparisons, stats, summaries
from compilebench.analysis.stats import Timed, paired
from compilebench.configuration import config as configuration
from compilebench.core import thresholds
from compilebench.core.files import samples_digest, sealed, write_json
from compilebench.core.records import result_header
from compilebench.parent import jobs


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (1.10, 1.20, "faster"),
        (0.80, 0.90, "slower"),
        (0.97, 1.04, "same"),
        (0.90, 1.02, "unclear"),
        (1.02, 1.2, "unclear"),
    ],
)
def test_a_verdict_is_what_the_interval_supports_against_the_threshold(low, high, expected):
    assert stats.verdict(low, high, 0.05) == expected


def ratio(eager, mode, block=(1, 1), **resampling) -> stats.Ratio:
    """One process's speedup: eager's samples over the mode's, interleaved in blocks of `block` calls."""
    return paired([(Timed(np.asarray(eager), block[0]), Timed(np.asarray(mode), block[1]))], **resampling)


def test_speedup_is_ratio_of_medians_with_interval():
    rng = np.random.default_rng(3)
    eager = rng.normal(20, 1, size=100)
    mode = rng.normal(10, 0.5, size=100)
    s = ratio(eager, mode, resamples=1000)
    assert s.value == pytest.approx(np.median(eager) / np.median(mode))
    assert s.ci95[0] < s.value < s.ci95[1]
    assert 1.8 < s.ci95[0] and s.ci95[1] < 2.2


def test_paired_block_bootstrap_resamples_whole_blocks_of_both_series_together():
    rng = np.random.default_rng(4)
    # Slow stretches: each block of 5 shares a level, the same for both series (they ran side by side).
    levels = np.repeat(rng.uniform(1.0, 1.5, size=12), 5)
    eager, mode = levels * rng.normal(20, 0.2, 60), levels * rng.normal(10, 0.1, 60)
    s = ratio(eager, mode, (5, 5), resamples=3000, seed=7)
    assert s.interval == "paired block bootstrap, 12 blocks of 5"
    picks = np.random.default_rng(7).integers(0, 12, size=(3000, 12))
    ratios = [np.median(eager.reshape(12, 5)[p]) / np.median(mode.reshape(12, 5)[p]) for p in picks]
    assert s.ci95 == pytest.approx(list(np.percentile(ratios, [2.5, 97.5])), rel=1e-3)
    assert s.ci95[0] < 2.0 < s.ci95[1]
    # Too few blocks to resample: single samples instead, and the record says so.
    assert ratio(eager[:5], mode[:5], (5, 5)).interval == "bootstrap of single samples"


def test_blocks_of_two_lengths_are_resampled_together():
    rng = np.random.default_rng(1)
    eager, mode = rng.normal(10, 0.1, 40), rng.normal(5, 0.05, 80)  # ten blocks: 4 eager calls, 8 mode calls each
    result = ratio(eager, mode, (4, 8))
    assert result.interval == "paired block bootstrap, 10 blocks of 4 and 8"
    assert result.ci95[0] < result.value < result.ci95[1]


def test_the_geometric_mean_interval_holds_the_ratio_and_narrows_with_more_samples():
    rng = np.random.default_rng(0)

    def ratios(n):
        return [ratio(rng.normal(10, 0.5, n), rng.normal(8, 0.4, n), resamples=500, seed=i) for i in range(3)]

    few, many = (stats.geometric_mean(ratios(n)) for n in (10, 400))
    for mean in (few, many):
        assert mean.ci95[0] < mean.value < mean.ci95[1]
    assert many.ci95[0] < 1.25 < many.ci95[1]
    assert many.ci95[1] - many.ci95[0] < few.ci95[1] - few.ci95[0]


def scaled_copy(source, dest, factor: float):
    shutil.copytree(source, dest)
    for path in dest.rglob("*.json"):
        path.write_text(json.dumps(scaled_latencies(json.loads(path.read_text()), factor)))
    return dest


def test_compare_finds_a_run_with_30_percent_longer_latencies_slower_and_fails_on_it(tmp_path):
    synthetic_results(tmp_path / "base" / "results")
    slower = scaled_copy(tmp_path / "base", tmp_path / "new", 1.3)
    out = tmp_path / "comparison.csv"
    done = compilebench("compare", tmp_path / "base", slower, "--fail-on-regression", "--out", out)
    assert done.returncode == 1, done.stderr
    assert "cpu/resnet/compile-default:" in done.stdout and "REGRESSION (slower)" in done.stdout
    table = pd.read_csv(out)
    timed = table[(table["scope"] == "experiment") & table["ratio"].notna()]
    assert (timed["verdict"] == "slower").all() and np.allclose(timed["ratio"], 1 / 1.3)
    assert (timed["ratio_ci95_low"] <= timed["ratio"]).all() and (timed["ratio"] <= timed["ratio_ci95_high"]).all()
    geomeans = table[table["scope"] == "geomean"]
    assert set(geomeans["verdict"]) == {"slower"} and "geometric mean, compile-default on cpu" in done.stdout
    assert compilebench("compare", tmp_path / "base", slower).returncode == 0  # without the flag, only a report


def test_compare_of_a_run_with_itself_is_the_same_and_passes(tmp_path):
    synthetic_results(tmp_path / "run" / "results")
    done = compilebench("compare", tmp_path / "run", tmp_path / "run" / "results", "--fail-on-regression")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no experiment regressed" in done.stdout and "slower" not in done.stdout and "faster" not in done.stdout
    lines = [line for line in done.stdout.splitlines() if " ms → " in line]
    assert lines and all(": same; could detect ≥ " in line for line in lines)
    assert "warning: BASE measured in one process per experiment" in done.stdout


def test_compare_calls_a_status_or_correctness_change_a_regression_and_lists_one_sided_experiments(tmp_path):
    synthetic_results(tmp_path / "base" / "results")
    new = scaled_copy(tmp_path / "base", tmp_path / "new", 1.0)
    runs = new / "results" / "runs" / "cpu"
    failed = json.loads((runs / "resnet" / "jit.json").read_text())
    failed.update(status="failed", error={"message": "boom", "traceback": ""})
    (runs / "resnet" / "jit.json").write_text(json.dumps(failed))
    wrong = json.loads((runs / "resnet" / "eager.json").read_text())
    wrong["correctness"]["passed"] = False
    (runs / "resnet" / "eager.json").write_text(json.dumps(wrong))
    (runs / "llama" / "eager.json").unlink()
    done = compilebench("compare", tmp_path / "base", new, "--fail-on-regression")
    assert done.returncode == 1
    assert "cpu/resnet/jit: ok → failed, not timed on both sides  REGRESSION (status ok → failed)" in done.stdout
    assert "REGRESSION (correctness pass → fail)" in done.stdout
    assert "only in BASE: cpu/llama/eager" in done.stdout


def test_compare_of_runs_whose_only_shared_experiment_failed_prints_the_regression_and_exits_1(tmp_path):
    """Nothing is timed on both sides, so there is no interval and no geometric mean: the gate still reports the
    status change, by design rather than by a crash, whatever the flags."""
    from compilebench.core.records import REQUIRED_KEYS

    synthetic_results(tmp_path / "base" / "results")
    kept = tmp_path / "base" / "results" / "runs" / "cpu" / "resnet" / "eager.json"
    for path in (tmp_path / "base").rglob("*.json"):
        if path != kept:
            path.unlink()
    new = scaled_copy(tmp_path / "base", tmp_path / "new", 1.0)
    ok = json.loads(kept.read_text())
    failed = {key: ok[key] for key in REQUIRED_KEYS} | {"status": "failed", "error": {"message": "boom"}}
    (new / "results" / "runs" / "cpu" / "resnet" / "eager.json").write_text(json.dumps(failed))
    for flags in ((), ("--fail-on-regression",)):
        done = compilebench("compare", tmp_path / "base", new, *flags)
        assert "Traceback" not in done.stderr, done.stderr
        assert "cpu/resnet/eager: ok → failed, not timed on both sides  REGRESSION (status ok → failed)" in done.stdout
        assert "1 experiment regressed" in done.stdout
        assert done.returncode == (1 if flags else 0)


def test_compare_refuses_a_folder_without_results_and_runs_of_two_schemas(tmp_path):
    synthetic_results(tmp_path / "base" / "results")
    (tmp_path / "empty").mkdir()
    done = compilebench("compare", tmp_path / "base", tmp_path / "empty")
    assert done.returncode == 2 and "holds no results" in done.stderr and str(tmp_path / "empty") in done.stderr
    other = scaled_copy(tmp_path / "base", tmp_path / "other", 1.0)
    for path in other.rglob("*.json"):
        path.write_text(path.read_text().replace('"schema": 2', '"schema": 1'))
    done = compilebench("compare", tmp_path / "base", other)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is of schema 1: this compilebench reads results of schema 2" in done.stderr and "rerun" in done.stderr


def test_only_the_experiments_that_regressed_are_counted_and_fail_the_gate(tmp_path):
    synthetic_results(tmp_path / "base" / "results")
    new = scaled_copy(tmp_path / "base", tmp_path / "new", 1.0)
    one = new / "results" / "runs" / "cpu" / "resnet" / "compile-default.json"
    one.write_text(json.dumps(scaled_latencies(json.loads(one.read_text()), 1.3)))
    done = compilebench("compare", tmp_path / "base", new, "--fail-on-regression")
    assert done.returncode == 1
    flagged = [line for line in done.stdout.splitlines() if "REGRESSION" in line]
    assert len(flagged) == 1 and flagged[0].startswith("cpu/resnet/compile-default:")
    assert "1 experiment regressed" in done.stdout
    clean = scaled_copy(tmp_path / "base", tmp_path / "clean", 1.0)
    assert compilebench("compare", tmp_path / "base", clean, "--fail-on-regression").returncode == 0


@pytest.mark.parametrize("bad", [float("nan"), 0.0, -4.0, "fast", None])
def test_compare_refuses_latencies_that_are_not_positive_numbers_naming_the_file(tmp_path, capsys, bad):
    synthetic_results(tmp_path / "base" / "results")
    new = scaled_copy(tmp_path / "base", tmp_path / "new", 1.0)
    doctored = new / "results" / "runs" / "cpu" / "resnet" / "compile-default.json"
    result = json.loads(doctored.read_text())
    result["latency_ms"][3] = bad
    doctored.write_text(json.dumps(result))
    assert cli.main(["compare", str(tmp_path / "base"), str(new), "--fail-on-regression"]) == 2
    error = capsys.readouterr().err
    assert str(doctored) in error and "Traceback" not in error
    assert "expected finite numbers of milliseconds above 0" in error or "cannot be read" in error


def shifted_processes(rng, processes: int, shift_sd: float = 0.05) -> list[tuple[Timed, Timed]]:
    """Processes of one experiment whose true speedup is 2.0, each landing in its own state: the mode's level moves
    by a lognormal shift per process, far beyond the noise within a process."""
    pairs = []
    for _ in range(processes):
        shift = np.exp(rng.normal(0, shift_sd))
        eager, mode = rng.normal(10, 0.1, 40), rng.normal(5 * shift, 0.05, 40)
        pairs.append((Timed(eager, 4), Timed(mode, 4)))
    return pairs


def test_the_two_level_interval_covers_a_shift_between_processes_that_the_pooled_one_misses():
    rng = np.random.default_rng(5)
    covered = {"two-level": 0, "pooled": 0}
    trials = 60
    for trial in range(trials):
        pairs = shifted_processes(rng, 8)
        two_level = paired(pairs, resamples=500, seed=trial)
        pooled = ratio(
            np.concatenate([a.samples for a, _ in pairs]), np.concatenate([b.samples for _, b in pairs]), (4, 4),
            resamples=500, seed=trial,
        )  # fmt: skip
        assert two_level.interval == "two-level" and two_level.processes == (8, 8)
        covered["two-level"] += two_level.ci95[0] <= 2.0 <= two_level.ci95[1]
        covered["pooled"] += pooled.ci95[0] <= 2.0 <= pooled.ci95[1]
    assert covered["two-level"] / trials >= 0.8, covered
    assert covered["pooled"] / trials <= 0.4, covered  # samples of one process taken as independent: too narrow


@pytest.mark.parametrize("processes", [2, 3])
def test_two_or_three_processes_a_side_give_intervals_that_cover_as_often_as_they_claim(processes):
    """Resampling two processes spans only the range between them (it covered the truth in half the trials), and
    an A/A between two such runs called one faster; the interval must hold its 95% with few processes too."""
    rng, trials = np.random.default_rng(11), 150
    covered = {"paired": 0, "unpaired": 0}

    def side():
        return [Timed(rng.normal(5 * np.exp(rng.normal(0, 0.05)), 0.05, 40), 4) for _ in range(processes)]

    for trial in range(trials):
        speedup = paired(shifted_processes(rng, processes), resamples=400, seed=trial)
        covered["paired"] += speedup.ci95[0] <= 2.0 <= speedup.ci95[1]
        same = stats.unpaired(side(), side(), resamples=400, seed=trial)
        covered["unpaired"] += same.ci95[0] <= 1.0 <= same.ci95[1]
        assert same.interval == "two-level" and same.processes == (processes, processes)
    assert min(covered.values()) / trials >= 0.9, covered
    assert max(covered.values()) / trials <= 0.99, covered  # not so wide that it could never tell


def test_one_process_is_its_own_block_bootstrap():
    pairs = shifted_processes(np.random.default_rng(6), 1)
    alone, (a, b) = paired(pairs, resamples=500, seed=3), pairs[0]
    assert alone.interval == "paired block bootstrap, 10 blocks of 4" and alone.processes == (1, 1)
    assert alone.ci95 == ratio(a.samples, b.samples, (4, 4), resamples=500, seed=3).ci95


@pytest.mark.parametrize(
    ("low", "high", "floor", "expected"),
    [
        (1.06, 1.09, None, "faster"),
        (1.06, 1.09, (0.9, 1.1), "same"),  # a floor half 0.1 wide widens the band of `same` to 1 ± 0.1
        (1.06, 1.12, (0.9, 1.1), "unclear"),
        (0.80, 0.85, (0.9, 1.1), "slower"),
        (1.06, 1.09, (0.99, 1.01), "faster"),  # a floor narrower than the threshold leaves the band at 1 ± 0.05
    ],
)
def test_the_noise_floor_widens_the_band_of_same_to_its_half_width(low, high, floor, expected):
    assert stats.verdict(low, high, 0.05, floor) == expected


def test_what_an_interval_could_have_detected_is_its_log_half_width_plus_the_threshold():
    assert stats.detectable_change(1 / 1.07, 1.07, 0.05) == pytest.approx(100 * (np.log(1.07) + 0.05))
    assert comparisons.said("slower", True) == "unclear (unstable)" and comparisons.said("same", False) == "same"


def process_record(first_call_s: float, level: float, rng) -> dict:
    """One measuring process's record as the worker writes it (raw samples, no summaries), around a speedup of 2."""
    eager, mode = list(rng.normal(10 * level, 0.1, 40)), list(rng.normal(5 * level, 0.05, 40))
    alone = list(rng.normal(5 * level, 0.05, 20))
    return {
        "status": "ok", "hardware": "cpu", "model": "m", "mode": "compile-default", "experiment_sha256": "0" * 64,
        "batch_size": 1, "measure": {"bootstrap_resamples": 300}, "latency_ms": mode, "eager_latency_ms": eager,
        "alone_latency_ms": alone, "interleave": {"eager_block": 4, "mode_block": 4},
        "preparation": {"first_call_s": first_call_s}, "compile_s": first_call_s, "compile_phases": None,
        "correctness": {"passed": True}, "machine": {"busy": False, "others_share": 0.01},
        "started_at": "2026-12-03T10:00:00.000+00:00", "finished_at": "2026-12-03T10:01:00.000+00:00",
    }  # fmt: skip


def test_an_experiment_in_three_processes_keeps_each_and_pools_them_with_two_level_intervals():
    rng = np.random.default_rng(7)
    raw = tiny_config({"resnet": TINY_MODELS["resnet"]}, modes=["compile-default"])
    raw["measure"]["processes"] = 3
    exp = configuration.experiment(configuration.validate(raw), "resnet", "compile-default", "cpu")
    records = [process_record(30.0, 1.0, rng), process_record(2.0, 1.1, rng), process_record(3.0, 0.9, rng)]
    combined = summaries.combine(exp, records, [])
    assert [p["first_call_s"] for p in combined["processes"]] == [30.0, 2.0, 3.0]
    assert combined["compile_s"] == 30.0  # the cold start is the first process's
    assert combined["compile_warm_samples_s"] == [2.0, 3.0] and combined["compile_warm_s"] == 2.5
    assert len(combined["latency_ms"]) == 120 and combined["stats"]["n"] == 120
    assert combined["speedup"]["interval"] == "two-level" and combined["speedup"]["processes"] == 3
    assert combined["speedup"]["ci95"][0] < 2.0 < combined["speedup"]["ci95"][1]
    assert combined["warm_starts"]["warm"]["first_call_s"] == 2.0
    assert [len(p["latency_ms"]) for p in combined["processes"]] == [40, 40, 40]
    assert stats.speedup(combined).value == pytest.approx(combined["speedup"]["value"])


def test_processes_measured_with_another_torch_fail_the_experiment_naming_both_values(tmp_path):
    """As a SLURM job that landed on a node of another kind: the records are refused, not pooled, and the result is
    a failed experiment rather than a stopped pipeline."""
    rng = np.random.default_rng(3)
    raw = tiny_config({"resnet": TINY_MODELS["resnet"]}, modes=["compile-default"])
    raw["measure"]["processes"] = 2
    exp = configuration.experiment(configuration.validate(raw), "resnet", "compile-default", "cpu")
    paths = []
    for k, torch_version in enumerate(("2.14.1", "2.13.0+cpu"), 1):
        record = {**process_record(1.0, 1.0, rng), **result_header(exp), "started_at": f"2026-12-03T10:0{k}:00+00:00"}
        record["environment"] = {"ran_on": {"torch": torch_version, "device_name": "CPU", "threads": 2}}
        record["samples_sha256"] = samples_digest(record)  # as the worker writes it
        sealed(record)
        paths.append(tmp_path / f"{k}.json")
        write_json(paths[-1], record)
    result = summaries.result_job(exp, paths, tmp_path / "result.json")
    assert result["status"] == "failed" and json.loads((tmp_path / "result.json").read_text()) == result
    message = result["error"]["message"]
    assert "environment.ran_on.torch '2.14.1'" in message and "'2.13.0+cpu'" in message
    assert "results/processes/cpu/resnet/compile-default/" in message
    same = summaries.combine(exp, [json.loads(p.read_text()) for p in paths[:1]] * 2, [])
    assert same["status"] == "ok" and len(same["processes"]) == 2  # alike, they pool


@pytest.mark.slow
def test_a_run_beside_a_cpu_hog_per_core_is_unstable_and_compare_does_not_call_it_a_regression(finished, tmp_path):
    project, config, _ = finished
    timed = {**config, "measure": {**config["measure"], "min_time_s": 1.0, "interleave_block": 5}}
    config_path = tmp_path / "busy.yaml"
    write_config(config_path, timed)
    out = tmp_path / "busy" / "results" / "runs" / "cpu" / "resnet" / "eager.json"
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        run = compilebench(
            "run", "--config", config_path, "--model", "resnet", "--mode", "eager", "--out", out, cwd=project
        )
    finally:
        for hog in hogs:
            hog.kill()
    assert run.returncode == 0, run.stderr[-3000:]
    machine = json.loads(out.read_text())["processes"][0]["machine"]
    assert machine["busy"] is True and machine["others_share"] > thresholds.BUSY_SHARE, machine
    # The busy run holds one experiment: as BASE, since a NEW that lost the others would fail the gate for that.
    done = compilebench("compare", out.parents[3], project, "--fail-on-regression")
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("cpu/resnet/eager:"))
    assert "unclear (unstable)" in line and "REGRESSION" not in line
    assert "1 measured unstably (unclear, not a regression)" in done.stdout
    assert compilebench("compare", project, out.parents[3], "--fail-on-unstable").returncode == 1


@pytest.mark.slow
def test_two_identical_hardware_entries_are_never_told_apart(tmp_path):
    """A within-run A/A: the same CPU under two names, each experiment in two processes, compared as the workflow's
    comparison table compares them; no verdict may call one faster or slower than the other."""
    raw = tiny_config({"resnet": TINY_MODELS["resnet"]}, modes=["eager"])
    raw["hardware"] = {"cpu": dict(CPU), "cpu-again": dict(CPU)}
    raw["measure"].update(processes=2, interleave_block=4, min_blocks=4, min_time_s=0.2)
    config = configuration.validate(raw)
    reference = tmp_path / "reference.pt"
    assert jobs.reference_job(configuration.reference_experiment(config, "resnet", "cpu"), reference) is None
    experiments = {h: configuration.experiment(config, "resnet", "eager", h) for h in config["hardware"]}
    folders = {h: tmp_path / h for h in experiments}
    for k in (1, 2):  # in rounds, as the workflow runs them: a slow spell cannot fall on one entry's processes alone
        for hardware, exp in experiments.items():
            record, first = folders[hardware] / f"{k}.json", folders[hardware] / "1.json"
            jobs.process_job(exp, record, k, folders[hardware] / "caches", reference=reference, first=first)
    results = [
        summaries.result_job(exp, [folders[h] / "1.json", folders[h] / "2.json"], tmp_path / f"{h}.json")
        for h, exp in experiments.items()
    ]
    assert all(r["status"] == "ok" and len(r["processes"]) == 2 for r in results)
    assert results[0]["noise"]["interval"] == "two-level" and results[0]["noise"]["processes"] == 2
    comparison = comparisons.within_run(results, "cpu", 0.05)
    assert set(comparison["hardware"]) == {"cpu-again"} and len(comparison) == 2  # the experiment, its geometric mean
    assert set(comparison["verdict"]) <= {"same", "unclear"}, comparison[["model", "mode", "ratio", "verdict"]]
    assert (comparison["processes"] == 2).all() and (comparison["interval"] == "two-level").all()


def test_the_gate_fails_a_run_that_lost_an_experiment_and_refuses_runs_that_share_none(tmp_path):
    synthetic_results(tmp_path / "base" / "results")
    new = scaled_copy(tmp_path / "base", tmp_path / "new", 1.0)
    (new / "results" / "runs" / "cpu" / "resnet" / "compile-default.json").unlink()
    done = compilebench("compare", tmp_path / "base", new, "--fail-on-regression")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "cpu/resnet/compile-default: ok → missing, not timed on both sides  REGRESSION (missing from NEW)" in (
        done.stdout
    )
    assert "1 experiment regressed" in done.stdout
    other = tmp_path / "other" / "results" / "runs" / "cpu-other"
    shutil.copytree(tmp_path / "base" / "results" / "runs" / "cpu", other)
    for path in other.rglob("*.json"):
        path.write_text(json.dumps(resealed(json.loads(path.read_text()), hardware="cpu-other")))
    shutil.rmtree(new / "results" / "runs")
    shutil.copytree(tmp_path / "other" / "results" / "runs", new / "results" / "runs")
    done = compilebench("compare", tmp_path / "base", new, "--fail-on-regression")
    assert done.returncode == 2 and "share no experiment (hardware/model/mode)" in done.stderr, done.stderr
    holds = "BASE holds 8 on hardware `cpu`, 8 on hardware `cpu-fast`; NEW holds 8 on hardware `cpu-other`."
    assert holds in done.stderr
    assert "no experiment regressed" not in done.stdout


def test_a_pair_whose_experiments_differ_is_not_comparable_and_the_environments_head_the_comparison(tmp_path):
    synthetic_results(tmp_path / "base" / "results")
    new = scaled_copy(tmp_path / "base", tmp_path / "new", 1.0)
    runs = new / "results" / "runs" / "cpu" / "resnet"
    bigger = json.loads((runs / "jit.json").read_text())
    (runs / "jit.json").write_text(json.dumps(resealed(bigger, **{"spec.batch_size": 64})))
    longer = resealed(json.loads((runs / "eager.json").read_text()), **{"measure.iterations": 300})
    (runs / "eager.json").write_text(json.dumps(longer))
    quantized = json.loads((runs / "compile-default.json").read_text())  # a key the other side lacks, not a match
    quantized = resealed(
        quantized,
        **{"measure.iterations": 300, "mode_settings.quantize": {"method": "int8_weight_only", "min_cosine": 0.98}},
    )
    (runs / "compile-default.json").write_text(json.dumps(quantized))
    unrecorded = json.loads((runs / "compile-max-autotune.json").read_text())  # as a result of an earlier version
    unrecorded = resealed(unrecorded, **{"measure.iterations": 300})
    del unrecorded["spec"], unrecorded["experiment"]
    (runs / "compile-max-autotune.json").write_text(json.dumps(unrecorded))
    for path in new.rglob("*.json"):
        result = json.loads(path.read_text())
        path.write_text(json.dumps({**result, "environment": {**result.get("environment", {}), "torch": "2.99"}}))
    out = tmp_path / "comparison.csv"
    done = compilebench("compare", tmp_path / "base", new, "--fail-on-regression", "--out", out)
    assert done.returncode == 0, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("the runs differ in their environment: torch ") and first.endswith("→ 2.99"), first
    assert "cpu/resnet/jit: not comparable, the experiments differ: batch_size 1 → 64" in done.stdout
    assert "; measured with other settings: measure.iterations 30 → 300" in done.stdout  # compared all the same
    assert "cpu/resnet/compile-default: not comparable, the experiments differ: mode_settings.quantize.method " in (
        done.stdout
    )
    assert "cpu/resnet/compile-max-autotune: not comparable, the experiments differ: spec (not recorded by NEW)" in (
        done.stdout
    )
    table = pd.read_csv(out)
    jit = table[(table["model"] == "resnet") & (table["mode"] == "jit") & (table["hardware"] == "cpu")].iloc[0]
    assert not jit["comparable"] and pd.isna(jit["ratio"]) and pd.isna(jit["regression"])


def test_compare_gates_compile_time_and_graph_breaks_and_a_run_against_itself_passes(tmp_path):
    synthetic_results(tmp_path / "base" / "results")
    one = Path("results") / "runs" / "cpu" / "resnet" / "compile-default.json"
    base = json.loads((tmp_path / "base" / one).read_text())
    base["compile_warm_samples_s"] = [2.0, 2.1, 1.9, 2.05]  # four warm starts, as four processes give
    (tmp_path / "base" / one).write_text(json.dumps(base))
    new = scaled_copy(tmp_path / "base", tmp_path / "new", 1.0)
    doctored = {**base, "compile_s": 1.5 * base["compile_s"]}
    doctored["processes"] = [{**base["processes"][0], "compile_s": doctored["compile_s"]}]
    doctored["compile_warm_samples_s"] = [1.5 * x for x in base["compile_warm_samples_s"]]
    doctored["compiler"] = {**base["compiler"], "graph_breaks": 1, "graph_break_reasons": {"data-dependent branch": 1}}
    (new / one).write_text(json.dumps(doctored))
    out = tmp_path / "comparison.csv"
    done = compilebench("compare", tmp_path / "base", new, "--fail-on-regression", "--out", out)
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("cpu/resnet/compile-default:"))
    assert "REGRESSION (warm compile slower; graph breaks 0 → 1)" in line
    cold = f"  cold compile {base['compile_s']:.3g} s → {doctored['compile_s']:.3g} s, ratio 0.667: unclear (1 samples)"
    assert cold in done.stdout  # one cold start a side: no verdict
    assert "  structure changed: graph breaks 0 → 1 (data-dependent branch)" in done.stdout
    row = pd.read_csv(out).set_index(["hardware", "model", "mode"]).loc[("cpu", "resnet", "compile-default")]
    assert row["compile_warm_verdict"] == "slower" and row["compile_warm_ratio_ci95_high"] < 0.85
    same = compilebench("compare", tmp_path / "base", tmp_path / "base", "--fail-on-regression", "--out", out)
    assert same.returncode == 0, same.stdout
    table = pd.read_csv(out)
    verdicts = set(table["compile_warm_verdict"].dropna()) | set(table["compile_cold_verdict"].dropna())
    assert verdicts and all(v == "same" or v.startswith("unclear") for v in verdicts)
    assert table["structure_change"].isna().all()


def test_compare_gates_cold_starts_from_process_start_where_both_runs_timed_them(tmp_path):
    synthetic_results(tmp_path / "base" / "results")
    new = scaled_copy(tmp_path / "base", tmp_path / "new", 1.0)
    experiment = json.loads(
        (tmp_path / "base" / "results" / "runs" / "cpu" / "resnet" / "compile-default.json").read_text()
    )
    for folder, scale in ((tmp_path / "base", 1.0), (new, 1.5)):
        record = synthetic_starts({"eager": [2.0, 2.1, 2.2], "cold": [scale * x for x in (30.0, 31.0, 32.0)]})
        record.update(hardware="cpu", model="resnet", experiment_sha256=experiment["experiment_sha256"])
        (folder / "results" / "starts" / "cpu" / "resnet").mkdir(parents=True)
        (folder / "results" / "starts" / "cpu" / "resnet" / "compile-default.json").write_text(json.dumps(record))
    out = tmp_path / "comparison.csv"
    done = compilebench("compare", tmp_path / "base", new, "--fail-on-regression", "--out", out)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "  cold start to first output 31 s → 46.5 s, ratio 0.667 (95% CI" in done.stdout
    row = pd.read_csv(out).set_index(["hardware", "model", "mode"]).loc[("cpu", "resnet", "compile-default")]
    assert row["compile_cold_verdict"] == "slower" and row["compile_cold_from"] == "process start to first output"


def faulting_record(faults_per_call: list[int], rng) -> dict:
    """A process record whose mode blocks (4 calls) took `faults_per_call` page faults a call, each thousand of
    them a millisecond, eager's blocks none."""
    record = process_record(1.0, 1.0, rng)
    record["latency_ms"] = [5 + f / 1000 + rng.normal(0, 0.05) for f in faults_per_call for _ in range(4)]
    record["page_faults"] = {
        "mode_blocks": [[4 * f, 4] for f in faults_per_call],
        "eager_blocks": [[0, 4]] * len(faults_per_call),
        "mode_alone": [[30 * 3000, 30]],
        "eager_alone": [[2, 20]],
    }
    return record


def test_a_mode_whose_calls_fault_is_flagged_with_what_a_thousand_faults_cost_it():
    rng = np.random.default_rng(5)
    raw = tiny_config({"resnet": TINY_MODELS["resnet"]}, modes=["compile-default"])
    raw["measure"]["processes"] = 2
    exp = configuration.experiment(configuration.validate(raw), "resnet", "compile-default", "cpu")
    records = [faulting_record([1000, 5000] * 5, rng), faulting_record([0, 2000] * 5, rng)]
    faults = summaries.combine(exp, records, [])["page_faults"]
    assert faults["mode_per_call"] == 2000 and faults["eager_per_call"] == 0 and faults["flagged"] is True
    assert faults["mode_alone_per_call"] == 3000 and faults["eager_alone_per_call"] == 0.1
    low, high = faults["ms_per_1000"]["ci95"]
    assert 0.9 < low < 1.0 < high < 1.1 and faults["ms_per_1000"]["slope"] == pytest.approx(1.0, abs=0.05)
    per_process = [p["page_faults"] for p in summaries.combine(exp, records, [])["processes"]]
    assert per_process == [{"mode_per_call": 3000, "eager_per_call": 0}, {"mode_per_call": 1000, "eager_per_call": 0}]
    quiet = summaries.combine(exp, [faulting_record([10, 20] * 5, rng)], [])["page_faults"]
    assert quiet["flagged"] is False and quiet["ms_per_1000"] is None
    assert "page_faults" not in summaries.combine(exp, [process_record(1.0, 1.0, rng)], [])  # measured before


def test_a_backup_copy_beside_a_result_is_ignored_with_a_warning_never_read_as_the_result(tmp_path):
    synthetic_results(tmp_path / "base" / "results")
    slower = scaled_copy(tmp_path / "base", tmp_path / "new", 2.0)
    result = slower / "results" / "runs" / "cpu" / "resnet" / "compile-default.json"
    base = tmp_path / "base" / "results" / "runs" / "cpu" / "resnet" / "compile-default.json"
    backup = result.with_name("compile-default.old.json")  # sorts after the result: read last, it used to win
    shutil.copy(base, backup)
    done = compilebench("compare", tmp_path / "base", slower)
    assert done.returncode == 0, done.stderr
    assert f"{backup} is not a result of this run and is ignored" in done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("cpu/resnet/compile-default:"))
    assert "slower" in line and "compile-default.old" not in done.stdout


def test_compare_out_that_is_a_folder_is_refused_before_anything_is_printed(tmp_path):
    synthetic_results(tmp_path / "run" / "results")
    done = compilebench("compare", tmp_path / "run", tmp_path / "run", "--out", tmp_path)
    assert done.returncode == 2 and f"--out {tmp_path}: expected a CSV file" in done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
