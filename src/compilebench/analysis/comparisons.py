"""Every comparison compilebench states, and the one rule that reads it: faster, slower, same or unclear.

A comparison is a ratio of medians with a 95% interval (`Ratio`), read as a speedup: base over new, so that
above 1 the new side is faster. Its sides are processes' samples, each process timed in interleaved blocks. Within
a process, whole blocks are resampled (a slow stretch of the machine stays in one unit); across processes (each
fresh process lands in its own state, and between processes the variance is larger), the mean of the processes'
values is drawn from Student's t over their spread: the two-level interval (`stats`). With one process a side, it
is that process's block bootstrap.

Speedups over eager and the noise floor (eager against itself) pair the two sides within each process; a mode
effect is the quotient of two jobs' speedups, so that each job's drift cancels in its own ratio first; a platform
against the baseline, and a run against another run (`compilebench compare`), set independent processes side by
side."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import kinds
from ..core.files import read_result
from ..core.modes import MODE_NAMES, base_mode, without_own_setting
from ..core.thresholds import COMPILE_THRESHOLD, MIN_COMPILE_SAMPLES
from .machine_state import unstable_experiments
from .run_folders import by_experiment
from .stats import (
    Timed,
    geometric_mean,
    location_ms,
    resampling,
    speedup,
    timed,
    unpaired,
)

if TYPE_CHECKING:
    import pandas as pd


KEY = ["model", "mode"]


def said(verdict_word: str | None, unstable: bool | None) -> str | None:
    """A verdict as the paper and `compare` print it: an unstable measurement's is `unclear (unstable)`."""
    if verdict_word is None or (isinstance(verdict_word, float) and np.isnan(verdict_word)):
        return None
    return "unclear (unstable)" if unstable == True else verdict_word  # noqa: E712 (a table holds numpy booleans)


COLUMNS = [
    "hardware",
    "baseline_hardware",
    "base_torch",
    "torch",
    "scope",
    "model",
    "mode",
    "experiments",
    "base_median_ms",
    "median_ms",
    "ratio",
    "ratio_ci95_low",
    "ratio_ci95_high",
    "threshold",
    "verdict",
    "unstable",
    "detectable_change",
    "base_processes",
    "processes",
    "interval",
]


