"""What compiling did: each compile's phases from torch's own metrics, and each run's top operators."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ..core.files import read_results
from ..core.records import unexplained_s

COMPILE_PHASE_COLUMNS = ["hardware", "model", "mode", "start", "phase", "seconds", "start_s"]


def compile_phases(paths: list[str | Path]) -> pd.DataFrame:
    """One row per phase of each compiled run's starts: the cold compile, and the warm and bundle starts where
    they ran; `unexplained` is what the phases leave of the start's first call (`start_s`)."""
    rows = []
    for result in read_results(paths):
        if result["status"] != "ok":
            continue
        starts = {"cold": (result.get("compile_s"), result.get("compile_phases"))}
        for name, start in (result.get("warm_starts") or {}).items():
            if isinstance(start, dict):
                starts[name] = (start["first_call_s"], start["compile_phases"])
        for start, (start_s, phases) in starts.items():
            if not phases or start_s is None:
                continue
            seconds = {**phases, "unexplained": unexplained_s(start_s, phases)}
            for phase, value in seconds.items():
                rows.append({**{k: result[k] for k in ("hardware", "model", "mode")}, "start": start,
                             "phase": phase, "seconds": value, "start_s": start_s})  # fmt: skip
    return pd.DataFrame(rows, columns=COMPILE_PHASE_COLUMNS)


def top_ops(paths: list[str | Path], per_run: int = 10) -> pd.DataFrame:
    """The profiled runs' top operators by self time, one row per operator."""
    rows = []
    for result in read_results(paths):
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
