"""Training steps: one row per training experiment (a model's `train:`, measured as `MODEL.train`)."""

from __future__ import annotations

import math

import pandas as pd

from ..core.records import is_training
from . import tables

SPEEDUP_COLUMNS = [*tables.SPEEDUP_COLUMNS, "processes"]
SPLIT_COLUMNS = ["forward_ms", "backward_ms", "optimizer_ms"]
PASS_COLUMNS = ["forward_graphs", "backward_graphs", "forward_compile_s", "backward_compile_s"]
# each side stepped alone in a process of its own: its first step's peak (the compile's, for the mode) and the
# whole process's peak, as a user who trains only that way sees it
ALONE_COLUMNS = [f"{side}_{peak}_bytes" for side in ("eager", "mode") for peak in ("first_steps_peak", "process_peak")]
TRAINING_COLUMNS = [
    "hardware", "model", "train_of", "mode", "status", "optimizer", "batch_size", "step_ms", "step_ci95_low",
    "step_ci95_high", "eager_step_ms", *SPEEDUP_COLUMNS,
    *(f"{side}_{part}" for side in ("eager", "mode") for part in SPLIT_COLUMNS),
    "eager_step_peak_bytes", "mode_step_peak_bytes", "memory_ratio", *ALONE_COLUMNS, "compile_s", "break_even_steps",
    "graphs", *PASS_COLUMNS, "graph_breaks", "recompiles", "correct", "loss_max_rel", "grad_max_rel", "param_max_rel",
    "reason",
]  # fmt: skip


def training(results: list[dict], speedups: pd.DataFrame) -> pd.DataFrame:
    """Per training experiment and mode: the step's median with its interval and eager's beside it; the speedup,
    its interval and verdict from the speedups table; each side's step split into forward, backward and optimizer;
    each side's peak memory and their ratio (eager over the mode: above 1 the mode needs less); the cold compile and
    the steps after which it has paid for itself; compiler counters; correctness after k steps."""
    shown = speedups.set_index(["hardware", "model", "mode"]) if len(speedups) else None
    rows = []
    for result in results:
        if not is_training(result):
            continue
        train = (result.get("spec") or {}).get("train")
        key = (result["hardware"], result["model"], result["mode"])
        row = {"hardware": key[0], "model": key[1], "mode": key[2], "status": result["status"]}
        row["train_of"] = str(key[1]).removesuffix(".train")
        row["optimizer"] = (result.get("training") or {}).get("optimizer") or (train or {}).get("optimizer")
        row["batch_size"] = result.get("batch_size")
        if result["status"] == "ok":
            row.update(_measured(result))
            if shown is not None and key in shown.index:
                row.update({column: shown.loc[key, column] for column in SPEEDUP_COLUMNS})
        else:
            row["reason"] = (result.get("error") or {}).get("message")
        rows.append(row)
    return pd.DataFrame(rows, columns=TRAINING_COLUMNS)


def _measured(result: dict) -> dict:
    stats, seen = result["stats"], result.get("training") or {}
    eager = result.get("eager_latency_ms") or result.get("twin_latency_ms") or []
    eager_ms = float(pd.Series(eager).median()) if eager else None
    row = {
        "step_ms": stats["median_ms"],
        "step_ci95_low": stats["ci95_ms"][0],
        "step_ci95_high": stats["ci95_ms"][1],
        "eager_step_ms": eager_ms,
        "compile_s": result.get("compile_s") if result["mode"] != "eager" else None,
    }
    for side, parts in (seen.get("split_ms") or {}).items():
        if side in ("eager", "mode") and parts:
            row.update({f"{side}_{part}": parts[part] for part in SPLIT_COLUMNS})
    peaks = seen.get("step_peak_bytes") or {}
    row["eager_step_peak_bytes"], row["mode_step_peak_bytes"] = peaks.get("eager"), peaks.get("mode")
    if peaks.get("eager") and peaks.get("mode"):
        row["memory_ratio"] = peaks["eager"] / peaks["mode"]
    alone = seen.get("step_memory") or {}
    for side in ("eager", "mode"):
        row.update(
            {
                f"{side}_{peak}": (alone.get(side) or {}).get(peak)
                for peak in ("first_steps_peak_bytes", "process_peak_bytes")
            }
        )
    if row["compile_s"] is not None and eager_ms is not None:
        saved_ms = eager_ms - stats["median_ms"]
        row["break_even_steps"] = math.ceil(row["compile_s"] * 1e3 / saved_ms) if saved_ms > 0 else math.inf
    compiler = result.get("compiler") or {}
    row.update({key: compiler.get(key) for key in ("graphs", "graph_breaks", "recompiles")})
    row.update({key: (seen.get("compiled_passes") or {}).get(key) for key in PASS_COLUMNS})
    check = result.get("train_correctness") or {}
    row["correct"] = (result.get("correctness") or {}).get("passed")
    row.update({key: check.get(key) for key in ("loss_max_rel", "grad_max_rel", "param_max_rel")})
    row["reason"] = check.get("reason")
    return row
