"""The paper: a jinja2 template filled from the tidy tables, as self-contained HTML and as PDF."""

from __future__ import annotations

import base64
import math
import os
import re
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from ..analysis.comparisons import capacity_differs, faults_differ, said
from ..configuration.config import measure_settings
from ..core.files import atomic_write, read_json, sha256_of
from ..core.layout import ASSETS_DIR, FIGURE_NAMES, REPORT_OUT
from ..core.modes import ordered
from ..core.thresholds import (
    BUSY_SHARE,
    CAPACITY_SHIFT,
    COSINE_MIN,
    FAULTS_PER_CALL,
    FLOAT32_REL_TOL,
    FLOAT64_MULTIPLIER,
    FLOAT64_TOL,
)
from .tables import unbacked_fast_math


def _interval(low, high) -> str:
    if low is None or high is None or any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        return ""
    return f"95% CI {low:.2f}–{high:.2f}"


def effect_findings(speedups: pd.DataFrame) -> tuple[list[str], str | None]:
    """The abstract's lead: every speedup over eager of a correct mode that its interval calls faster or slower, the
    largest effect first whichever its direction (a 2× slowdown before a 1.5× speedup); and the rest, the same as
    eager or unclear, in one sentence."""
    rows = [r for r in _records(_correct(speedups)) if not _nan(r.get("speedup"))]
    verdicts = {id(r): said(r["against_noise"], r.get("unstable")) for r in rows}
    effects = sorted(
        (r for r in rows if verdicts[id(r)] in ("faster", "slower")), key=lambda r: -abs(math.log(r["speedup"]))
    )
    findings = [_effect(r) for r in effects]
    same = [f"{r['mode']} for {r['model']} on {r['hardware']}" for r in rows if verdicts[id(r)] == "same"]
    unclear = [
        f"{r['mode']} for {r['model']} on {r['hardware']} ({_speedup_against_noise(r)})"
        for r in rows
        if verdicts[id(r)] not in ("faster", "slower", "same")
    ]
    parts = [f"the same as eager for {', '.join(same)}"] if same else []
    parts += [f"unclear for {', '.join(unclear)}"] if unclear else []
    return findings, (f"No other mode changed the latency detectably: {'; '.join(parts)}." if parts else None)


def _correct(speedups: pd.DataFrame) -> pd.DataFrame:
    """The ok speedups of modes that passed the correctness check: a wrong answer is no speedup (Section 4 lists
    the others)."""
    return speedups[(speedups["status"] == "ok") & (speedups["correct"] == True)]  # noqa: E712


def _effect(row: dict) -> str:
    """`compile-max-autotune made resnet18 2.30× slower on cpu (speedup 0.43×, 95% CI …)`."""
    detail = f"{_interval(row['speedup_ci95_low'], row['speedup_ci95_high'])}{_noise_floor(row)}{_processes(row)}"
    if row["speedup"] >= 1:
        return f"{row['mode']} made {row['model']} {row['speedup']:.2f}× faster on {row['hardware']} ({detail})."
    return (
        f"{row['mode']} made {row['model']} {1 / row['speedup']:.2f}× slower on {row['hardware']} "
        f"(speedup {row['speedup']:.2f}×, {detail})."
    )


def at_a_glance(speedups: pd.DataFrame) -> list[dict]:
    """Per hardware and model: its best correct mode and its worst, each with its speedup over eager, interval and
    verdict."""
    rows = []
    timed = _correct(speedups).dropna(subset=["speedup"])
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


def _speedup_against_noise(row: dict) -> str:
    """`0.98× (95% CI …; noise floor …; 3 processes): same`, `faster` or `slower` than eager beyond the band of
    `same`, or `unclear`, with what the interval could have detected."""
    interval = _interval(row["speedup_ci95_low"], row["speedup_ci95_high"])
    verdict = said(row["against_noise"], row.get("unstable"))
    if verdict in ("faster", "slower"):
        verdict = f"{verdict} than eager"
    detectable = row.get("detectable_change")
    could = "" if _nan(detectable) else f"; could detect ≥ {detectable:.0f} %"
    return f"{row['speedup']:.2f}× ({interval}{_noise_floor(row)}{_processes(row)}{could}): {verdict}"


def _processes(row: dict) -> str:
    n = row.get("processes")
    return "" if _nan(n) else f"; {int(n)} process{'es' if n != 1 else ''}"


