"""Faster, slower, the same, or nothing we can tell: ratios of medians with bootstrap intervals, read
against a threshold.

Within a run, each platform is set against the baseline platform (`comparison.csv`); between runs,
`compilebench compare` sets one run's results against another's. The ratio is the base median over
the new median, as a speedup reads: above 1, the new side is faster.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import stats
from .errors import UserError
from .results import read_result, run_result_paths
from .tables import baseline_of

VERDICTS = ("faster", "slower", "same", "unclear")
DEFAULT_THRESHOLD = 0.05
KEY = ["model", "mode"]


def verdict(low: float, high: float, threshold: float) -> str:
    """`faster`/`slower` when the whole interval lies beyond 1 ± threshold, `same` when within it, else `unclear`."""
    if low > 1 + threshold:
        return "faster"
    if high < 1 - threshold:
        return "slower"
    if low >= 1 - threshold and high <= 1 + threshold:
        return "same"
    return "unclear"


def ratio_row(base_ms: list[float], new_ms: list[float], threshold: float, *, resamples: int, seed: int) -> dict:
    """Medians of both sides, their ratio with a bootstrap 95% interval, and the verdict it supports."""
    ratio = stats.speedup(base_ms, new_ms, resamples=resamples, seed=seed)
    low, high = ratio["ci95"]
    return {
        "base_median_ms": ratio["eager_median_ms"],  # stats.speedup's numerator side
        "median_ms": float(np.median(new_ms)),
        "ratio": ratio["value"],
        "ratio_ci95_low": low,
        "ratio_ci95_high": high,
        "verdict": verdict(low, high, threshold),
    }


def geometric_mean(pairs: list[tuple[list[float], list[float]]], *, resamples: int, seed: int) -> dict:
    """The geometric mean of several experiments' ratios, with a bootstrap 95% interval that resamples each
    experiment's samples on both sides in every replicate."""
    rng = np.random.default_rng(seed)
    logs, replicates = [], np.zeros(resamples)
    for base, new in pairs:
        a, b = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
        logs.append(np.log(np.median(a) / np.median(b)))
        boot_a = np.median(rng.choice(a, (resamples, len(a))), axis=1)
        boot_b = np.median(rng.choice(b, (resamples, len(b))), axis=1)
        replicates += np.log(boot_a / boot_b)
    replicates /= len(pairs)
    low, high = np.exp(np.percentile(replicates, [2.5, 97.5]))
    return {"ratio": float(np.exp(np.mean(logs))), "ratio_ci95_low": float(low), "ratio_ci95_high": float(high)}


COLUMNS = [
    "hardware",
    "baseline_hardware",
    "base_torch",
    "torch",
    "scope",
    "model",
    "mode",
    "experiments",
    "base_median_ms",
    "median_ms",
    "ratio",
    "ratio_ci95_low",
    "ratio_ci95_high",
    "threshold",
    "verdict",
]