def within_run(results: list[dict], baseline: str | None, threshold: float) -> pd.DataFrame:
    """Every platform against the baseline platform, for each model and mode that ran ok on both: one row per
    experiment (`scope` experiment), and the geometric mean per platform and mode (`scope` geomean)."""
    import pandas as pd

    run = by_experiment(results)
    baseline = baseline_of([key[0] for key in run], baseline)
    pairs = {
        key: (run[(baseline, *key[1:])], result)
        for key, result in run.items()
        if key[0] != baseline and _timed(result, run.get((baseline, *key[1:])))
    }
    unstable = unstable_experiments(run, threshold)
    rows = [
        {**row, "baseline_hardware": baseline, "base_torch": _torch(run[(baseline, row["model"], row["mode"])])}
        if row["scope"] == "experiment"
        else {**row, "baseline_hardware": baseline}
        for row in compare_pairs(pairs, threshold, unstable)
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def baseline_of(hardware, baseline: str | None) -> str | None:
    """The hardware the others are set against: `report.baseline_hardware` where it ran, else the first that did."""
    names = list(dict.fromkeys(hardware))
    return baseline if baseline in names else (names[0] if names else None)


def compare_pairs(
    pairs: dict[tuple[str, str, str], tuple[dict, dict]], threshold: float, unstable: set = frozenset()
) -> list[dict]:
    """One row per (hardware, model, mode) pair of base and new results, then the geometric mean per hardware and
    mode. An experiment in `unstable` (on either side) is marked so, and so is a geometric mean that holds one."""
    rows, ratios = [], {}
    for i, (key, (base, new)) in enumerate(pairs.items()):
        ratio = ratios[key] = unpaired(timed(base), timed(new), **resampling(new, i))
        hardware, model, mode = key
        rows.append({
            "hardware": hardware, "scope": "experiment", "model": model, "mode": mode, "experiments": 1,
            "torch": _torch(new), "base_median_ms": location_ms(timed(base)), "median_ms": location_ms(timed(new)),
            "threshold": threshold, **ratio.row(threshold), "unstable": key in unstable,
        })  # fmt: skip
    for hardware, mode in dict.fromkeys((h, m) for h, _, m in pairs):
        keys = [key for key in pairs if (key[0], key[2]) == (hardware, mode)]
        mean = geometric_mean([ratios[key] for key in keys])
        rows.append({
            "hardware": hardware, "scope": "geomean", "model": None, "mode": mode, "experiments": len(keys),
            "torch": _torch(pairs[keys[0]][1]), "base_median_ms": None, "median_ms": None, "threshold": threshold,
            **mean.row(threshold), "unstable": any(key in unstable for key in keys),
        })  # fmt: skip
    return rows


def between_runs(
    base: dict,
    new: dict,
    threshold: float,
    *,
    lost_is_regression: bool = False,
    compile_threshold: float = COMPILE_THRESHOLD,
) -> pd.DataFrame:
    """Each experiment present in both runs: statuses, correctness, the ratio of medians with its interval and
    verdict, and whether it regressed; then the geometric mean per hardware and mode. A status leaving `ok`, or
    a correctness check turning from pass to fail, is a regression whatever the timing; a `slower` verdict is
    one unless either run's measurement of it was unstable. A pair whose experiments differ in what was measured
    (`experiment_difference`) is not comparable: listed with the keys, not compared. With `lost_is_regression`
    (the gate), an experiment of BASE that NEW lacks is a regression too. A compiling mode's cold and warm compile
    times are compared against `compile_threshold` (`compile_times`), and its compiled structure (`structure`): a
    compile-time `slower`, a new graph break or a new recompile is a regression."""
    import pandas as pd

    shared = [key for key in base if key in new]
    differences = {key: experiment_difference(base[key], new[key]) for key in shared}
    comparable = [key for key in shared if not differences[key][0]]
    unstable = unstable_experiments(base, threshold) | unstable_experiments(new, threshold)
    pairs = {key: (base[key], new[key]) for key in comparable if _timed(base[key], new[key])}
    ratios = {(r["hardware"], r["model"], r["mode"]): r for r in compare_pairs(pairs, threshold, unstable)}
    rows = []
    for key in shared:
        before, after = base[key], new[key]
        what, how = differences[key]
        row = ratios.get(key, {"hardware": key[0], "scope": "experiment", "model": key[1], "mode": key[2]})
        compiled = {} if what else {**compile_times(before, after, compile_threshold), **structure(before, after)}
        rows.append({
            **row, "base_torch": _torch(before), "torch": _torch(after),
            "unstable": key in unstable,
            "base_status": before["status"], "status": after["status"],
            "base_correct": _passed(before), "correct": _passed(after),
            **compiled,
            "regression": None if what else _regression(before, after, row, compiled),
            "comparable": not what, "differs_in": "; ".join(what or how) or None,
        })  # fmt: skip
    if lost_is_regression:
        rows += [
            {
                "hardware": key[0],
                "scope": "experiment",
                "model": key[1],
                "mode": key[2],
                "base_torch": _torch(base[key]),
                "base_status": base[key]["status"],
                "status": "missing",
                "base_correct": _passed(base[key]),
                "regression": "missing from NEW",
            }
            for key in base
            if key not in new
        ]
    geomeans = [row for row in ratios.values() if row["scope"] == "geomean"]
    rows += [{**row, "regression": "slower" if _slower(row) else None} for row in geomeans]
    return pd.DataFrame(rows, columns=BETWEEN_COLUMNS)


COMPILE_STARTS = ("cold", "warm")


COMPILE_COLUMNS = [
    f"compile_{start}_{key}"
    for start in COMPILE_STARTS
    for key in ("base_s", "s", "ratio", "ratio_ci95_low", "ratio_ci95_high", "verdict", "samples", "from")
]


STRUCTURE = ("graphs", "graph_breaks", "recompiles")


BETWEEN_COLUMNS = [
    *(c for c in COLUMNS if c != "baseline_hardware"),
    *("base_status", "status", "base_correct", "correct"),
    *COMPILE_COLUMNS,
    *(f"{side}{key}" for key in STRUCTURE for side in ("base_", "")),
    "structure_change",
    *("regression", "comparable", "differs_in"),
]


def compile_samples(result: dict) -> dict[str, list[float]]:
    """A compiling result's cold starts (its first process's first call; every process's with
    `measure.cold_processes`) and warm starts (its later processes', or
    the start its job made from the caches the cold one left), in seconds (a runtime's: its export or conversion and
    session or compile); none for a mode that does not compile."""
    settings = result.get("mode_settings")
    if not settings or not kinds.of(settings).starts or result["status"] != "ok":
        return {"cold": [], "warm": []}
    processes = result.get("processes") or [result]
    warm = result.get("compile_warm_samples_s") or [result.get("compile_warm_s")]
    return {
        "cold": result.get("compile_cold_samples_s") or [s for s in (processes[0].get("compile_s"),) if s is not None],
        "warm": [s for s in warm if s is not None],
    }


def start_samples(result: dict) -> dict[str, list[float]]:
    """A result's cold and warm starts from process start to first output (its run's starts job, which
    `run_results` attaches as `start_rows`), in seconds; none where it has none."""
    rows = [r for r in result.get("start_rows") or [] if r["status"] == "ok"]
    return {start: [r["total_s"] for r in rows if r["path"] == start] for start in COMPILE_STARTS}


def compile_times(before: dict, after: dict, threshold: float) -> dict:
    """Each start's compile time, BASE's over NEW's median (below 1: NEW compiles slower), with an interval over
    the fresh starts and a verdict against `threshold` where each side has MIN_COMPILE_SAMPLES of them; else
    `unclear (n samples)` beside the ratio of medians."""
    row: dict[str, Any] = {}
    samples = (compile_samples(before), compile_samples(after))
    starts = (start_samples(before), start_samples(after))
    for start in COMPILE_STARTS:
        a, b, source = starts[0][start], starts[1][start], "process start to first output"
        if not a or not b:  # both sides must be timed alike: else their first calls
            a, b, source = samples[0][start], samples[1][start], "first call"
        if not a or not b:
            continue
        prefix = f"compile_{start}_"
        row.update({f"{prefix}base_s": float(np.median(a)), f"{prefix}s": float(np.median(b)),
                    f"{prefix}samples": min(len(a), len(b)), f"{prefix}from": source})  # fmt: skip
        if min(len(a), len(b)) < MIN_COMPILE_SAMPLES:
            row.update({f"{prefix}ratio": float(np.median(a) / np.median(b)),
                        f"{prefix}verdict": f"unclear ({min(len(a), len(b))} samples)"})  # fmt: skip
            continue
        ratio = unpaired([Timed(np.asarray([x])) for x in a], [Timed(np.asarray([x])) for x in b], seed=0).row(
            threshold
        )
        row.update({f"{prefix}{key}": ratio[key] for key in ("ratio", "ratio_ci95_low", "ratio_ci95_high", "verdict")})
    return row


def structure(before: dict, after: dict) -> dict:
    """What each run compiled (graphs, graph breaks, recompiles), and how that changed, with the new reasons."""
    a, b = before.get("compiler") or {}, after.get("compiler") or {}
    row = {f"{side}{key}": r.get(key) for key in STRUCTURE for side, r in (("base_", a), ("", b))}
    changes = []
    for key in STRUCTURE:
        if a.get(key) is not None and b.get(key) is not None and a[key] != b[key]:
            reasons = {"graph_breaks": "graph_break_reasons", "recompiles": "recompile_reasons"}.get(key)
            gained = [r for r in (b.get(reasons) or []) if r not in (a.get(reasons) or [])] if reasons else []
            why = f" ({'; '.join(str(r)[:120] for r in gained[:3])})" if gained else ""
            changes.append(f"{key.replace('_', ' ')} {a[key]} → {b[key]}{why}")
    row["structure_change"] = "; ".join(changes) or None
    return row


# What a result says was measured: a pair that differs in any of these is not the same experiment. The rest of
# `measure` says how precisely it was measured: listed, and compared.
WHAT_WAS_MEASURED = ("device", "task", "dtype", "batch_size", "swept", "spec", "mode_settings", "measure.fullgraph")


SETTINGS = tuple(dict.fromkeys(key.split(".")[0] for key in WHAT_WAS_MEASURED))  # the records read, `measure` too


def experiment_difference(before: dict, after: dict) -> tuple[list[str], list[str]]:
    """How two runs' results of one experiment name differ: in what was measured (`key before → after`), and in
    how precisely. Where the fingerprints differ and a result does not record one of its settings (a result of
    an earlier version has no `spec`), what was measured cannot be vouched for: that is a difference too."""
    if before.get("experiment_sha256") == after.get("experiment_sha256"):
        return [], []
    recorded = [key for key in SETTINGS if key in before and key in after]
    unrecorded = [
        f"{key} (not recorded by {side})" for key in SETTINGS for side, r in (("BASE", before), ("NEW", after))
        if key not in r
    ]  # fmt: skip
    a, b = (_flat({key: result[key] for key in recorded}) for result in (before, after))
    changed = [key for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)]
    what, how = [], []
    for key in changed:
        names_what = any(key == w or key.startswith(f"{w}.") for w in WHAT_WAS_MEASURED)
        (what if names_what else how).append(f"{key} {a.get(key)} → {b.get(key)}")
    if not what and not how:
        what = ["the fingerprint (experiment_sha256) alone"]
    return what + unrecorded, how