def _nan(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _noise_floor(row: dict) -> str:
    floor = _interval(row.get("noise_ci95_low"), row.get("noise_ci95_high"))
    return f"; noise floor {floor.removeprefix('95% CI ')}" if floor else ""


def settings_findings(effects: pd.DataFrame) -> list[str]:
    """Which settings made the difference: each defined mode against its built-in base, with the interval."""
    findings = []
    for row in _records(effects):
        interval = _interval(row["ratio_ci95_low"], row["ratio_ci95_high"])
        verdict = said(row["verdict"], row.get("unstable"))
        if verdict == "same":
            within = f"within ±{row['threshold']:.0%}"
            change = f"ran as fast as {row['base_mode']} {within} ({row['ratio']:.2f}×, {interval}): same"
        else:
            change = f"ran {row['ratio']:.2f}× as fast as {row['base_mode']} ({interval}): {verdict}"
        findings.append(
            f"On {row['hardware']}, {row['mode']} ({row['differs_in']}) {change} for {row['model']}; "
            f"over eager, {_times(row['speedup'])} against {_times(row['base_speedup'])}{_compile_effect(row)}."
        )
    return findings


def _compile_effect(row: dict) -> str:
    """A defined mode's cold compile against its base's, with its interval and verdict where there are samples."""
    if _nan(row.get("compile_cold_ratio")):
        return ""
    seconds = f"{row['compile_cold_s']:.1f} s against {row['compile_cold_base_s']:.1f} s"
    interval = _interval(row.get("compile_cold_ratio_ci95_low"), row.get("compile_cold_ratio_ci95_high"))
    verdict = row.get("compile_cold_verdict")
    within = f", within ±{row['compile_threshold']:.0%}" if verdict == "same" else ""
    shown = f"{interval}: {verdict}{within}" if interval else str(verdict)
    ratio = f"{row['base_mode']}'s over this mode's {row['compile_cold_ratio']:.2f}×"
    return f"; a cold compile took {seconds} ({ratio}, {shown})"


def fidelity_findings(runs: pd.DataFrame) -> list[str]:
    """Every result whose own checks say it may not show the mode as its users run it: interleaving with eager
    changed the mode's median (the steady-state check), the mode's presence changed eager's (the eager-alone
    check), its calls mapped memory afresh (the page-fault check), or a setting did not take effect in what inductor
    made."""
    findings = []
    for row in _records(runs[runs["status"] == "ok"]):
        name = f"On {row['hardware']}, {row['model']} in {row['mode']}"
        if row.get("steady_state_flagged") is True:
            findings.append(
                f"{name} is flagged: its interleaved median is {row['steady_state_ratio']:.2f}× its median timed alone "
                f"({_interval(row['steady_state_ci95_low'], row['steady_state_ci95_high'])}), so interleaving with "
                "eager changed what it measured; read its speedup with care."
            )
        if row.get("eager_alone_flagged") is True:
            findings.append(
                f"{name} is flagged: eager interleaved with the mode ran {row['eager_alone_ratio']:.2f}× eager timed "
                f"alone in the same process before the mode was built "
                f"({_interval(row['eager_alone_ci95_low'], row['eager_alone_ci95_high'])}): the mode's presence or the "
                "machine's state between the two moved eager, and only the interleaved speedup sets both sides "
                "against each other at the same moments."
                + _capacity_within(row)
                + _faults_apart("alone", row.get("eager_alone_faults_per_call"), row.get("eager_faults_per_call"))
            )
        if row.get("faults_flagged") is True:
            findings.append(_faulting(name, row))
        if row.get("settings_took_effect") is False:
            findings.append(
                f"{name}: a setting did not take effect in what inductor produced ({row['settings_effect']})."
            )
    return findings


def _faulting(name: str, row: dict) -> str:
    """A mode whose calls map memory afresh: how often, what it cost, and how to time it without."""
    faults, eager = row["mode_faults_per_call"], row["eager_faults_per_call"]
    beside = "the second eager callable beside it" if row["mode"] == "eager" else "eager beside it"
    cost = row.get("ms_per_1000_faults")
    costed = (
        f" Here each thousand faults a call cost {cost:.2g} ms "
        f"({_interval(row['ms_per_1000_faults_ci95_low'], row['ms_per_1000_faults_ci95_high'])}), block by block."
        if not _nan(cost) and (row.get("ms_per_1000_faults_ci95_low") or 0) > 0  # a cost its blocks could tell
        else ""
    )
    return (
        f"{name} took {faults:,.0f} page faults a call ({beside}: {eager:,.0f}): each call maps memory afresh "
        "that the previous call gave back, so its time holds the state of the process's memory allocator, "
        f"which differs between processes and moments.{costed} To time the mode without it, set the allocator in the "
        "hardware entry's env (glibc: MALLOC_MMAP_MAX_ at 0 and a large MALLOC_TRIM_THRESHOLD_; or LD_PRELOAD of "
        "jemalloc or tcmalloc)."
    )


def eager_job_findings(speedups: pd.DataFrame) -> list[str]:
    """Every speedup whose eager, timed beside the mode, is not the eager the eager job timed alone."""
    flagged = speedups[speedups["eager_job_flagged"] == True] if "eager_job_flagged" in speedups else speedups[:0]  # noqa: E712
    return [
        f"On {row['hardware']}, eager beside {row['model']} in {row['mode']} ran {row['eager_job_ratio']:.2f}× the "
        f"eager job's median ({_interval(row['eager_job_ratio_ci95_low'], row['eager_job_ratio_ci95_high'])}), so "
        f"its speedup of {_times(row['speedup'])} is not what a user who runs one or the other sees: set against the "
        f"eager job, it is {_times(row['cross_job_speedup'])}."
        + _capacity_across(row)
        + _faults_apart("in the eager job", row.get("eager_job_faults_per_call"), row.get("eager_faults_per_call"))
        for row in _records(flagged)
    ]


def _capacity_within(row: dict) -> str:
    """What the machine's parallel speedup at both ends of the mode's processes says of an eager-alone flag."""
    before, after = row.get("parallel_speedup_before"), row.get("parallel_speedup_after")
    if _nan(before) or _nan(after):
        return ""
    if capacity_differs(before, after):
        return (
            f" The machine's parallel speedup moved within its processes ({before:.2f}× before eager was first timed, "
            f"{after:.2f}× after the interleaved timing): the machine's state is the likelier cause."
        )
    return f" The machine's parallel speedup held at both ends of its processes ({before:.2f}×, {after:.2f}×)."


def _capacity_across(row: dict) -> str:
    """What the machine's parallel speedup in the mode's and the eager job's processes says of an eager-job flag."""
    mode, job = row.get("parallel_speedup"), row.get("eager_job_parallel_speedup")
    if _nan(mode) or _nan(job):
        return ""
    if capacity_differs(mode, job):
        return (
            f" The machine gave a parallel speedup of {mode:.2f}× in the mode's processes and {job:.2f}× in the eager "
            "job's: the machine's state differed between the two jobs."
        )
    return f" The machine's parallel speedup was alike in both jobs ({mode:.2f}×, {job:.2f}×)."


def _faults_apart(where: str, there, beside) -> str:
    """What eager's page faults a call, at another moment (`where`) and beside the mode, say of a flag on eager."""
    if _nan(there) or _nan(beside) or not faults_differ(there, beside):
        return ""
    return (
        f" Eager took {there:,.0f} page faults a call {where} and {beside:,.0f} beside the mode: the state of the "
        "memory allocator differed between the two, and eager's time with it."
    )


def instability_findings(speedups: pd.DataFrame) -> list[str]:
    """Every speedup whose measurement was unstable: other work kept the machine busy, or the model's noise floor
    is itself a verdict, so its verdict is unclear (unstable) whatever its interval says."""
    unstable = _records(speedups[(speedups["unstable"] == True) & (speedups["status"] == "ok")])  # noqa: E712
    if not unstable:
        return []
    names = ", ".join(f"{r['model']} in {r['mode']} on {r['hardware']}" for r in unstable)
    return [
        f"Unstable measurements: {names}. Other work used more than {BUSY_SHARE:.0%} of the machine's CPU time while "
        "they measured, or "
        "their model's noise floor (eager against itself) was itself faster or slower; their verdicts are unclear "
        "(unstable): rerun them on a quiet machine."
    ]


def calls(value) -> str:
    """A break-even count in words: `never` for infinity, a rounded whole number otherwise."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return "never" if math.isinf(value) else f"{value:,.0f}"


def pay_off_rows(runs: pd.DataFrame) -> list[dict]:
    """Every compiled run with a break-even count: what its start costs, cold and warm, and when it is repaid."""
    frame = runs[(runs["status"] == "ok") & runs["break_even_calls"].notna()]
    eager = runs[(runs["mode"] == "eager") & (runs["status"] == "ok")].set_index(["hardware", "model"])["first_call_s"]
    rows = _records(frame)
    for row in rows:
        row["eager_first_call_s"] = eager.get((row["hardware"], row["model"]))
    return rows


def pay_off_findings(rows: list[dict]) -> list[str]:
    """One sentence per compiled run: after how many calls compiling pays for itself, cold and warm."""
    findings = []
    for r in rows:
        name = f"On {r['hardware']}, {r['model']} in {r['mode']}"
        if math.isinf(r["break_even_calls"]):
            findings.append(f"{name} never pays off: it is not faster than eager per call.")
            continue
        if r["break_even_calls"] == 0:
            findings.append(f"{name} starts no slower than eager's own first call, so it pays off from the start.")
            continue
        cold = f"{calls(r['break_even_calls'])} calls cold (95% CI {calls(r['break_even_calls_ci95_low'])}–"
        cold += f"{calls(r['break_even_calls_ci95_high'])})"
        warm = ""
        if r.get("break_even_calls_warm") is not None:
            warm = f" and {calls(r['break_even_calls_warm'])} warm"
        findings.append(f"{name} pays off after {cold}{warm}.")
    return findings


def start_findings(paths: pd.DataFrame) -> list[str]:
    """One sentence per experiment with starts: each path's start against eager's, with intervals, and when it has
    caught up; the paths that could not start, with why."""
    findings = []
    for (hardware, model, mode), sub in paths.groupby(["hardware", "model", "mode"], sort=False):
        rows = sub.to_dict("records")
        eager = next((r for r in rows if r["path"] == "eager" and r["status"] == "ok"), None)
        said = [f"eager's start took {eager['total_s']:.2f} s"] if eager else []
        for r in rows:
            if r["path"] == "eager":
                continue
            if r["status"] != "ok":
                said.append(f"{r['path']} was {r['status']} ({r['reason']})")
                continue
            if r["n"] < 2 or not eager or eager["n"] < 2:  # one start a side: a median, no interval
                part = f"{r['path']} {r['total_s']:.2f} s (one start: no interval)"
                if not _nan(r.get("overhead_over_eager_s")):
                    part += f", {r['overhead_over_eager_s']:+.2f} s over eager's"
                said.append(part)
                continue
            part = f"{r['path']} {r['total_s']:.2f} s ({_interval(r['total_ci95_low'], r['total_ci95_high'])})"
            if not _nan(r.get("overhead_over_eager_s")):
                low, high = r["overhead_ci95_low"], r["overhead_ci95_high"]
                if low <= 0 <= high:
                    part += ", no detectable difference from eager's start"
                else:
                    part += f", {r['overhead_over_eager_s']:+.2f} s over eager's ({_interval(low, high)})"
                if not _nan(r.get("break_even_calls")):
                    never = math.isinf(r["break_even_calls"])
                    part += (
                        ", never caught up (the mode saves nothing per call)"
                        if never
                        else (f", caught up after {calls(r['break_even_calls'])} calls")
                    )
            said.append(part)
        sentence = f"On {hardware}, {model} in {mode}, from process start to first output: {'; '.join(said)}."
        probes = [r["isa_probe_s"] for r in rows if r["status"] == "ok" and not _nan(r.get("isa_probe_s"))]
        if probes and max(probes) >= 0.5:
            sentence += (
                f" Up to {max(probes):.1f} s of a start was inductor probing the CPU's vector instructions (it compiles"
                " test programs into its cache folder): a deployment that ships that folder skips it."
            )
        findings.append(sentence)
    return findings


def depth_findings(depth: pd.DataFrame) -> list[str]:
    """Per line of the depth sweep: how the cold compile grew per layer, with its interval, and the cold compile and
    speedup at its shallowest and deepest points."""
    findings = []
    for (model, hardware, mode), line in depth.groupby(["sweep_of", "hardware", "mode"], sort=False):
        first, last = line.iloc[0], line.iloc[-1]
        shallow, deep = int(first["num_hidden_layers"]), int(last["num_hidden_layers"])
        slope = first["slope_s_per_layer"]
        interval = _interval(first["slope_ci95_low"], first["slope_ci95_high"])
        trend = f"{slope:+.2f} s per layer ({interval or 'no interval: too few starts and depths'})"
        if interval and first["slope_ci95_low"] <= 0 <= first["slope_ci95_high"]:
            trend += ", no detectable growth"
        findings.append(
            f"On {hardware}, {mode}'s cold compile of {model} went from {first['compile_s']:.1f} s at "
            f"{shallow} layers to {last['compile_s']:.1f} s at {deep}: "
            f"{trend}; its speedup over eager from {_times(first['speedup'])} to {_times(last['speedup'])}."
        )
    return findings


def scaling_findings(scaling: pd.DataFrame) -> list[str]:
    """How each compiled mode's speedup moves across a sweep, from its first swept value to its last: the last
    speedup over the first, with its interval and verdict (`faster`: the speedup grew)."""
    findings = []
    compiled = scaling[(scaling["mode"] != "eager") & scaling["speedup"].notna()]
    for (model, hardware, mode, series), line in compiled.groupby(
        ["sweep_of", "hardware", "mode", "series"], sort=False, dropna=False
    ):
        if len(line) < 2:
            continue
        first, last = line.iloc[0], line.iloc[-1]
        swept = first["swept"].replace("_", " ")
        where = f" ({series})" if isinstance(series, str) and series else ""
        change = ""
        if isinstance(last.get("change_verdict"), str):
            change = (
                f": {last['change']:.2f}× the first ({_interval(last['change_ci95_low'], last['change_ci95_high'])}), "
                f"{last['change_verdict']}"
            )
        findings.append(
            f"On {hardware}, {mode}'s speedup on {model}{where} went from {first['speedup']:.2f}× "
            f"({_interval(first['speedup_ci95_low'], first['speedup_ci95_high'])}) at {swept} {first['value']} to "
            f"{last['speedup']:.2f}× ({_interval(last['speedup_ci95_low'], last['speedup_ci95_high'])}) at "
            f"{swept} {last['value']}{change}."
        )
    return findings


def comparison_findings(comparison: pd.DataFrame) -> list[str]:
    """One sentence per hardware entry: how its experiments compare with the baseline's, and the geometric means."""
    findings = []
    for hardware, frame in comparison.groupby("hardware", sort=False):
        experiments = frame[frame["scope"] == "experiment"]
        counts = experiments["verdict"].value_counts()
        tally = (
            f"faster in {counts.get('faster', 0)}, slower in {counts.get('slower', 0)}, the same in "
            f"{counts.get('same', 0)} and unclear in {counts.get('unclear', 0)}{_unstable_count(experiments)}"
        )
        means = "; ".join(
            f"{r['mode']} {r['ratio']:.2f}× ({_interval(r['ratio_ci95_low'], r['ratio_ci95_high'])}, {r['verdict']})"
            for r in _records(frame[frame["scope"] == "geomean"])
        )
        first = frame.iloc[0]
        torches = ""
        versions = (first.get("torch"), first.get("base_torch"))
        if all(isinstance(v, str) for v in versions) and versions[0] != versions[1]:
            torches = f" (torch {first['torch']} against {first['base_torch']})"
        findings.append(
            f"Against {first['baseline_hardware']}, {hardware}{torches} was {tally} of {len(experiments)} "
            f"experiments (a ratio counts as the same within 1 ± {frame['threshold'].iloc[0]:g}); geometric mean per "
            f"mode: {means}."
        )
    return findings


def change_findings(change: pd.DataFrame, previous: str) -> list[str]:
    """What changed against the previous run: the verdicts counted, the geometric means, every regression named."""
    experiments = change[change["scope"] == "experiment"]
    if experiments.empty:
        return []
    counts = experiments["verdict"].value_counts()
    means = "; ".join(
        f"{r['mode']} on {r['hardware']} {r['ratio']:.2f}× ({_interval(r['ratio_ci95_low'], r['ratio_ci95_high'])}, "
        f"{r['verdict']})"
        for r in _records(change[change["scope"] == "geomean"])
    )
    regressed = [
        f"{r['hardware']}/{r['model']}/{r['mode']} ({r['regression']})"
        for r in _records(experiments)
        if isinstance(r["regression"], str)
    ]
    return [
        f"Against the run in {previous}, of the {len(experiments)} experiments both runs hold, "
        f"{counts.get('faster', 0)} were faster, {counts.get('slower', 0)} slower, {counts.get('same', 0)} the same "
        f"and {counts.get('unclear', 0)} unclear{_unstable_count(experiments)} "
        f"({experiments['verdict'].isna().sum()} not timed on both sides); "
        f"geometric mean per mode: {means or 'none timed on both sides'}.",
        f"Regressions: {', '.join(regressed)}." if regressed else "No experiment regressed.",
    ]


def _unstable_count(experiments: pd.DataFrame) -> str:
    """` (2 of them measured unstably, not to be trusted)`, or nothing."""
    count = int((experiments["unstable"] == True).sum()) if "unstable" in experiments else 0  # noqa: E712
    return f" ({count} of them measured unstably, not to be trusted)" if count else ""


def _times(value) -> str:
    return "–" if value is None else f"{value:.2f}×"


def unguarded(runs: pd.DataFrame) -> list[dict]:
    """Each model whose memory guard had no activation estimate (it could not refuse a shape too large), and why."""
    if "memory_estimate_unavailable" not in runs:
        return []
    missing = runs.dropna(subset=["memory_estimate_unavailable"]).drop_duplicates(["hardware", "model"])
    return _records(missing[["hardware", "model", "memory_estimate_unavailable"]])


def capped(runs: pd.DataFrame) -> list[dict]:
    """Each run measured less than its settings ask, because a cap applied (`max_iterations`), and how."""
    if "measurement_caps" not in runs:
        return []
    return _records(runs.dropna(subset=["measurement_caps"])[["hardware", "model", "mode", "measurement_caps"]])


def compile_traces(runs: pd.DataFrame) -> list[dict]:
    """Each run's tlparse report of its compile (`measure.compile_trace`), by its path relative to the paper."""
    if "compile_trace_report" not in runs:
        return []
    traced = runs.dropna(subset=["compile_trace_report"])
    return [
        {**row, "link": os.path.relpath(row["compile_trace_report"], REPORT_OUT)}
        for row in _records(traced[["hardware", "model", "mode", "compile_trace_report"]])
    ]


def stream_findings(streams: pd.DataFrame) -> list[str]:
    """Per shape stream and mode: its recompiles, the recompile limit, when it overtook eager over the stream, and
    the stream's total time against eager's, first pass (compiles included) and once compiled."""
    findings = []
    for row in _records(streams[(streams["status"] == "ok") & (streams["mode"] != "eager")]):
        name = f"On {row['hardware']}, {row['model']} in {row['mode']}"
        over = f"over {row['calls']} calls of {row['distinct']} distinct {row['axis']} values"
        compiled = f"compiled {row['compiles']} time(s), {row['recompiles']} of them recompiles, {over}"
        if row["overtakes_eager_at_call"] is not None:
            paid = f"its cumulative time fell below eager's after call {int(row['overtakes_eager_at_call'])}"
        else:
            paid = "its cumulative time never fell below eager's"
        limit = ""
        if row["limit_reached"]:
            limit = (
                f"; it hit Dynamo's recompile limit at call {int(row['limit_call'])}, and "
                f"{int(row['calls_after_limit_uncompiled'])} later call(s) at values never compiled ran eagerly"
            )
        findings.append(
            f"{name} {compiled}{limit}; {paid}. The stream took {row['total_s']:.2f} s against eager's "
            f"{row['eager_total_s']:.2f} s ({_times(row['total_speedup'])}), and once compiled "
            f"{row['steady_total_s']:.3f} s against {row['eager_steady_total_s']:.3f} s "
            f"({_times(row['steady_speedup'])})."
        )
    return findings


def quantization_rows(runs: pd.DataFrame, effects: pd.DataFrame) -> list[dict]:
    """Each quantized run beside its baseline, the same mode unquantized: the effect with its interval and verdict,
    the speedup over eager, weight bytes before and after, the share quantized, and its correctness."""
    if "mode_quantize" not in runs:
        return []
    effect_of = {(r["hardware"], r["model"], r["mode"]): r for r in _records(effects)}
    rows = []
    for run in _records(runs[runs["mode_quantize"].notna()]):
        effect = effect_of.get((run["hardware"], run["model"], run["mode"])) or {}
        rows.append({**run, **{f"effect_{column}": effect.get(column) for column in effects.columns}})
    return rows


def mode_table(runs: pd.DataFrame) -> list[dict]:
    """One row per mode that ran: its kind and the settings it ran with, as the results record them."""
    columns = [c for c in runs.columns if c.startswith("mode_")]
    rows = _records(runs.dropna(subset=["mode_kind"])[["mode", *columns]].drop_duplicates())
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
    by_key = {(r["hardware"], r["model"], r["mode"]): r for r in _records(speedups)}
    rows = []
    for row in _records(runs):
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


def package_versions(envs: list[dict]) -> dict:
    """Package versions per platform, one column per group of platforms that ran the same ones (each
    platform with its own Python environment has its own)."""
    groups: dict[tuple, list[str]] = {}
    for record in envs:
        if record.get("packages"):
            groups.setdefault(tuple(sorted(record["packages"].items())), []).append(record["hardware"])
    names = sorted({name for versions in groups for name, _ in versions})
    columns = [dict(versions) for versions in groups]
    return {"platforms": list(groups.values()), "rows": [(n, [c.get(n) for c in columns]) for n in names]}


def fast_math_note(record: dict) -> str | None:
    """Say plainly when a CPU fast-math mode was asked for on a CPU that cannot do it natively."""
    mode = (record.get("kernel_env") or {}).get("DNNL_DEFAULT_FPMATH_MODE")
    if not mode or record["device"] != "cpu" or not record.get("cpu"):
        return None
    if unbacked_fast_math(mode, record["cpu"]["bf16_native"], record["device"]):
        return (
            f"DNNL_DEFAULT_FPMATH_MODE={mode} was requested, but this CPU has no native bf16 instructions: "
            "its results are not a measurement of bf16 fast math."
        )
    return f"DNNL_DEFAULT_FPMATH_MODE={mode} (native bf16: {', '.join(record['cpu']['bf16_flags']) or 'none'})."


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


def _records(frame: pd.DataFrame) -> list[dict]:
    return [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
        for row in frame.to_dict("records")
    ]


def _data_uri(path: Path) -> str:
    mime = {"svg": "image/svg+xml", "png": "image/png"}[path.suffix.lstrip(".")]
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode()}"


