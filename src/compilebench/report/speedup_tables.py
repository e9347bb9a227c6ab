"""Speedups over eager with their verdicts against the noise floor, mode effects, swept shapes and compile depth."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis import comparisons, machine_state, run_folders, stats
from ..analysis.stats import against_noise, detectable_change, missing, unsteady_floor
from ..core import kinds
from ..core.records import CONFIG_SWEEP_KEYS, SWEEP_KEYS
from ..core.thresholds import DEFAULT_THRESHOLD
from .tables import SWEEP_COLUMNS, inference_only, mode_columns
from .verdicts import verdict_in_words


def scaling(runs: pd.DataFrame, results: list[dict] = (), threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """Per swept model, hardware and mode: latency, throughput and speedup at each value of the swept setting, and
    each compiled point's speedup against the line's first point (`change`, with its interval and verdict, from
    the `results` where given).

    `swept` names the first setting whose value varies across the model's points (the x axis); the others
    that vary make up `series` (one line each), such as `image_size=224`.
    """
    rows = []
    swept_runs = runs[runs["sweep_of"].notna() & (runs["status"] == "ok")]
    for (model, hardware), frame in swept_runs.groupby(["sweep_of", "hardware"], sort=False):
        varying = [key for key in SWEEP_KEYS if frame[key].nunique(dropna=True) > 1] or ["batch_size"]
        for run in frame.to_dict("records"):
            rows.append({
                "sweep_of": model, "hardware": hardware, "mode": run["mode"], "point": run["model"],
                "swept": varying[0], "value": run[varying[0]],
                "series": ", ".join(f"{key}={run[key]}" for key in varying[1:]),
                "median_ms": run["median_ms"], "ci95_low_ms": run["ci95_low_ms"], "ci95_high_ms": run["ci95_high_ms"],
                "samples_per_s": run["samples_per_s"], "tokens_per_s": run["tokens_per_s"], "speedup": run["speedup"],
                "speedup_ci95_low": run["speedup_ci95_low"], "speedup_ci95_high": run["speedup_ci95_high"],
                "correct": run["correct"],
            })  # fmt: skip
    columns = ["sweep_of", "hardware", "mode", "point", "swept", "value", "series", "median_ms", "ci95_low_ms",
               "ci95_high_ms", "samples_per_s", "tokens_per_s", "speedup", "speedup_ci95_low", "speedup_ci95_high",
               "correct"]  # fmt: skip
    table = pd.DataFrame(rows, columns=columns)
    table = table.sort_values(["sweep_of", "hardware", "mode", "series", "value"], kind="stable").reset_index(drop=True)
    return _with_changes(table, run_folders.by_experiment(results), threshold)


DEPTH_RUN_COLUMNS = ("speedup", "speedup_ci95_low", "speedup_ci95_high", "graphs", "correct")


DEPTH_COLUMNS = [
    "sweep_of", "hardware", "mode", "point", "num_hidden_layers", "compile_s", "compile_ci95_low", "compile_ci95_high",
    "compile_samples", *DEPTH_RUN_COLUMNS, "slope_s_per_layer", "slope_ci95_low", "slope_ci95_high", "slope_interval",
]  # fmt: skip


def compile_depth(runs: pd.DataFrame, results: list[dict], resamples: int = 2000) -> pd.DataFrame:
    """Per model swept over its depth, hardware and compiling mode: the cold compile at each depth (the median of
    its cold starts, with a bootstrap 95% interval where there are three or more) beside the speedup, and the
    line's trend, seconds of cold compile per layer with its interval (`stats.slope`)."""
    (depth,) = CONFIG_SWEEP_KEYS
    run = run_folders.by_experiment(results)
    compiling = runs["mode_kind"].isin(kinds.names(lambda kind: kind.compiles)) & runs["compile_s"].notna()
    swept = runs[runs["sweep_of"].notna() & (runs["status"] == "ok") & runs[depth].notna() & compiling]
    rows = []
    for (model, hardware, mode), line in swept.groupby(["sweep_of", "hardware", "mode"], sort=False):
        if line[depth].nunique() < 2:
            continue
        line = line.sort_values(depth, kind="stable")
        cold = [comparisons.compile_samples(run[(hardware, point, mode)])["cold"] for point in line["model"]]
        trend = stats.slope(list(line[depth].astype(float)), cold, resamples=resamples)
        for point, samples in zip(line.to_dict("records"), cold):
            low, high = stats.summarize(samples, resamples=resamples)["ci95_ms"] if len(samples) >= 3 else (None, None)
            rows.append({
                "sweep_of": model, "hardware": hardware, "mode": mode, "point": point["model"],
                "num_hidden_layers": int(point[depth]), "compile_s": float(np.median(samples)),
                "compile_ci95_low": low, "compile_ci95_high": high, "compile_samples": len(samples),
                **{key: point[key] for key in DEPTH_RUN_COLUMNS},
                "slope_s_per_layer": trend["slope"], "slope_ci95_low": trend["ci95"][0],
                "slope_ci95_high": trend["ci95"][1], "slope_interval": trend["method"],
            })  # fmt: skip
    return pd.DataFrame(rows, columns=DEPTH_COLUMNS)