def within_run(
    runs: pd.DataFrame, samples: pd.DataFrame, baseline: str | None, threshold: float, *, resamples: int = 2000
) -> pd.DataFrame:
    """Every platform against the baseline platform, for each model and mode that ran ok on both: one row per
    experiment (`scope` experiment), and the geometric mean per platform and mode (`scope` geomean)."""
    baseline = baseline_of(runs["hardware"], baseline)
    ok = {tuple(key) for key in runs.loc[runs["status"] == "ok", ["hardware", *KEY]].to_numpy()}
    by_run = {key: list(frame["latency_ms"]) for key, frame in samples.groupby(["hardware", *KEY], sort=False)}
    pairs = {
        (platform, model, mode): (by_run[(baseline, model, mode)], by_run[(platform, model, mode)])
        for platform, model, mode in by_run
        if platform != baseline
        and {(platform, model, mode), (baseline, model, mode)} <= ok
        and (baseline, model, mode) in by_run
    }
    torch_of = _torch_versions(runs)
    rows = [
        {
            **row,
            "baseline_hardware": baseline,
            "torch": torch_of.get(row["hardware"]),
            "base_torch": torch_of.get(baseline),
        }
        for row in compare_pairs(pairs, threshold, resamples=resamples)
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def _torch_versions(runs: pd.DataFrame) -> dict[str, str]:
    """The torch each platform measured with (its own Python environment's, where it has one)."""
    if "torch" not in runs:
        return {}
    known = runs.dropna(subset=["torch"])
    return dict(zip(known["hardware"], known["torch"]))


def compare_pairs(
    pairs: dict[tuple[str, str, str], tuple[list[float], list[float]]], threshold: float, *, resamples: int = 2000
) -> list[dict]:
    """One row per (hardware, model, mode) pair of base and new samples, then the geometric mean per hardware
    and mode."""
    rows = []
    for i, ((hardware, model, mode), (base, new)) in enumerate(pairs.items()):
        ratio = ratio_row(base, new, threshold, resamples=resamples, seed=i)
        rows.append({
            "hardware": hardware, "scope": "experiment", "model": model, "mode": mode, "experiments": 1,
            "threshold": threshold, **ratio,
        })  # fmt: skip
    for hardware, mode in dict.fromkeys((h, m) for h, _, m in pairs):
        group = [pair for (h, _, m), pair in pairs.items() if (h, m) == (hardware, mode)]
        mean = geometric_mean(group, resamples=resamples, seed=len(rows))
        rows.append({
            "hardware": hardware, "scope": "geomean", "model": None, "mode": mode, "experiments": len(group),
            "base_median_ms": None, "median_ms": None, "threshold": threshold, **mean,
            "verdict": verdict(mean["ratio_ci95_low"], mean["ratio_ci95_high"], threshold),
        })  # fmt: skip
    return rows


def run_results(folder: str | Path) -> dict[tuple[str, str, str], dict]:
    """The results of one run, by (hardware, model, mode): `folder` is a project folder or its `results/`."""
    paths = run_result_paths(folder)
    if not paths:
        raise UserError(
            f"{folder} holds no results: expected a project folder with results/runs/HARDWARE/MODEL/MODE.json "
            "files, or its results/ folder."
        )
    return by_experiment(read_result(path) for path in paths)


def by_experiment(results) -> dict[tuple[str, str, str], dict]:
    return {(r["hardware"], r["model"], r["mode"]): r for r in results}


def between_runs(base: dict, new: dict, threshold: float, *, resamples: int = 2000) -> pd.DataFrame:
    """Each experiment present in both runs: statuses, correctness, the ratio of medians with its interval and
    verdict, and whether it regressed; then the geometric mean per hardware and mode. A status leaving `ok`, or
    a correctness check turning from pass to fail, is a regression whatever the timing."""
    schemas = {
        side: sorted({r["schema"] for r in results.values()}) for side, results in (("BASE", base), ("NEW", new))
    }
    if schemas["BASE"] != schemas["NEW"]:
        raise UserError(
            f"BASE results have schema {schemas['BASE']} and NEW results schema {schemas['NEW']}: expected two runs "
            "of one schema (rerun the older one with this compilebench)."
        )
    shared = [key for key in base if key in new]
    timed = {key: (base[key]["latency_ms"], new[key]["latency_ms"]) for key in shared if _timed(base[key], new[key])}
    ratios = {(r["hardware"], r["model"], r["mode"]): r for r in compare_pairs(timed, threshold, resamples=resamples)}
    rows = []
    for key in shared:
        before, after = base[key], new[key]
        row = ratios.get(key, {"hardware": key[0], "scope": "experiment", "model": key[1], "mode": key[2]})
        rows.append({
            **row, "base_torch": _torch(before), "torch": _torch(after),
            "base_status": before["status"], "status": after["status"],
            "base_correct": _passed(before), "correct": _passed(after), "regression": _regression(before, after, row),
        })  # fmt: skip
    geomeans = [row for row in ratios.values() if row["scope"] == "geomean"]
    rows += [{**row, "regression": "slower" if row["verdict"] == "slower" else None} for row in geomeans]
    return pd.DataFrame(rows, columns=BETWEEN_COLUMNS)


BETWEEN_COLUMNS = [
    *(c for c in COLUMNS if c != "baseline_hardware"),
    *("base_status", "status", "base_correct", "correct", "regression"),
]


def change_against(previous: list[str | Path], current: list[dict], threshold: float) -> pd.DataFrame:
    """This run's results against a previous run's result files (`report.compare_with`); empty without one."""
    if not previous:
        return pd.DataFrame(columns=BETWEEN_COLUMNS)
    return between_runs(by_experiment(read_result(p) for p in previous), by_experiment(current), threshold)


def _timed(before: dict, after: dict) -> bool:
    return (
        before["status"] == after["status"] == "ok" and bool(before.get("latency_ms")) and bool(after.get("latency_ms"))
    )


def _torch(result: dict) -> str | None:
    return (result.get("environment") or {}).get("torch")


def _passed(result: dict) -> bool | None:
    return (result.get("correctness") or {}).get("passed")


def _regression(before: dict, after: dict, ratio: dict) -> str | None:
    """Why an experiment regressed, or None."""
    if before["status"] == "ok" and after["status"] != "ok":
        return f"status ok → {after['status']}"
    if _passed(before) is True and _passed(after) is False:
        return "correctness pass → fail"
    if ratio.get("verdict") == "slower":
        return "slower"
    return None


def describe(table: pd.DataFrame, only_base: list, only_new: list) -> str:
    """What `compilebench compare` prints: a line per experiment, the geometric means, one-sided experiments."""
    lines = []
    for row in table[table["scope"] == "experiment"].to_dict("records"):
        name = f"{row['hardware']}/{row['model']}/{row['mode']}"
        if pd.isna(row.get("ratio")):
            lines.append(f"{name}: {row['base_status']} → {row['status']}, not timed on both sides")
        else:
            lines.append(
                f"{name}: {row['base_median_ms']:.4g} ms → {row['median_ms']:.4g} ms, ratio {row['ratio']:.3f} "
                f"(95% CI {row['ratio_ci95_low']:.3f}–{row['ratio_ci95_high']:.3f}): {row['verdict']}"
            )
        if isinstance(row["regression"], str):
            lines[-1] += f"  REGRESSION ({row['regression']})"
    for row in table[table["scope"] == "geomean"].to_dict("records"):
        lines.append(
            f"geometric mean, {row['mode']} on {row['hardware']} ({int(row['experiments'])} experiments): "
            f"{row['ratio']:.3f}× (95% CI {row['ratio_ci95_low']:.3f}–{row['ratio_ci95_high']:.3f}): {row['verdict']}"
        )
    for side, keys in (("BASE", only_base), ("NEW", only_new)):
        if keys:
            lines.append(f"only in {side}: {', '.join('/'.join(key) for key in keys)}")
    regressed = int(regressions(table[table["scope"] == "experiment"]).sum())
    slower_means = int(regressions(table[table["scope"] == "geomean"]).sum())
    lines.append(
        (f"{regressed} experiment{'s' if regressed != 1 else ''} regressed" if regressed else "no experiment regressed")
        + (f"; {slower_means} geometric mean{'s' if slower_means != 1 else ''} slower" if slower_means else "")
    )
    return "\n".join(lines)


def regressions(table: pd.DataFrame) -> pd.Series:
    """Which rows regressed: their `regression` says why (a table read back, or mixed with None, holds NaN)."""
    return table["regression"].map(lambda why: isinstance(why, str) and bool(why))