def _caption(path: Path) -> Markup:
    """A caption file's text for the paper, its ``literals`` (reStructuredText, as Snakemake's report reads them)
    set as code."""
    text = str(escape(" ".join(Path(path).read_text().split())))
    return Markup(re.sub(r"``(.+?)``", r"<code>\1</code>", text))


def asset_checksums(config: dict) -> list[dict]:
    rows = []
    for name, entry in config.get("assets", {}).get("files", {}).items():
        path = ASSETS_DIR / name
        actual = sha256_of(path) if path.exists() else None
        rows.append({"name": name, "url": entry["url"], "expected": entry["sha256"], "actual": actual})
    return rows


def context(
    tables: dict[str, Path],
    figures: list[Path],
    captions: list[Path],
    env_records: list[Path],
    config: dict,
    command: str,
) -> dict:
    """Everything the template shows, from the tables, figures and records the paper's rule declares."""
    runs = pd.read_csv(tables["runs"])
    speedups = pd.read_csv(tables["speedups"])
    summary = pd.read_csv(tables["summary"])
    limits = pd.read_csv(tables["limits"])
    top_ops = pd.read_csv(tables["top_ops"])
    hardware_costs = pd.read_csv(tables["hardware_costs"])
    effects = pd.read_csv(tables["mode_effects"])
    scaling = pd.read_csv(tables["scaling"])
    comparison = pd.read_csv(tables["comparison"])
    change = pd.read_csv(tables["change"])
    streams = pd.read_csv(tables["streams"])
    depth = pd.read_csv(tables["compile_depth"])
    start_paths = pd.read_csv(tables["start_paths"])
    previous = (config.get("report") or {}).get("compare_with")
    pay_off = pay_off_rows(runs)
    envs = [read_json(p) for p in env_records]
    published = config.get("published") or {}
    by_name = {Path(f).stem: Path(f) for f in figures}
    caption_of = {Path(c).stem: Path(c) for c in captions}
    not_ok = runs[runs["status"] != "ok"].to_dict("records")
    effects_found, nothing_else = effect_findings(speedups)
    return {
        "glance": at_a_glance(speedups),
        "title": config.get("title", "compilebench"),
        "authors": config.get("authors", ""),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "findings": effects_found
        + settings_findings(effects)
        + ([nothing_else] if nothing_else else [])
        + scaling_findings(scaling)
        + fidelity_findings(runs)
        + eager_job_findings(speedups)
        + instability_findings(speedups),
        "scaling": _records(scaling),
        "quantized": quantization_rows(runs, effects),
        "streams": _records(streams),
        "stream_findings": stream_findings(streams),
        "compile_traces": compile_traces(runs),
        "comparison": _records(comparison),
        "comparison_findings": comparison_findings(comparison),
        "compare_with": previous,
        "change": _records(change),
        "pay_off": pay_off,
        "pay_off_findings": pay_off_findings(pay_off),
        "starts": _records(start_paths),
        "start_findings": start_findings(start_paths),
        "depth": _records(depth),
        "depth_findings": depth_findings(depth),
        "change_findings": change_findings(change, previous) if previous else [],
        "modes": mode_table(runs),
        "summary": summary.to_dict("records"),
        "counts": runs["status"].value_counts().to_dict(),
        "jobs": len(runs),
        "hardware": [{**e, "fast_math_note": fast_math_note(e)} for e in envs],
        "limits": _records(limits),
        "cluster": cluster_jobs(runs),
        "time_goes": where_time_goes(runs, top_ops),
        "measures": {model: measure_settings(config, model) for model in config["models"]},
        "costs": _records(hardware_costs.dropna(subset=["cost_per_million"])),
        "dtypes": sorted(runs["dtype"].dropna().unique()),
        "cosine_min": COSINE_MIN,
        "capacity_shift": CAPACITY_SHIFT,
        "faults_per_call": FAULTS_PER_CALL,
        "float32_rel_tol": FLOAT32_REL_TOL,
        "float64_multiplier": FLOAT64_MULTIPLIER,
        "float64_tol": FLOAT64_TOL,
        "figures": [
            {"number": i + 1, "name": name, "src": _data_uri(by_name[name]), "caption": _caption(caption_of[name])}
            for i, name in enumerate(n for n in reading_order(not scaling.empty) if n in by_name)
        ],
        "results": (results := results_rows(runs, speedups, published)),
        "correctness_rules": correctness_rules(results),
        "published": published,
        "published_rows": [
            r
            for r in results
            if any(r[f"published_{k}"] is not None for k in ("median_ms", "compile_s", "tokens_per_s"))
        ],
        "compiler": runs.to_dict("records"),
        "not_ok": not_ok,
        "unguarded": unguarded(runs),
        "capped": capped(runs),
        "config_blocks": yaml_blocks(config),
        "command": command,
        "code": sorted(
            {
                (e["code"]["commit"] or "unknown") + (" (uncommitted changes)" if e["code"]["dirty"] else "")
                for e in envs
            }
        ),
        "packages": package_versions(envs),
        "assets": asset_checksums(config),
        "env_blocks": {e["hardware"]: yaml_blocks(e) for e in envs},
    }