CHANGE_COLUMNS = {"ratio": "change", "ratio_ci95_low": "change_ci95_low", "ratio_ci95_high": "change_ci95_high",
                  "verdict": "change_verdict", "detectable_change": "change_detectable"}  # fmt: skip


def _with_changes(table: pd.DataFrame, run: dict, threshold: float) -> pd.DataFrame:
    """Each compiled point after the first: its speedup over its line's first point's, each measured against eager
    in its own job, as a ratio with its interval and verdict (`faster`: the speedup grew)."""
    changes = pd.DataFrame(index=table.index, columns=list(CHANGE_COLUMNS.values()), dtype=object)
    lines = table.groupby(["sweep_of", "hardware", "mode", "series"], sort=False, dropna=False).groups.values()
    for i, index in enumerate(lines):
        line = table.loc[index]
        hardware, mode = line.iloc[0]["hardware"], line.iloc[0]["mode"]
        first = run.get((hardware, line.iloc[0]["point"], mode))
        if not (first and first.get("speedup")):
            continue
        base = stats.speedup(first, seed=2 * i)
        for j, (row, point) in enumerate(zip(index[1:], line["point"].iloc[1:])):
            later = run.get((hardware, point, mode))
            if later and later.get("speedup"):
                change = (stats.speedup(later, seed=2 * i + 1 + 2 * j) / base).row(threshold)
                changes.loc[row] = [change[key] for key in CHANGE_COLUMNS]
    return pd.concat([table, changes], axis=1)


def speedups(runs: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD, results: list[dict] = ()) -> pd.DataFrame:
    """Per hardware x model x mode: the interleaved speedup with its interval, its verdict against the model's noise
    floor (`against_noise`, the band of `same` widened to the floor), whether the measurement was `unstable`, the
    cross-job ratio beside it, and from `results` the eager beside the mode against the eager job's
    (`eager_job_ratio`, with its interval and `eager_job_flagged`)."""
    ok_eager = runs[(runs["mode"] == "eager") & (runs["status"] == "ok")].set_index(["hardware", "model"])
    modes = runs[runs["mode"] != "eager"].copy()
    keys = list(zip(modes["hardware"], modes["model"]))
    modes["eager_job_median_ms"] = [ok_eager["median_ms"].get(key) for key in keys]
    modes["cross_job_speedup"] = modes["eager_job_median_ms"] / modes["median_ms"]
    beside = eager_beside(results)
    for key, column in (("median_ms", "eager_beside_median_ms"), ("value", "eager_job_ratio"),
                        ("low", "eager_job_ratio_ci95_low"), ("high", "eager_job_ratio_ci95_high"),
                        ("flagged", "eager_job_flagged"), ("capacity", "parallel_speedup"),
                        ("job_capacity", "eager_job_parallel_speedup")):  # fmt: skip
        modes[column] = [beside.get(k, {}).get(key) for k in zip(modes["hardware"], modes["model"], modes["mode"])]
    for end in ("low", "high"):
        modes[f"noise_ci95_{end}"] = [ok_eager[f"noise_ci95_{end}"].get(key) for key in keys]
    modes["eager_job_faults_per_call"] = [ok_eager["mode_faults_per_call"].get(key) for key in keys]
    intervals = list(zip(modes["speedup_ci95_low"], modes["speedup_ci95_high"]))
    floors = list(zip(modes["noise_ci95_low"], modes["noise_ci95_high"]))
    modes["threshold"] = threshold
    shifted = modes["level_shift"].apply(lambda shift: isinstance(shift, str)) & (modes["level_shift_side"] != "alone")
    two_levels = shifted | modes["bimodal_slow_ms"].notna()
    modes["against_noise"] = [
        "unclear" if moved else against_noise(*interval, *floor, threshold)
        for interval, floor, moved in zip(intervals, floors, two_levels)
    ]  # a level that moved within a process, or processes at two levels: a median describes neither
    modes["detectable_change"] = [
        None if missing(low) else detectable_change(low, high, threshold) for low, high in intervals
    ]
    modes["unstable"] = [
        bool(run_busy == True or eager_busy == True or unsteady_floor(*floor, threshold))  # noqa: E712
        for run_busy, eager_busy, floor in zip(
            modes["machine_busy"], [ok_eager["machine_busy"].get(key) for key in keys], floors
        )
    ]
    columns = [
        "hardware",
        "model",
        "mode",
        "dtype",
        "batch_size",
        *SWEEP_COLUMNS,
        "train_of",
        "status",
        "speedup",
        "speedup_ci95_low",
        "speedup_ci95_high",
        "speedup_mode_ms",
        "speedup_eager_ms",
        "noise_ci95_low",
        "noise_ci95_high",
        "threshold",
        "against_noise",
        "level_shift",
        "level_shift_side",
        "set_aside",
        "bimodal_fast_ms",
        "bimodal_slow_ms",
        "unstable",
        "detectable_change",
        "processes",
        "cross_job_speedup",
        "median_ms",
        "eager_job_median_ms",
        "eager_beside_median_ms",
        "eager_job_ratio",
        "eager_job_ratio_ci95_low",
        "eager_job_ratio_ci95_high",
        "eager_job_flagged",
        "parallel_speedup",
        "eager_job_parallel_speedup",
        "eager_faults_per_call",
        "eager_job_faults_per_call",
        "compile_s",
        "correct",
    ]
    table = modes[columns].reset_index(drop=True)
    said = [verdict_in_words(row) for row in table.to_dict("records")]
    table["verdict"] = [verdict for verdict, _ in said]  # what every table that states a verdict prints
    table["verdict_why"] = [why for _, why in said]
    return table


