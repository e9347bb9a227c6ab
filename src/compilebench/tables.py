"""Tidy tables from result files: one row per job, one column per variable."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import UserError
from .results import read_result

IDENTITY = ["hardware", "model", "mode", "task", "device", "dtype", "batch_size"]
MEASURE_COLUMNS = [
    "warmup",
    "iterations",
    "min_time_s",
    "interleave_block",
    "fullgraph",
    "private_cache",
    "timeout_s",
    "profile",
]


def _run_row(result: dict, path: str) -> dict:
    stats = result.get("stats", {})
    speedup = result.get("speedup", {})
    check = result.get("correctness", {})
    compiler = result.get("compiler", {})
    generation = result.get("generation", {})
    ci = stats.get("ci95_ms") or [None, None]
    speedup_ci = speedup.get("ci95") or [None, None]
    error = result.get("error") or {}
    environment = result.get("environment") or {}
    workload = result.get("workload", {})
    return {
        **{key: result.get(key) for key in IDENTITY},
        "device_name": environment.get("device_name"),
        "threads": environment.get("threads"),
        "bf16_native": environment.get("bf16_native"),
        "fpmath_mode": environment.get("fpmath_mode"),
        "host": environment.get("hostname"),
        **{
            f"slurm_{key}": (environment.get("slurm") or {}).get(key)
            for key in ("job_id", "job_partition", "job_nodelist")
        },
        "status": result["status"],
        "error": error.get("message"),
        "n": stats.get("n"),
        **{
            key: stats.get(key)
            for key in ("median_ms", "mean_ms", "p90_ms", "p99_ms", "std_ms", "cv", "min_ms", "max_ms")
        },
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
        "compute_dtype": workload.get("compute_dtype"),
        "flops_per_call": workload.get("flops_per_call"),
        "parameter_bytes": workload.get("parameter_bytes"),
        **{f"measure_{key}": result.get("measure", {}).get(key) for key in MEASURE_COLUMNS},
        "started_at": result.get("started_at"),
        "finished_at": result.get("finished_at"),
        "result_file": str(path),
    }


def runs_table(paths: list[str | Path]) -> pd.DataFrame:
    """One row per job, from exactly the result files given (the current config's)."""
    rows = [_run_row(read_result(path), str(path)) for path in paths]
    return pd.DataFrame(rows, columns=list(_run_row({"status": "ok"}, "").keys()))


def latency_samples(paths: list[str | Path]) -> pd.DataFrame:
    """One row per timed iteration of every job that produced samples."""
    frames = []
    for path in paths:
        result = read_result(path)
        samples = result.get("latency_ms") or []
        if samples:
            frame = pd.DataFrame({"iteration": range(len(samples)), "latency_ms": samples})
            for key in ("hardware", "model", "mode", "dtype", "batch_size"):
                frame.insert(len(frame.columns) - 2, key, result.get(key))
            frames.append(frame)
    columns = ["hardware", "model", "mode", "dtype", "batch_size", "iteration", "latency_ms"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def top_ops(paths: list[str | Path], per_run: int = 10) -> pd.DataFrame:
    """The profiled runs' top operators by self time, one row per operator."""
    rows = []
    for path in paths:
        result = read_result(path)
        profile = result.get("profile") if result["status"] == "ok" else None
        for rank, op in enumerate((profile or {}).get("top_ops", [])[:per_run], start=1):
            rows.append(
                {
                    **{k: result.get(k) for k in ("hardware", "model", "mode")},
                    "rank": rank,
                    "op": plain_op_name(op["op"]),
                    "self_us_per_call": op["self_us_per_call"],
                    "calls_per_call": op["calls_per_call"],
                    "share": op["share"],
                    "time_basis": profile["time_basis"],
                    "trace": profile["trace"],
                }
            )
    columns = [
        "hardware",
        "model",
        "mode",
        "rank",
        "op",
        "self_us_per_call",
        "calls_per_call",
        "share",
        "time_basis",
        "trace",
    ]
    return pd.DataFrame(rows, columns=columns)


def plain_op_name(name: str, limit: int = 90) -> str:
    """A readable operator name: no graph hash, no kernel template arguments, no parameter list."""
    name = re.sub(r"CompiledFxGraph \w+", "CompiledFxGraph", name)
    name = re.sub(r"^void ", "", name)
    if "<" in name or "(" in name:
        name = re.split(r"[<(]", name, maxsplit=1)[0] + "<…>"
    return name if len(name) <= limit else name[: limit - 1] + "…"


def limits(runs: pd.DataFrame, peak_overrides: dict[str, dict | None]) -> pd.DataFrame:
    """How close each run came to its device's limit.

    Text generation reads every weight once per decode step, so its limit is memory bandwidth:
    parameter bytes x decode steps per second. Other models report FLOP/s against peak FLOP/s
    in the dtype the arithmetic ran in. Unknown devices get the raw figure only.
    """
    from .peaks import lookup

    rows = []
    for run in runs[runs["status"] == "ok"].to_dict("records"):
        peak = lookup(run.get("device_name"), peak_overrides.get(run["hardware"]), _int_or_none(run.get("threads")))
        row = {k: run.get(k) for k in ("hardware", "model", "mode", "device_name", "compute_dtype")}
        if run["task"] == "text-generation":
            steps_per_s = (run.get("decode_tokens_per_s") or float("nan")) / run["batch_size"]
            achieved, limit = run["parameter_bytes"] * steps_per_s / 1e9, (peak or {}).get("memory_bandwidth_gbs")
            row.update(metric="memory bandwidth", unit="GB/s")
        else:
            achieved = (
                run["flops_per_call"] / (run["median_ms"] / 1e3) / 1e12 if run.get("flops_per_call") else float("nan")
            )
            limit = (peak or {}).get("tflops", {}).get(run.get("compute_dtype") or "float32")
            row.update(metric="compute", unit="TFLOP/s")
        row.update(
            achieved=achieved,
            peak=limit,
            fraction_of_peak=achieved / limit if limit else None,
            peak_device=(peak or {}).get("name"),
            peak_source=(peak or {}).get("source"),
        )
        rows.append(row)
    columns = [
        "hardware",
        "model",
        "mode",
        "device_name",
        "compute_dtype",
        "metric",
        "unit",
        "achieved",
        "peak",
        "fraction_of_peak",
        "peak_device",
        "peak_source",
    ]
    return pd.DataFrame(rows, columns=columns)


def unbacked_fast_math(fpmath_mode, bf16_native, device) -> bool:
    """oneDNN's BF16 fast math asked for on a CPU without native bf16: its numbers are not a fast-math result."""
    return isinstance(fpmath_mode, str) and fpmath_mode.upper() == "BF16" and bf16_native is False and device == "cpu"


def _int_or_none(value) -> int | None:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else int(value)


def speedups(runs: pd.DataFrame) -> pd.DataFrame:
    """Per hardware x model x mode: the interleaved speedup with its interval, and the cross-job ratio beside it."""
    eager = runs[(runs["mode"] == "eager") & (runs["status"] == "ok")].set_index(["hardware", "model"])["median_ms"]
    modes = runs[runs["mode"] != "eager"].copy()
    keys = list(zip(modes["hardware"], modes["model"]))
    modes["eager_job_median_ms"] = [eager.get(key) for key in keys]
    modes["cross_job_speedup"] = modes["eager_job_median_ms"] / modes["median_ms"]
    columns = [
        "hardware",
        "model",
        "mode",
        "dtype",
        "batch_size",
        "status",
        "speedup",
        "speedup_ci95_low",
        "speedup_ci95_high",
        "cross_job_speedup",
        "median_ms",
        "eager_job_median_ms",
        "compile_s",
        "correct",
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


def hardware_costs(runs: pd.DataFrame, prices: dict[str, float], baseline: str | None) -> pd.DataFrame:
    """Per run: p90 latency relative to the baseline hardware's same model and mode, and where the hardware
    has a price, the cost of a million inferences (price per hour over inferences per hour at the median)."""
    ok = runs[runs["status"] == "ok"]
    hardware = list(dict.fromkeys(ok["hardware"]))
    baseline = baseline if baseline in hardware else (hardware[0] if hardware else None)
    base = ok[ok["hardware"] == baseline].set_index(["model", "mode"])["p90_ms"]
    frame = ok[["hardware", "model", "mode", "batch_size", "median_ms", "p90_ms"]].copy()
    frame["hardware_label"] = _hardware_labels(ok)
    frame["baseline_hardware"] = baseline
    frame["relative_p90"] = [row.p90_ms / base.get((row.model, row.mode), np.nan) for row in frame.itertuples()]
    frame["price_per_hour"] = frame["hardware"].map(prices)
    frame["cost_per_million"] = frame["price_per_hour"] / 3600 * (frame["median_ms"] / 1e3) / frame["batch_size"] * 1e6
    return frame.reset_index(drop=True)


def _hardware_labels(runs: pd.DataFrame) -> pd.Series:
    """A hardware entry that asked for bf16 fast math on a CPU without native bf16 says so in its label."""
    unbacked = [unbacked_fast_math(*row) for row in zip(runs["fpmath_mode"], runs["bf16_native"], runs["device"])]
    return runs["hardware"].where(
        ~pd.Series(unbacked, index=runs.index, dtype=bool), runs["hardware"] + " (bf16 requested, not native)"
    )


def status_line(table: pd.DataFrame) -> str:
    counts = table["status"].value_counts()
    return ", ".join(f"{int(counts.get(s, 0))} {s}" for s in ("ok", "failed", "timeout", "unsupported"))


def outcome(runs_csv: str | Path, strict: bool) -> str:
    """The run's one-line summary; under `strict`, an error naming every experiment that is not ok."""
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