class _PlainDumper(yaml.SafeDumper):
    """YAML as a reader reads it: a value shared by two keys is written out at each, not as an alias."""

    def ignore_aliases(self, data) -> bool:
        return True


# The mappings of entries the appendix keeps apart, each entry in one block that a column does not split.
ENTRY_BLOCKS = ("models", "hardware", "mode_definitions")


def yaml_blocks(record: dict) -> list[str]:
    """`record` as YAML, in blocks of whole keys: a top-level key each, and each entry of a long mapping apart."""

    def dump(value) -> str:
        return yaml.dump(value, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=100)

    blocks = []
    for key, value in record.items():
        if (
            key in ENTRY_BLOCKS
            and isinstance(value, dict)
            and value
            and all(isinstance(v, dict) for v in value.values())
        ):
            entries = [dump({name: entry}) for name, entry in value.items()]
            indented = ["".join(f"  {line}\n" for line in entry.splitlines()) for entry in entries]
            blocks += [f"{key}:\n{indented[0]}", *indented[1:]]
        elif blocks and "\n" not in (text := dump({key: value})).rstrip("\n") and _one_liners(blocks[-1]):
            blocks[-1] += text  # consecutive one-line keys share a block
        else:
            blocks.append(dump({key: value}))
    return [block.rstrip("\n") for block in blocks]


