"""The rows the paper's tables show, each from a tidy table: results, what each model should use, pay-off,
compiler health."""

from __future__ import annotations

import math
import os
import re

import pandas as pd

from ..analysis.comparisons import said
from ..analysis.stats import missing
from ..core.layout import REPORT_OUT
from ..core.modes import ordered
from .verdicts import verdict_in_words


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


# Why a row's verdict is what it is, in a few words: its caveats.
CAVEATS = {
    "steady_state_flagged": "alternating with eager changed its speed",
    "eager_alone_flagged": "eager slowed or sped up beside it",
    "eager_job_flagged": "eager here unlike eager's own job",
    "faults_flagged": "its calls wait on memory mapping (page faults)",
}


def caveats(row: dict) -> list[str]:
    """What a check found about a row, in words: the caveat column of the answer and of Table 1."""
    found = [words for key, words in CAVEATS.items() if row.get(key) is True]
    if isinstance(row.get("level_shift"), str) and row.get("level_shift_side") == "alone":
        found.append("timed alone, its speed changed partway (the speedup does not use that timing)")
    if row.get("set_aside"):
        count = int(row["set_aside"])
        found.append(f"{count} process{'es' if count != 1 else ''} measured again after its speed changed partway")
    return found


def divided(row: dict) -> dict:
    """The mode's and eager's figures a row's speedup divides (`speedup_mode_ms`, `speedup_eager_ms`); a result
    from before the speedup kept them falls back to the pooled medians."""
    if missing(row.get("speedup_mode_ms")):
        return {"median_ms": row.get("median_ms"), "eager_ms": row.get("eager_beside_median_ms")}
    return {"median_ms": row["speedup_mode_ms"], "eager_ms": row.get("speedup_eager_ms")}


def answer(runs: pd.DataFrame, speedups: pd.DataFrame) -> list[dict]:
    """Page 1: per hardware and model, every mode with its median, the eager median its speedup divides by (eager
    timed beside it in its own process), the speedup with its interval, the verdict in words, the cold compile and
    the calls after which compiling pays off; and the mode to use, eager among the candidates."""
    by_mode = {(r["hardware"], r["model"], r["mode"]): r for r in records(speedups)}
    answers = []
    for (hardware, model), frame in runs.groupby(["hardware", "model"], sort=False):
        order = {m: i for i, m in enumerate(ordered(frame["mode"]))}
        rows = []
        for run in sorted(records(frame), key=lambda r: order[r["mode"]]):
            if run["mode"] == "eager":
                verdict = "baseline" if run["status"] == "ok" else run["status"]
                rows.append({**_answer_row(run), "eager_ms": run.get("median_ms"), "speedup": 1.0, "verdict": verdict})
                continue
            row = {**run, **by_mode.get((hardware, model, run["mode"]), {})}
            verdict, why = verdict_in_words(row)
            interval = (row.get("speedup_ci95_low"), row.get("speedup_ci95_high"))
            paid = {} if verdict == "faster" else {"break_even_calls": None}  # no gain to repay a compile
            rows.append({**_answer_row(row), **divided(row), "ci95": interval, "speedup": row.get("speedup"),
                         "verdict": verdict, "why": why, **paid})  # fmt: skip
        calls = frame["one_call"].dropna() if "one_call" in frame else ()
        answers.append({"hardware": hardware, "model": model, "rows": rows, "use": _best(rows),
                        "one_call": calls.iloc[0] if len(calls) else None})  # fmt: skip
    return answers


def _answer_row(row: dict) -> dict:
    return {
        "mode": row["mode"],
        "kind": row.get("mode_kind"),
        "status": row["status"],
        "median_ms": row.get("median_ms"),
        "compile_s": row.get("compile_s") if row["mode"] != "eager" else None,
        "break_even_calls": row.get("break_even_calls"),
        "caveats": caveats(row),
        "how_sure": how_sure(row) if row["mode"] != "eager" and row["status"] == "ok" else None,
        "ci95": (None, None),
        "why": None,
    }


def how_sure(row: dict) -> str:
    """How far to trust a row, in words: the processes it rests on, whether the check that eager beside the mode
    is eager as its own job ran it could judge, and what more measuring would change."""
    count = 0 if missing(row.get("processes")) else int(row["processes"])
    said = [f"{count} process{'es' if count != 1 else ''} a side" if count else "processes unknown"]
    if row.get("eager_job_flagged") is None and not missing(row.get("eager_job_ratio")):
        said.append("too few for the eager-job check")
    elif row.get("eager_job_flagged") is False and not (caveats(row) or row.get("unstable") is True):
        said.append("every check passed")
    if row.get("unstable") is True:
        said.append("rerun on a quiet machine")
    return "; ".join(said)


