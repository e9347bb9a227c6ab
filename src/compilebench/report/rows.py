"""The rows the paper's tables show, each from a tidy table: results, what each model should use, pay-off,
compiler health."""

from __future__ import annotations

import math
import os
import re

import pandas as pd

from ..analysis.comparisons import said
from ..core.layout import REPORT_OUT
from ..core.modes import ordered


def at_a_glance(speedups: pd.DataFrame) -> list[dict]:
    """Per hardware and model: its best correct mode and its worst, each with its speedup over eager, interval and
    verdict."""
    rows = []
    timed = correct(speedups).dropna(subset=["speedup"])
    for (hardware, model), frame in timed.groupby(["hardware", "model"], sort=False):
        best, worst = frame.loc[frame["speedup"].idxmax()], frame.loc[frame["speedup"].idxmin()]
        rows.append({"hardware": hardware, "model": model, "best": _glance(best), "worst": _glance(worst)})
    return rows


def _glance(row: pd.Series) -> dict:
    return {
        "mode": row["mode"],
        "speedup": row["speedup"],
        "ci95": (row["speedup_ci95_low"], row["speedup_ci95_high"]),
        "verdict": said(row["against_noise"], row.get("unstable")),
    }


def pay_off_rows(runs: pd.DataFrame) -> list[dict]:
    """Every compiled run with a break-even count: what its start costs, cold and warm, and when it is repaid."""
    frame = runs[(runs["status"] == "ok") & runs["break_even_calls"].notna()]
    eager = runs[(runs["mode"] == "eager") & (runs["status"] == "ok")].set_index(["hardware", "model"])["first_call_s"]
    rows = records(frame)
    for row in rows:
        row["eager_first_call_s"] = eager.get((row["hardware"], row["model"]))
    return rows


def unguarded(runs: pd.DataFrame) -> list[dict]:
    """Each model whose memory guard had no activation estimate (it could not refuse a shape too large), and why."""
    if "memory_estimate_unavailable" not in runs:
        return []
    missing = runs.dropna(subset=["memory_estimate_unavailable"]).drop_duplicates(["hardware", "model"])
    return records(missing[["hardware", "model", "memory_estimate_unavailable"]])


def capped(runs: pd.DataFrame) -> list[dict]:
    """Each run measured less than its settings ask, because a cap applied (`max_iterations`), and how."""
    if "measurement_caps" not in runs:
        return []
    return records(runs.dropna(subset=["measurement_caps"])[["hardware", "model", "mode", "measurement_caps"]])


def compile_traces(runs: pd.DataFrame) -> list[dict]:
    """Each run's tlparse report of its compile (`measure.compile_trace`), by its path relative to the paper."""
    if "compile_trace_report" not in runs:
        return []
    traced = runs.dropna(subset=["compile_trace_report"])
    return [
        {**row, "link": os.path.relpath(row["compile_trace_report"], REPORT_OUT)}
        for row in records(traced[["hardware", "model", "mode", "compile_trace_report"]])
    ]


def quantization_rows(runs: pd.DataFrame, effects: pd.DataFrame) -> list[dict]:
    """Each quantized run beside its baseline, the same mode unquantized: the effect with its interval and verdict,
    the speedup over eager, weight bytes before and after, the share quantized, and its correctness."""
    if "mode_quantize" not in runs:
        return []
    effect_of = {(r["hardware"], r["model"], r["mode"]): r for r in records(effects)}
    rows = []
    for run in records(runs[runs["mode_quantize"].notna()]):
        effect = effect_of.get((run["hardware"], run["model"], run["mode"])) or {}
        rows.append({**run, **{f"effect_{column}": effect.get(column) for column in effects.columns}})
    return rows


def mode_table(runs: pd.DataFrame) -> list[dict]:
    """One row per mode that ran: its kind and the settings it ran with, as the results record them."""
    columns = [c for c in runs.columns if c.startswith("mode_")]
    rows = records(runs.dropna(subset=["mode_kind"])[["mode", *columns]].drop_duplicates())
    order = ordered(r["mode"] for r in rows)
    return sorted(rows, key=lambda r: order.index(r["mode"]))


def _published_lookup(published: dict) -> dict[tuple[str, str, str], float]:
    values = published.get("values", {}) if published else {}
    return {
        (metric, model, mode): v
        for metric, models in values.items()
        for model, modes in models.items()
        for mode, v in modes.items()
    }