def _flat(settings: dict, prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys."""
    flat = {}
    for key, value in settings.items():
        name = f"{prefix}{key}"
        flat.update(_flat(value, f"{name}.") if isinstance(value, dict) and value else {name: value})
    return flat


def change_against(previous: list[str | Path], current: list[dict], threshold: float) -> pd.DataFrame:
    """This run's results against a previous run's result files (`report.compare_with`); empty without one."""
    import pandas as pd

    if not previous:
        return pd.DataFrame(columns=BETWEEN_COLUMNS)
    return between_runs(by_experiment(read_result(p) for p in previous), by_experiment(current), threshold)


def _timed(before: dict | None, after: dict | None) -> bool:
    return bool(
        before
        and after
        and before["status"] == after["status"] == "ok"
        and before.get("latency_ms")
        and after.get("latency_ms")
    )


def _torch(result: dict) -> str | None:
    return (result.get("environment") or {}).get("torch")


def _passed(result: dict) -> bool | None:
    return (result.get("correctness") or {}).get("passed")


def _slower(row: dict) -> bool:
    return row.get("verdict") == "slower" and row.get("unstable") is not True


def _regression(before: dict, after: dict, ratio: dict, compiled: dict) -> str | None:
    """Why an experiment regressed, or None: each reason, where there are several."""
    if before["status"] == "ok" and after["status"] != "ok":
        return f"status ok → {after['status']}"
    if _passed(before) is True and _passed(after) is False:
        return "correctness pass → fail"
    reasons = ["slower"] if _slower(ratio) else []
    reasons += [
        f"{start} compile slower" for start in COMPILE_STARTS if compiled.get(f"compile_{start}_verdict") == "slower"
    ]
    for key in ("graph_breaks", "recompiles"):
        if (compiled.get(key) or 0) > (compiled.get(f"base_{key}") or 0):
            reasons.append(f"{key.replace('_', ' ')} {compiled[f'base_{key}']} → {compiled[key]}")
    return "; ".join(reasons) or None


def regressions(table: pd.DataFrame) -> pd.Series:
    """Which rows regressed: their `regression` says why (a table read back, or mixed with None, holds NaN)."""

    return table["regression"].map(lambda why: isinstance(why, str) and bool(why)).astype(bool)  # empty: still bool


MODE_EFFECT_COLUMNS = [
    "hardware", "model", "mode", "base_mode", "differs_in", "ratio", "ratio_ci95_low", "ratio_ci95_high",
    "threshold", "verdict", "unstable", "detectable_change", "processes", "interval", "speedup", "base_speedup",
    *COMPILE_COLUMNS, "compile_threshold",
]  # fmt: skip


def _base_of(result: dict, run: dict[tuple[str, str, str], dict]) -> str | None:
    """The mode a defined one is set against: for a quantized mode the same definition without its quantization,
    for a regional one the same compiled whole (whichever mode of the run that is; a regional one without such a
    mode, its built-in base), else its built-in base mode."""
    settings = result.get("mode_settings") or {}
    plain = without_own_setting(settings)
    if plain is not None:
        same = [
            key[2]
            for key, other in run.items()
            if key[:2] == (result["hardware"], result["model"]) and other.get("mode_settings") == plain
        ]
        if same or settings.get("quantize"):
            return same[0] if same else None
    return base_mode(settings)


def mode_effects(
    results: list[dict], runs: pd.DataFrame, threshold: float, differs_in: Callable[[dict, dict], str]
) -> pd.DataFrame:
    """What a defined mode's settings changed: its speedup over eager against its base mode's (same model and
    hardware; for a quantized mode the same mode unquantized, for a regional one the same compiled whole), each
    measured against eager within its own job, so that what drifts between the two jobs cancels in each job's own
    ratio first; and, between two compiling modes, the base's compile times over the mode's (`compile_times`).
    `differs_in` says, of two rows of the runs table, in which settings their modes differ."""
    import pandas as pd

    run = by_experiment(results)
    ok = {key: result for key, result in run.items() if result["status"] == "ok" and result.get("speedup")}
    unstable = unstable_experiments(run, threshold)
    rows_of = {(r["hardware"], r["model"], r["mode"]): r for r in runs.to_dict("records")}
    rows = []
    for i, ((hardware, model, mode), result) in enumerate(ok.items()):
        base_key = (hardware, model, _base_of(result, run))
        eager_base = base_key[2] == "eager" and (run.get(base_key) or {}).get("status") == "ok"
        if mode in MODE_NAMES or not (base_key in ok or eager_base):
            continue
        mine = speedup(result, seed=2 * i)
        # Against eager itself, the effect is the speedup interleaved with eager in the same process.
        theirs = None if eager_base else speedup(ok[base_key], seed=2 * i + 1)
        compiled = {} if eager_base else compile_times(ok[base_key], result, COMPILE_THRESHOLD)
        rows.append({
            "hardware": hardware, "model": model, "mode": mode, "base_mode": base_key[2],
            "differs_in": differs_in(rows_of[(hardware, model, mode)], rows_of[base_key]),
            "threshold": threshold, **(mine if theirs is None else mine / theirs).row(threshold),
            "unstable": bool({(hardware, model, mode), base_key} & unstable),
            "speedup": mine.value, "base_speedup": 1.0 if theirs is None else theirs.value,
            **compiled, "compile_threshold": COMPILE_THRESHOLD if compiled else None,
        })  # fmt: skip
    return pd.DataFrame(rows, columns=MODE_EFFECT_COLUMNS)