def _one_liners(block: str) -> bool:
    """A block of top-level keys of one line each."""
    return all(line and not line.startswith((" ", "-")) for line in block.rstrip("\n").split("\n"))


# The figures the paper places in sections of their own after the main results, in the order they appear there.
LATER_FIGURES = ("scaling", "streams", "pay_off", "starts", "compile_depth", "comparison")


def reading_order(with_scaling: bool) -> list[str]:
    """The figures in the order a reader meets them (their numbers): the main results', then each later section's;
    the scaling figure only where a model is swept."""
    later = [name for name in LATER_FIGURES if with_scaling or name != "scaling"]
    return [name for name in FIGURE_NAMES if name not in LATER_FIGURES] + later


def render_html(ctx: dict, template: Path, css: Path) -> str:
    template = Path(template)
    environment = Environment(
        loader=FileSystemLoader(template.parent),
        autoescape=select_autoescape(["html", "j2"]),
        undefined=StrictUndefined,
    )
    environment.filters["calls"] = calls
    environment.filters["num"] = lambda v, digits=2: (
        "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"
    )
    return environment.get_template(template.name).render(**ctx, css=Path(css).read_text())


def write(ctx: dict, out: str | Path, template: Path, css: Path) -> None:
    """The paper as self-contained HTML, or as PDF when `out` ends in .pdf."""
    html = render_html(ctx, template, css)
    if str(out).endswith(".pdf"):
        from weasyprint import HTML

        atomic_write(out, lambda handle: HTML(string=html, base_url=str(Path(template).parent)).write_pdf(handle))
    else:
        atomic_write(out, lambda handle: handle.write(html.encode()))