def _best(rows: list[dict]) -> dict | None:
    """The mode to use: the fastest one found faster than eager with a correct output, else eager; None where no
    eager ran to set the others against."""
    faster = [r for r in rows if r["verdict"] == "faster"]
    eager = [r for r in rows if r["mode"] == "eager" and r["verdict"] == "baseline"]
    return max(faster, key=lambda r: r["speedup"]) if faster else (eager[0] if eager else None)


def pay_off_rows(runs: pd.DataFrame, start_paths: pd.DataFrame | None = None) -> list[dict]:
    """Every compiled run with a break-even count: what compiling costs, each figure named by what it includes
    (the cold and warm compile of the first call; where starts were timed, the cold and warm start from process
    start to first output), and when it is repaid."""
    frame = runs[(runs["status"] == "ok") & runs["break_even_calls"].notna()]
    eager = runs[(runs["mode"] == "eager") & (runs["status"] == "ok")].set_index(["hardware", "model"])["first_call_s"]
    started = {}
    if start_paths is not None and not start_paths.empty:
        ok = start_paths[start_paths["status"] == "ok"]
        started = {(r["hardware"], r["model"], r["mode"], r["path"]): r["total_s"] for r in records(ok)}
    rows = records(frame)
    for row in rows:
        row["eager_first_call_s"] = eager.get((row["hardware"], row["model"]))
        for path in ("cold", "warm"):
            row[f"{path}_start_s"] = started.get((row["hardware"], row["model"], row["mode"], path))
    return rows


# The pay-off table's figures a run may not have timed, each shown only where some row has it, and what it is.
PAY_OFF_OPTIONAL = {
    "compile_warm_s": "warm compiles (measure.warm_start)",
    "compile_bundle_s": "compiles from torch's cache artifacts (measure.bundle_start)",
    "cold_start_s": "cold starts from process start (measure.starts)",
    "warm_start_s": "warm starts from process start (measure.starts)",
}


def pay_off_shown(rows: list[dict]) -> set[str]:
    """The optional pay-off columns some row has a value in: a column no experiment timed is left out (the warm
    break-even with the warm compile it is made from)."""
    return {key for key in PAY_OFF_OPTIONAL if any(row.get(key) is not None for row in rows)}


def pay_off_untimed(shown: set[str]) -> list[str]:
    """What the pay-off table leaves out for want of a value, in words."""
    return [what for key, what in PAY_OFF_OPTIONAL.items() if key not in shown]


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
    """One row per mode that ran: its kind and the settings it ran with, as the results record them; a setting that
    differs between the models it ran on (a jit method chosen per model) shows each value once, joined by " / "."""
    columns = [c for c in runs.columns if c.startswith("mode_")]
    rows = []
    for mode, frame in runs.dropna(subset=["mode_kind"]).groupby("mode", sort=False):
        row = {"mode": mode}
        for column in columns:
            values = list(dict.fromkeys(v for v in frame[column] if not missing(v)))
            row[column] = " / ".join(map(str, values)) if len(values) > 1 else (values[0] if values else None)
        rows.append(row)
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
        row["eager_ms"] = divided({**row, **speedup})["eager_ms"]
        row["caveats"] = caveats({**row, **speedup})
        rows.append(row)
    order = {m: i for i, m in enumerate(ordered(r["mode"] for r in rows))}
    return sorted(rows, key=lambda r: (r["hardware"], r["model"], order[r["mode"]]))


def agreeing_means(summary: pd.DataFrame, speedups: pd.DataFrame) -> list[dict]:
    """The geometric-mean speedups worth stating: a mode's on a hardware entry where every model it averages (ok,
    correct, more than one) got the same verdict, faster or slower; a mean over verdicts that disagree says neither."""
    passed = speedups[(speedups["status"] == "ok") & (speedups["correct"] == True)]  # noqa: E712
    stated = []
    for row in records(summary):
        verdicts = set(
            passed[(passed["hardware"] == row["hardware"]) & (passed["mode"] == row["mode"])]["against_noise"]
        )
        if row["models"] > 1 and len(verdicts) == 1 and verdicts <= {"faster", "slower"}:
            stated.append({**row, "verdict": verdicts.pop()})
    return stated


def correct_counts(runs: pd.DataFrame) -> dict:
    """Section 5 in numbers: outputs checked and passed, the failures, and the graph breaks and recompiles in all."""
    checked = runs[runs["correct"].notna()]
    failed = checked[checked["correct"] == False]  # noqa: E712
    return {
        "checked": len(checked),
        "passed": int((checked["correct"] == True).sum()),  # noqa: E712
        "failed": records(failed),
        "graph_breaks": int(runs["graph_breaks"].fillna(0).sum()),
        "recompiles": int(runs["recompiles"].fillna(0).sum()),
    }


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
    """The ok speedups of modes that passed the correctness check: a wrong answer is no speedup (Section 5 lists
    the others)."""
    return speedups[(speedups["status"] == "ok") & (speedups["correct"] == True)]  # noqa: E712
