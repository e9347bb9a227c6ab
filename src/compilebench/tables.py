"""Tidy tables from result files: one row per job, one column per variable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .results import read_json

IDENTITY = ["hardware", "model", "mode", "task", "device", "dtype", "batch_size"]
MEASURE_COLUMNS = ["warmup", "iterations", "min_time_s", "interleave_block", "fullgraph", "private_cache", "timeout_s"]


def _run_row(result: dict, path: str) -> dict:
    stats = result.get("stats", {})
    speedup = result.get("speedup", {})
    check = result.get("correctness", {})
    compiler = result.get("compiler", {})
    generation = result.get("generation", {})
    ci = stats.get("ci95_ms") or [None, None]
    speedup_ci = speedup.get("ci95") or [None, None]
    error = result.get("error") or {}
    return {
        **{key: result.get(key) for key in IDENTITY},
        "status": result["status"],
        "error": error.get("message"),
        "n": stats.get("n"),
        **{key: stats.get(key) for key in ("median_ms", "mean_ms", "p90_ms", "p99_ms", "std_ms", "cv", "min_ms", "max_ms")},
        "ci95_low_ms": ci[0],
        "ci95_high_ms": ci[1],
        "compile_s": result.get("compile_s"),
        "samples_per_s": result.get("throughput", {}).get("samples_per_s"),
        "tokens_per_s": generation.get("tokens_per_s"),
        "ttft_ms": generation.get("ttft_ms"),
        "decode_tokens_per_s": generation.get("decode_tokens_per_s"),
        "peak_memory_bytes": result.get("memory", {}).get("peak_bytes"),
        "speedup": speedup.get("value"),
        "speedup_ci95_low": speedup_ci[0],
        "speedup_ci95_high": speedup_ci[1],
        "correct": check.get("passed"),
        "cosine": check.get("cosine"),
        "max_abs_err": check.get("max_abs_err"),
        "top1_agreement": check.get("top1_agreement"),
        "tokens_match": check.get("tokens_match"),
        "graphs": compiler.get("graphs"),
        "graph_breaks": compiler.get("graph_breaks"),
        "recompiles": compiler.get("recompiles"),
        **{f"measure_{key}": result.get("measure", {}).get(key) for key in MEASURE_COLUMNS},
        "started_at": result.get("started_at"),
        "finished_at": result.get("finished_at"),
        "result_file": str(path),
    }


def runs_table(paths: list[str | Path]) -> pd.DataFrame:
    """One row per job, from exactly the result files given (the current config's)."""
    rows = [_run_row(read_json(path), str(path)) for path in paths]
    return pd.DataFrame(rows, columns=list(_run_row({"status": "ok"}, "").keys()))


def latency_samples(paths: list[str | Path]) -> pd.DataFrame:
    """One row per timed iteration of every job that produced samples."""
    frames = []
    for path in paths:
        result = read_json(path)
        samples = result.get("latency_ms") or []
        if samples:
            frame = pd.DataFrame({"iteration": range(len(samples)), "latency_ms": samples})
            for key in ("hardware", "model", "mode", "dtype", "batch_size"):
                frame.insert(len(frame.columns) - 2, key, result.get(key))
            frames.append(frame)
    columns = ["hardware", "model", "mode", "dtype", "batch_size", "iteration", "latency_ms"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def speedups(runs: pd.DataFrame) -> pd.DataFrame:
    """Per hardware x model x mode: the interleaved speedup with its interval, and the cross-job ratio beside it."""
    eager = runs[(runs["mode"] == "eager") & (runs["status"] == "ok")].set_index(["hardware", "model"])["median_ms"]
    modes = runs[runs["mode"] != "eager"].copy()
    keys = list(zip(modes["hardware"], modes["model"]))
    modes["eager_job_median_ms"] = [eager.get(key) for key in keys]
    modes["cross_job_speedup"] = modes["eager_job_median_ms"] / modes["median_ms"]
    columns = [
        "hardware", "model", "mode", "dtype", "batch_size", "status", "speedup", "speedup_ci95_low",
        "speedup_ci95_high", "cross_job_speedup", "median_ms", "eager_job_median_ms", "compile_s", "correct",
    ]
    return modes[columns].reset_index(drop=True)


def geometric_mean_summary(speedups_table: pd.DataFrame) -> pd.DataFrame:
    """Geometric-mean speedup per hardware and mode, over the models that ran and passed the correctness check."""
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


def status_line(table: pd.DataFrame) -> str:
    counts = table["status"].value_counts()
    return ", ".join(f"{int(counts.get(s, 0))} {s}" for s in ("ok", "failed", "timeout", "unsupported"))


def outcome(runs_csv: str | Path, strict: bool) -> str:
    """The run's one-line summary; under `strict`, an error naming every experiment that is not ok."""
    from .config import UserError

    table = pd.read_csv(runs_csv)
    line = f"compilebench: {status_line(table)}"
    bad = table[table["status"] != "ok"]
    if strict and not bad.empty:
        names = ", ".join(f"{r.hardware}/{r.model}/{r.mode} ({r.status})" for r in bad.itertuples())
        raise UserError(f"{line}. Config key `strict` is true and {len(bad)} experiment(s) did not succeed: {names}.")
    return line


def write_csv(table: pd.DataFrame, path: str | Path) -> None:
    from .results import atomic_write

    atomic_write(path, lambda handle: table.to_csv(handle, index=False))
