"""Against what users deploy instead: per hardware and model that runs a runtime mode (ONNX Runtime, OpenVINO),
eager, the best torch mode and each runtime side by side, each runtime set against the best torch mode."""

from __future__ import annotations

import pandas as pd

from ..analysis import stats
from ..core import kinds
from ..core.records import is_training
from .start_tables import DEPLOYED_PATHS
from .tables import SPEEDUP_COLUMNS

RUNTIME_COLUMNS = [
    "hardware", "model", "mode", "role", "kind", "status", "median_ms", *SPEEDUP_COLUMNS, "compile_s",
    "artifact_bytes", "start_path", "start_s", "start_ci95_low", "start_ci95_high", "correct", "runtime_version",
    "runtime_threads", "runtime_not_as_asked", "vs_torch_mode", "vs_torch_ratio", "vs_torch_ci95_low",
    "vs_torch_ci95_high", "vs_torch_verdict", "reason",
]  # fmt: skip


# The start a deployment of each side makes, where the run timed it (`measure.starts`): eager's own; a runtime's saved
# model; a torch mode's most prepared path.
START_ORDER = {"eager": ("eager",), "runtime": ("package",), "best torch mode": DEPLOYED_PATHS}


def runtimes(
    results: list[dict], speedups: pd.DataFrame, threshold: float, start_paths: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per hardware and model with a runtime mode: eager, the torch mode with the highest speedup among those that
    ran correctly (`best torch mode`), and each runtime mode, with its speedup and verdict over eager as the speedups
    table gives them; each runtime's speedup over the best torch mode's (each measured against eager in its own
    job, so that drift between the jobs cancels), with its interval and verdict (above 1 the runtime is faster); and
    where the run timed starts, each side's from process start to first output (`START_ORDER`)."""
    shown = speedups.set_index(["hardware", "model", "mode"]) if len(speedups) else None
    started = start_paths[start_paths["status"] == "ok"] if start_paths is not None and len(start_paths) else None
    groups: dict[tuple[str, str], list[dict]] = {}  # by hardware and model
    for result in results:
        if not is_training(result):
            groups.setdefault((result["hardware"], result["model"]), []).append(result)
    rows = []
    for group in groups.values():
        runtime_results = [r for r in group if _runtime(r)]
        if not runtime_results:
            continue
        eager = next((r for r in group if r["mode"] == "eager"), None)
        torch_modes = [r for r in group if not _runtime(r) and _kind(r) != "eager" and _usable(r)]
        best = max(torch_modes, key=lambda r: r["speedup"]["value"], default=None)
        for role, result in (("eager", eager), ("best torch mode", best)):
            if result is not None:
                rows.append({**_row(result, role, shown), **_start(started, result, role)})
        for i, result in enumerate(runtime_results):
            row = {**_row(result, "runtime", shown), **_start(started, result, "runtime")}
            if best is not None and _usable(result):
                quotient = stats.speedup(result, seed=2 * i) / stats.speedup(best, seed=2 * i + 1)
                judged = quotient.row(threshold)
                row.update({
                    "vs_torch_mode": best["mode"], "vs_torch_ratio": judged["ratio"],
                    "vs_torch_ci95_low": judged["ratio_ci95_low"], "vs_torch_ci95_high": judged["ratio_ci95_high"],
                    "vs_torch_verdict": judged["verdict"],
                })  # fmt: skip
            rows.append(row)
    return pd.DataFrame(rows, columns=RUNTIME_COLUMNS)


def _start(started: pd.DataFrame | None, result: dict, role: str) -> dict:
    """The side's start from process start to first output on the first path of `START_ORDER` the run timed; eager's
    from any starts job of the model."""
    if started is None:
        return {}
    same = (started["hardware"] == result["hardware"]) & (started["model"] == result["model"])
    rows = started[same & ((started["mode"] == result["mode"]) | (role == "eager"))]
    for path in START_ORDER[role]:
        found = rows[rows["path"] == path]
        if len(found):
            row = found.iloc[0]
            return {"start_path": path, "start_s": row["total_s"], "start_ci95_low": row["total_ci95_low"],
                    "start_ci95_high": row["total_ci95_high"]}  # fmt: skip
    return {}


def _kind(result: dict) -> str | None:
    return (result.get("mode_settings") or {}).get("kind")


def _runtime(result: dict) -> bool:
    """Whether the result's mode runs in a runtime a model is deployed in instead of torch."""
    return bool(result.get("mode_settings")) and kinds.of(result["mode_settings"]).runtime is not None


def _usable(result: dict) -> bool:
    """Measured, with a speedup, and correct: a mode a user could deploy on this evidence."""
    return result["status"] == "ok" and bool(result.get("speedup")) and (result.get("correctness") or {}).get("passed")


def _row(result: dict, role: str, shown: pd.DataFrame | None) -> dict:
    key = (result["hardware"], result["model"], result["mode"])
    preparation = result.get("preparation") or {}
    row = {
        "hardware": key[0], "model": key[1], "mode": key[2], "role": role, "kind": _kind(result),
        "status": result["status"], "runtime_version": (result.get("runtime") or {}).get("version"),
        "runtime_threads": (result.get("runtime") or {}).get("threads"),
        "runtime_not_as_asked": "; ".join((result.get("runtime") or {}).get("not_as_asked") or []) or None,
    }  # fmt: skip
    if result["status"] != "ok":
        return {**row, "reason": (result.get("error") or {}).get("message")}
    row.update({
        "median_ms": result["stats"]["median_ms"],
        "compile_s": result.get("compile_s") if role != "eager" else None,
        "artifact_bytes": preparation.get("artifact_bytes") or preparation.get("package_bytes"),
        "correct": (result.get("correctness") or {}).get("passed"),
    })  # fmt: skip
    if shown is not None and key in shown.index and role != "eager":
        row.update({column: shown.loc[key, column] for column in SPEEDUP_COLUMNS})
    return row


def runtime_findings(table: pd.DataFrame) -> list[str]:
    """One sentence per hardware and model: the best runtime against the best torch mode, with its interval."""
    sentences = []
    judged = table[table["vs_torch_ratio"].notna()]
    for (hardware, model), rows in judged.groupby(["hardware", "model"], sort=False):
        top = rows.loc[rows["speedup"].idxmax()]
        low, high = top["vs_torch_ci95_low"], top["vs_torch_ci95_high"]
        verdict = {"faster": "faster than", "slower": "slower than", "same": "the same, within the threshold, as"}.get(
            top["vs_torch_verdict"], "not detectably different from"
        )
        sentences.append(
            f"On {hardware}, {model}: {top['mode']} ({top['speedup']:.2f}× over eager) is {verdict} "
            f"{top['vs_torch_mode']}, the best torch mode: {top['vs_torch_ratio']:.2f}× ({low:.2f}–{high:.2f})"
            f"{divides(top['speedup'], _best_speedup(table, hardware, model))}."
        )
    return sentences


def _best_speedup(table: pd.DataFrame, hardware: str, model: str) -> float | None:
    best = table[(table["hardware"] == hardware) & (table["model"] == model) & (table["role"] == "best torch mode")]
    return best["speedup"].iloc[0] if len(best) else None


def divides(runtime_speedup, best_speedup) -> str:
    """Which two printed numbers a runtime's ratio to the best torch mode divides: their speedups, each over the
    eager timed beside it (two eagers, so not the quotient of the two medians)."""
    if stats.missing(runtime_speedup) or stats.missing(best_speedup):
        return ""
    return f", its speedup over the eager beside it ({runtime_speedup:.2f}×) over the mode's ({best_speedup:.2f}×)"


VERDICT_WORDS = {"faster": "faster", "slower": "slower", "same": "the same within the threshold"}


def answer_clause(table: pd.DataFrame, hardware: str, model: str, use: str | None) -> str | None:
    """Page 1's word on the runtimes beside the mode it says to use: a runtime it chose, against the best torch mode;
    the best torch mode it chose, against each runtime. None where the model ran no runtime, or eager is chosen."""
    rows = table[(table["hardware"] == hardware) & (table["model"] == model) & table["vs_torch_ratio"].notna()]
    if not len(rows) or use in (None, "eager"):
        return None
    best = _best_speedup(table, hardware, model)

    def said(row) -> str:
        words = VERDICT_WORDS.get(row["vs_torch_verdict"], "no detectable difference")
        return (
            f"{row['vs_torch_ratio']:.2f}× ({row['vs_torch_ci95_low']:.2f}–{row['vs_torch_ci95_high']:.2f}), {words}"
            f"{divides(row['speedup'], best)}"
        )

    chosen = rows[rows["mode"] == use]
    if len(chosen):
        row = chosen.iloc[0]
        return f"Against {row['vs_torch_mode']}, the best torch mode: {said(row)}."
    if use != rows.iloc[0]["vs_torch_mode"]:
        return None
    return "Against it, " + "; ".join(f"{row['mode']} {said(row)}" for _, row in rows.iterrows()) + "."
