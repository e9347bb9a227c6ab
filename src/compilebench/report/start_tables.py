"""Starts from process start to first output: one row per start, and per path its median and break-even."""

from __future__ import annotations

import pandas as pd

from ..analysis import summaries
from ..core.records import START_PARTS

# A compiled mode's start as it is deployed: its most prepared path the run timed, first found first.
DEPLOYED_PATHS = ("package", "precompiled", "artifacts", "warm", "cold")


def deployed_peaks(start_paths: pd.DataFrame) -> pd.DataFrame:
    """Peak memory as users run each mode, from the fresh starts: per hardware and model, eager's start (the median
    over the jobs that timed it) and each mode's start on its most prepared path (`DEPLOYED_PATHS`); columns
    hardware, model, mode, path, peak_bytes. Empty where no start read its memory."""
    columns = ["hardware", "model", "mode", "path", "peak_bytes"]
    if "peak_bytes" not in start_paths or not len(start_paths):
        return pd.DataFrame(columns=columns)
    timed = start_paths[(start_paths["status"] == "ok") & start_paths["peak_bytes"].notna()]
    rows = []
    for (hardware, model), sub in timed.groupby(["hardware", "model"], sort=False):
        eager = sub[sub["path"] == "eager"]["peak_bytes"]
        if len(eager):
            rows.append((hardware, model, "eager", "eager", float(eager.median())))
        for mode, mine in sub[sub["path"] != "eager"].groupby("mode", sort=False):
            peaks = mine.set_index("path")["peak_bytes"]
            if path := next((p for p in DEPLOYED_PATHS if p in peaks.index), None):
                rows.append((hardware, model, mode, path, float(peaks[path])))
    return pd.DataFrame(rows, columns=columns)


def quotient(a, b) -> float | None:
    return a / b if a and b else None


START_COLUMNS = ["hardware", "model", "mode", "path", "repeat", "status", "reason", "total_s", *START_PARTS,
                 "peak_bytes", "artifact_bytes", "correct", "correctness_rule", "overhead_over_eager_s"]  # fmt: skip


START_PATH_COLUMNS = ["hardware", "model", "mode", "path", "starts", "n", "status", "reason", "total_s",
                      "total_ci95_low", "total_ci95_high", *START_PARTS, "peak_bytes", "artifact_bytes",
                      "artifact_build_s", "correct", "overhead_over_eager_s", "overhead_ci95_low", "overhead_ci95_high",
                      "break_even_calls", "break_even_calls_ci95_low", "break_even_calls_ci95_high"]  # fmt: skip


def starts(records: list[dict]) -> pd.DataFrame:
    """One row per fresh start: its path, repeat, total and parts, artifact, check, and its overhead over eager's
    median start in the same job (`summaries.start_rows`)."""
    rows = [
        {**{k: record[k] for k in ("hardware", "model", "mode")}, **{k: v for k, v in r.items() if k != "parts"},
         **{part: (r.get("parts") or {}).get(part) for part in START_PARTS}}
        for record in records
        for r in summaries.start_rows(record)
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=START_COLUMNS)


def start_paths(records: list[dict], results: list[dict] = ()) -> pd.DataFrame:
    """Each path's summary (`summaries.start_paths`), with the experiment's result for the break-even."""
    by_name = {(r["hardware"], r["model"], r["mode"]): r for r in results}
    rows = [
        row
        for record in records
        for row in summaries.path_summaries(record, by_name.get((record["hardware"], record["model"], record["mode"])))
    ]
    return pd.DataFrame(rows, columns=START_PATH_COLUMNS)