def eager_beside(results: list[dict]) -> dict[tuple[str, str, str], dict]:
    """Per ok mode result with interleaved eager samples: eager's median beside it, that eager against the eager
    job's (`stats.eager_job_ratio`), and the machine's parallel speedup in the mode's processes and in the eager
    job's (`machine_state.parallel_capacity`; None without probes)."""
    eager = {(r["hardware"], r["model"]): r for r in results if r["mode"] == "eager" and r["status"] == "ok"}
    out = {}
    for result in results:
        job = eager.get((result["hardware"], result["model"]))
        if result["mode"] == "eager" or result["status"] != "ok" or not result.get("eager_latency_ms") or not job:
            continue
        ratio = stats.eager_job_ratio(result, job)
        out[(result["hardware"], result["model"], result["mode"])] = {
            "median_ms": float(np.median(result["eager_latency_ms"])),
            "value": ratio["value"],
            "low": ratio["ci95"][0],
            "high": ratio["ci95"][1],
            "flagged": ratio["flagged"],
            "capacity": (machine_state.parallel_capacity(result) or {}).get("overall"),
            "job_capacity": (machine_state.parallel_capacity(job) or {}).get("overall"),
        }
    return out


def geometric_mean_summary(speedups_table: pd.DataFrame) -> pd.DataFrame:
    """Geometric-mean speedup per hardware and mode, over the models that ran and passed the correctness check (their
    inference: a training step is another workload, summarized in the training table)."""
    speedups_table = inference_only(speedups_table)
    passed = speedups_table[(speedups_table["status"] == "ok") & (speedups_table["correct"] == True)]  # noqa: E712
    passed = passed.assign(log_speedup=np.log(passed["speedup"].astype(float)))
    grouped = passed.groupby(["hardware", "mode"], sort=False)
    summary = grouped.agg(
        geomean_speedup=("log_speedup", lambda x: float(np.exp(x.mean()))),
        models=("model", "nunique"),
        min_speedup=("speedup", "min"),
        max_speedup=("speedup", "max"),
    ).reset_index()
    totals = speedups_table.groupby(["hardware", "mode"], sort=False)["model"].nunique().rename("models_total")
    return summary.merge(totals.reset_index(), on=["hardware", "mode"], how="right").fillna({"models": 0})


def settings_difference(run: dict, base: dict) -> str:
    """The settings in which two runs' modes differ, as `name: value` (the first run's value)."""
    differing = []
    for column in mode_columns({}):
        value, other = run.get(column), base.get(column)
        if not (missing(value) and missing(other)) and value != other:
            differing.append(f"{column.removeprefix('mode_')}: {'–' if missing(value) else value}")
    return "; ".join(differing) or "nothing"
