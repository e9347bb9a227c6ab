"""The paper's findings in words, each from a tidy table: what each comparison found, with its interval and verdict."""

from __future__ import annotations

import math

import pandas as pd

from ..analysis.comparisons import said
from ..analysis.machine_state import capacity_differs, faults_differ
from ..analysis.stats import missing
from ..core import kinds
from ..core.thresholds import (
    BUSY_SHARE,
)
from .rows import records
from .start_tables import deployed_peaks


def _interval(low, high) -> str:
    if low is None or high is None or any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        return ""
    return f"95% CI {low:.2f}–{high:.2f}"


def settings_findings(effects: pd.DataFrame) -> list[str]:
    """Which settings made the difference: each defined mode against its built-in base, with the interval."""
    findings = []
    for row in records(effects):
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
    if missing(row.get("compile_cold_ratio")):
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
    for row in records(runs[runs["status"] == "ok"]):
        name = f"On {row['hardware']}, {row['model']} in {row['mode']}"
        if row.get("steady_state_flagged") is True:
            findings.append(
                f"{name} is flagged: its interleaved median is {row['steady_state_ratio']:.2f}× its median timed alone "
                f"({_interval(row['steady_state_ci95_low'], row['steady_state_ci95_high'])})."
            )
        if row.get("eager_alone_flagged") is True:
            findings.append(
                f"{name} is flagged: eager interleaved with the mode ran {row['eager_alone_ratio']:.2f}× eager timed "
                "alone before the mode was built "
                f"({_interval(row['eager_alone_ci95_low'], row['eager_alone_ci95_high'])})."
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
    """A mode whose calls map memory afresh: how often, and what it cost (the trust section says once how to time
    it without)."""
    faults, eager = row["mode_faults_per_call"], row["eager_faults_per_call"]
    beside = "the second eager callable beside it" if row["mode"] == "eager" else "eager beside it"
    cost = row.get("ms_per_1000_faults")
    costed = (
        f" Each thousand faults a call cost {cost:.2g} ms "
        f"({_interval(row['ms_per_1000_faults_ci95_low'], row['ms_per_1000_faults_ci95_high'])}), block by block."
        if not missing(cost) and (row.get("ms_per_1000_faults_ci95_low") or 0) > 0  # a cost its blocks could tell
        else ""
    )
    return f"{name} took {faults:,.0f} page faults a call ({beside}: {eager:,.0f}).{costed}"


def eager_job_findings(speedups: pd.DataFrame) -> list[str]:
    """Every speedup whose eager, timed beside the mode, is not the eager the eager job timed alone."""
    flagged = speedups[speedups["eager_job_flagged"] == True] if "eager_job_flagged" in speedups else speedups[:0]  # noqa: E712
    return [
        f"On {row['hardware']}, eager beside {row['model']} in {row['mode']} ran {row['eager_job_ratio']:.2f}× the "
        f"eager job's median ({_interval(row['eager_job_ratio_ci95_low'], row['eager_job_ratio_ci95_high'])}): "
        f"set against the eager job, its speedup of {_times(row['speedup'])} is {_times(row['cross_job_speedup'])}."
        + _capacity_across(row)
        + _faults_apart("in the eager job", row.get("eager_job_faults_per_call"), row.get("eager_faults_per_call"))
        for row in records(flagged)
    ]


def _capacity_within(row: dict) -> str:
    """What the machine's parallel speedup at both ends of the mode's processes says of an eager-alone flag."""
    before, after = row.get("parallel_speedup_before"), row.get("parallel_speedup_after")
    if missing(before) or missing(after):
        return ""
    if capacity_differs(before, after):
        return f" The machine's parallel speedup moved meanwhile ({before:.2f}× → {after:.2f}×): likelier the machine."
    return f" The machine's parallel speedup held ({before:.2f}×, {after:.2f}×)."


def _capacity_across(row: dict) -> str:
    """What the machine's parallel speedup in the mode's and the eager job's processes says of an eager-job flag."""
    mode, job = row.get("parallel_speedup"), row.get("eager_job_parallel_speedup")
    if missing(mode) or missing(job):
        return ""
    if capacity_differs(mode, job):
        return f" The machine's parallel speedup differed ({mode:.2f}× in the mode's job, {job:.2f}× in eager's)."
    return f" The machine's parallel speedup was alike in both jobs ({mode:.2f}×, {job:.2f}×)."


def _faults_apart(where: str, there, beside) -> str:
    """What eager's page faults a call, at another moment (`where`) and beside the mode, say of a flag on eager."""
    if missing(there) or missing(beside) or not faults_differ(there, beside):
        return ""
    return f" Eager took {there:,.0f} page faults a call {where} and {beside:,.0f} beside the mode."


def instability_findings(speedups: pd.DataFrame) -> list[str]:
    """Every speedup whose measurement was unstable: other work kept the machine busy, or the model's noise floor
    is itself a verdict, so its verdict is unclear (unstable) whatever its interval says."""
    unstable = records(speedups[(speedups["unstable"] == True) & (speedups["status"] == "ok")])  # noqa: E712
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


def pay_off_findings(rows: list[dict]) -> list[str]:
    """One sentence per model and hardware: after how many calls each compiled mode pays for itself, cold and
    warm; from the start where its first call is no slower than eager's; never where it saves nothing a call."""
    by_model: dict[tuple, list[str]] = {}
    for r in rows:
        by_model.setdefault((r["hardware"], r["model"]), []).append(_pays_off(r))
    return [f"On {hardware}, {model}: {'; '.join(parts)}." for (hardware, model), parts in by_model.items()]


def _pays_off(r: dict) -> str:
    if math.isinf(r["break_even_calls"]):
        return f"{r['mode']} never pays off (not faster than eager a call)"
    if r["break_even_calls"] == 0:
        return f"{r['mode']} pays off from the start (its first call is no slower than eager's)"
    cold = f"{calls(r['break_even_calls'])} calls cold (95% CI {calls(r['break_even_calls_ci95_low'])}–"
    cold += f"{calls(r['break_even_calls_ci95_high'])})"
    warm = f" and {calls(r['break_even_calls_warm'])} warm" if r.get("break_even_calls_warm") is not None else ""
    return f"{r['mode']} pays off after {cold}{warm}"


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
                if not missing(r.get("overhead_over_eager_s")):
                    part += f", {r['overhead_over_eager_s']:+.2f} s over eager's"
                said.append(part)
                continue
            part = f"{r['path']} {r['total_s']:.2f} s ({_interval(r['total_ci95_low'], r['total_ci95_high'])})"
            if not missing(r.get("overhead_over_eager_s")):
                low, high = r["overhead_ci95_low"], r["overhead_ci95_high"]
                if low <= 0 <= high:
                    part += ", no detectable difference from eager's start"
                else:
                    part += f", {r['overhead_over_eager_s']:+.2f} s over eager's ({_interval(low, high)})"
                if not missing(r.get("break_even_calls")):
                    never = math.isinf(r["break_even_calls"])
                    part += (
                        ", never caught up (the mode saves nothing per call)"
                        if never
                        else (f", caught up after {calls(r['break_even_calls'])} calls")
                    )
            said.append(part)
        sentence = f"On {hardware}, {model} in {mode}, from process start to first output: {'; '.join(said)}."
        probes = [r["isa_probe_s"] for r in rows if r["status"] == "ok" and not missing(r.get("isa_probe_s"))]
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
            for r in records(frame[frame["scope"] == "geomean"])
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
        for r in records(change[change["scope"] == "geomean"])
    )
    regressed = [
        f"{r['hardware']}/{r['model']}/{r['mode']} ({r['regression']})"
        for r in records(experiments)
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


def stream_findings(streams: pd.DataFrame) -> list[str]:
    """Per shape stream and mode: its recompiles, the recompile limit, when it overtook eager over the stream, and
    the stream's total time against eager's, first pass (compiles included) and once compiled."""
    findings = []
    for row in records(streams[(streams["status"] == "ok") & (streams["mode"] != "eager")]):
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


# What a mode's one-off cost is, by kind, in page 1's words: a runtime's is no compile of torch's.


def advice(entry: dict) -> str:
    """One sentence per model and hardware entry: the mode to use, by how much, and after how many calls its
    compile pays; eager where no mode was found faster. A caveat a check found is in the same sentence."""
    use, rows = entry["use"], entry["rows"]
    where = f"{entry['model']} on {entry['hardware']}"
    if use is None:
        return f"{where}: no eager run to set its modes against (" + "; ".join(_mode_said(r) for r in rows) + ")."
    if use["mode"] != "eager":
        low, high = use["ci95"]
        caveat = f"; caveat: {', '.join(use['caveats'])}" if use["caveats"] else ""
        said_ = (
            f"{where}: use {use['mode']}, {use['speedup']:.2f}× as fast as eager "
            f"({use['median_ms']:.2f} against {use['eager_ms']:.2f} ms; 95% CI {low:.2f}–{high:.2f}{caveat})"
        )
        if not missing(use.get("compile_s")):
            cost = kinds.get(use["kind"]).cold_cost_words if use.get("kind") else "cold compile"
            said_ += f"; its {use['compile_s']:.1f} s {cost} pays off after {calls(use['break_even_calls'])} calls"
        return said_ + "."
    others = [r for r in rows if r["mode"] != "eager"]
    if not others:
        return f"{where}: only eager was measured ({use['median_ms']:.2f} ms)."
    return (
        f"{where}: stay with eager ({use['median_ms']:.2f} ms); no mode ran detectably faster: "
        + "; ".join(_mode_said(r) for r in others)
        + "."
    )


def _mode_said(row: dict) -> str:
    """`compile-default 0.62× (slower)`, `jit unclear (its level moved)`, `compile-max-autotune failed`: the
    verdict and why; Table 1 has each mode's caveats."""
    if missing(row.get("speedup")):
        return f"{row['mode']} {row['verdict']}"
    why = f", {row['why']}" if row.get("why") else ""
    return f"{row['mode']} {row['speedup']:.2f}× ({row['verdict']}{why})"


def level_findings(runs: pd.DataFrame) -> list[str]:
    """Each result whose level moved partway through a process and still rests on it (its verdict unclear); and in
    one line, the results whose shifted processes were set aside and measured again."""
    said_, again = [], []
    for row in records(runs[runs["status"] == "ok"]):
        name = f"{row['mode']} for {row['model']} on {row['hardware']}"
        if isinstance(row.get("level_shift"), str) and row.get("level_shift_side") == "alone":
            said_.append(f"{name}: {row['level_shift']}; its steady-state check is unreliable, its speedup stands.")
        elif isinstance(row.get("level_shift"), str):
            said_.append(f"{name}: {row['level_shift']} in the process its figures rest on; its verdict is unclear.")
        elif not missing(row.get("set_aside")) and row["set_aside"] > 0:
            n = int(row["set_aside"])
            again.append(f"{name}{f' ({n} times)' if n > 1 else ''}")
    if again:
        said_.append(
            "Measured again in a fresh process after the level of its calls moved partway through one (the figures "
            f"rest on the process without a shift): {', '.join(again)}."
        )
    return said_


def memory_sentence(figures: list[dict], runs: pd.DataFrame, start_paths: pd.DataFrame | None = None) -> str | None:
    """What the peak-memory figure shows that no table says: the largest peak any mode took over eager's, and where
    the run timed that mode's starts, its peak started alone as it is deployed, against eager's start."""
    number = next((f["number"] for f in figures if f["name"] == "memory"), None)
    if number is None:
        return None
    return _memory_sentence(number, runs) + _started_alone(runs, start_paths)


def _started_alone(runs: pd.DataFrame, start_paths: pd.DataFrame | None) -> str:
    top = _largest_over_eager(runs)
    if start_paths is None or top is None:
        return ""
    row = top[1]
    alone = deployed_peaks(start_paths)
    alone = alone[(alone["hardware"] == row["hardware"]) & (alone["model"] == row["model"])].set_index("mode")
    if "eager" not in alone.index or row["mode"] not in alone.index:
        return ""
    (peak, path), floor = alone.loc[row["mode"], ["peak_bytes", "path"]], alone.loc["eager", "peak_bytes"]
    return (
        f" That figure is each measuring process's peak over its baseline, eager and the mode held at once; started "
        f"alone from its {path} path, as it is deployed, {row['mode']} peaked at {peak / 1e6:.0f} MB against eager's "
        f"start at {floor / 1e6:.0f} MB ({peak / floor:.2f}×)."
    )


def _largest_over_eager(runs: pd.DataFrame) -> tuple[float, dict] | None:
    ok = runs[(runs["status"] == "ok") & runs["peak_memory_bytes"].notna()]
    eager = ok[ok["mode"] == "eager"].set_index(["hardware", "model"])["peak_memory_bytes"]
    ratios = [
        (row["peak_memory_bytes"] / eager[(row["hardware"], row["model"])], row)
        for row in records(ok[ok["mode"] != "eager"])
        if (row["hardware"], row["model"]) in eager.index and eager[(row["hardware"], row["model"])] > 0
    ]
    return max(ratios, key=lambda pair: pair[0]) if ratios else None


def _memory_sentence(number: int, runs: pd.DataFrame) -> str:
    top = _largest_over_eager(runs)
    if top is None:
        return f"Figure {number} shows each mode's peak memory."
    ratio, row = top
    return (
        f"Figure {number} shows each mode's peak memory; the most any mode took over eager's was {row['mode']} for "
        f"{row['model']} on {row['hardware']}, {ratio:.1f}× eager's peak."
    )


def training_findings(training: pd.DataFrame) -> list[str]:
    """Per training experiment and hardware: eager's step, then each mode's step and speedup with its interval and
    verdict, its compile and the steps after which it pays off, its memory against eager's, and whether its losses,
    gradients and weights matched eager's."""
    findings = []
    for hardware, frame in ((key[0], frame) for key, frame in training.groupby(["hardware", "model"], sort=False)):
        rows = records(frame)
        first = rows[0]
        eager = next((r for r in rows if r["mode"] == "eager" and r["status"] == "ok"), None)
        eager_ms = eager["step_ms"] if eager else first.get("eager_step_ms")
        head = f"On {hardware}, {first['train_of']}'s training step ({first['optimizer']}, batch {first['batch_size']})"
        parts = [f"eager {eager_ms:.2f} ms" if not missing(eager_ms) else "eager did not run"]
        parts += [_training_mode(r) for r in rows if r["mode"] != "eager"]
        findings.append(f"{head}: {'; '.join(parts)}.")
    return findings


def _training_mode(r: dict) -> str:
    if r["status"] != "ok":
        return f"{r['mode']} {r['status']} ({str(r.get('reason') or '')[:120]})"
    verdict = "no detectable difference" if r.get("against_noise") == "same" else r.get("against_noise") or "unclear"
    interval = _interval(r.get("speedup_ci95_low"), r.get("speedup_ci95_high"))
    said_speedup = f"{_times(r.get('speedup'))} ({interval}): {verdict}" if interval else verdict
    compiled = ""
    if not missing(r.get("compile_s")):
        compiled = (
            f", its first step compiling {r['compile_s']:.1f} s, paid back after {calls(r['break_even_steps'])} steps"
        )
    memory = "" if missing(r.get("memory_ratio")) else f", eager's step memory {r['memory_ratio']:.2f}× its own"
    checked = "matched eager after its steps" if r.get("correct") is True else f"did not match eager: {r.get('reason')}"
    return f"{r['mode']} {r['step_ms']:.2f} ms, {said_speedup}{compiled}{memory}; {checked}"