EAGER_JOB_COLUMNS = ("eager_job_median_ms", "eager_beside_median_ms", "eager_job_ratio", "eager_job_ratio_ci95_low",
                     "eager_job_ratio_ci95_high", "eager_job_flagged")  # fmt: skip


def results_rows(runs: pd.DataFrame, speedups: pd.DataFrame, published: dict) -> list[dict]:
    """Table 1's rows: each run, with its published figures (Table 1b) and each speedup's verdict against its noise
    floor (from the speedups table)."""
    lookup = _published_lookup(published)
    by_key = {(r["hardware"], r["model"], r["mode"]): r for r in records(speedups)}
    rows = []
    for row in records(runs):
        speedup = by_key.get((row["hardware"], row["model"], row["mode"])) or {}
        row["against_noise"] = said(speedup["against_noise"], speedup.get("unstable")) if speedup else None
        for key in EAGER_JOB_COLUMNS:
            row[key] = speedup.get(key)
        row["published_median_ms"] = lookup.get(("median_ms", row["model"], row["mode"]))
        row["published_tokens_per_s"] = lookup.get(("tokens_per_s", row["model"], row["mode"]))
        row["published_compile_s"] = lookup.get(("compile_s", row["model"], row["mode"]))
        rows.append(row)
    order = {m: i for i, m in enumerate(ordered(r["mode"] for r in rows))}
    return sorted(rows, key=lambda r: (r["hardware"], r["model"], order[r["mode"]]))


def correctness_rules(rows: list[dict]) -> list[dict]:
    """Each distinct correctness rule once, keyed A, B, ...; each row gets its rule's key (`rule_key`). A rule
    written out in every row (eager's own error, in its own column, made each one distinct) made the correctness
    table three pages long."""
    keys: dict[str, str] = {}
    for row in rows:
        rule = row.get("correctness_rule")
        if not isinstance(rule, str):
            row["rule_key"] = None
            continue
        general = re.sub(r"eager's \S+", "eager's own", rule).replace(">=", "≥").replace("<=", "≤")
        row["rule_key"] = keys.setdefault(general, chr(ord("A") + len(keys)))
    return [{"key": key, "rule": rule} for rule, key in keys.items()]


def where_time_goes(runs: pd.DataFrame, top_ops: pd.DataFrame, per_side: int = 5) -> list[dict]:
    """Per hardware and model: eager's top operators beside those of the fastest other mode (compiled, scripted
    or exported)."""
    sections = []
    ok = runs[runs["status"] == "ok"]
    for (hardware, model), frame in ok.groupby(["hardware", "model"], sort=False):
        ops = top_ops[(top_ops["hardware"] == hardware) & (top_ops["model"] == model)]
        compiled = frame[(frame["mode"] != "eager") & frame["mode"].isin(ops["mode"])]
        if "eager" not in set(ops["mode"]) or compiled.empty:
            continue
        fastest = compiled.loc[compiled["median_ms"].idxmin(), "mode"]
        sides = {
            mode: ops[ops["mode"] == mode].nsmallest(per_side, "rank").to_dict("records") for mode in ("eager", fastest)
        }
        sections.append(
            {
                "hardware": hardware,
                "model": model,
                "fastest": fastest,
                "sides": sides,
                "basis": ops["time_basis"].iloc[0],
            }
        )
    return sections


def cluster_jobs(runs: pd.DataFrame) -> list[dict]:
    """Per hardware entry: the SLURM partitions, nodes and job ids its benchmark jobs ran under."""
    ran = runs.dropna(subset=["slurm_job_id"]) if "slurm_job_id" in runs else runs.iloc[:0]
    return [
        {
            "hardware": hardware,
            "partitions": sorted(frame["slurm_job_partition"].dropna().astype(str).unique()),
            "nodes": sorted(frame["slurm_job_nodelist"].dropna().astype(str).unique()),
            "job_ids": sorted(frame["slurm_job_id"].astype(int).astype(str).unique(), key=int),
        }
        for hardware, frame in ran.groupby("hardware", sort=False)
    ]


def records(frame: pd.DataFrame) -> list[dict]:
    return [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
        for row in frame.to_dict("records")
    ]


def correct(speedups: pd.DataFrame) -> pd.DataFrame:
    """The ok speedups of modes that passed the correctness check: a wrong answer is no speedup (Section 4 lists
    the others)."""
    return speedups[(speedups["status"] == "ok") & (speedups["correct"] == True)]  # noqa: E712
