"""Tidy tables from result files: one row per job, one column per variable."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..analysis import comparisons, stats, summaries
from ..analysis.comparisons import DEFAULT_THRESHOLD, baseline_of, busy, detectable_change, verdict
from ..core.errors import UserError
from ..core.files import read_results
from ..core.modes import COMPILING_KINDS
from ..core.peaks import computed_lookup, lookup
from ..core.records import COMPILE_PHASES, CONFIG_SWEEP_KEYS, START_PARTS, SWEEP_KEYS

IDENTITY = ["hardware", "model", "mode", "task", "device", "dtype", "batch_size"]
# The model a sweep point belongs to, and the swept settings that are not identity columns already.
SWEEP_COLUMNS = ["sweep_of", *(key for key in SWEEP_KEYS if key not in IDENTITY)]
CEILING_DTYPES = ("float32", "bfloat16", "float16")
PREPARATION_COLUMNS = ["isa_probe_s", "first_call_s", "script_s", "export_s", "package_s", "load_s", "package_bytes"]
SAMPLE_KEYS = ["hardware", "model", "mode", "dtype", "batch_size", *SWEEP_COLUMNS]
MEASURE_COLUMNS = [
    "processes",
    "warmup",
    "iterations",
    "min_time_s",
    "interleave_block",
    "interleave_block_s",
    "block_warmup",
    "min_blocks",
    "fullgraph",
    "private_cache",
    "warm_start",
    "bundle_start",
    "timeout_s",
    "profile",
]


def _alone_check_columns(key: str, result: dict) -> dict:
    """A check of an interleaved median against the same side timed alone (`steady_state`, `eager_alone`)."""
    check = result.get(key) or {}
    low, high = check.get("ci95") or [None, None]
    return {
        f"{key}_median_ms": check.get("median_ms"),
        f"{key}_ratio": check.get("ratio"),
        f"{key}_ci95_low": low,
        f"{key}_ci95_high": high,
        f"{key}_flagged": check.get("flagged"),
    }


def capacity_columns(result: dict) -> dict:
    """The machine's parallel speedup at both ends of the result's processes (`comparisons.parallel_capacity`)."""
    capacity = comparisons.parallel_capacity(result) or {}
    return {
        "parallel_speedup_before": capacity.get("before"),
        "parallel_speedup_after": capacity.get("after"),
        "capacity_shifted": capacity.get("shifted"),
    }


def fault_columns(result: dict) -> dict:
    """Page faults per call of the mode's and eager's interleaved calls (`summaries.page_faults`), and what a thousand
    of them a call cost the mode where it took enough to be flagged."""
    faults = result.get("page_faults") or {}
    cost = faults.get("ms_per_1000") or {}
    low, high = cost.get("ci95") or [None, None]
    return {
        "mode_faults_per_call": faults.get("mode_per_call"),
        "eager_faults_per_call": faults.get("eager_per_call"),
        "eager_alone_faults_per_call": faults.get("eager_alone_per_call"),
        "faults_flagged": faults.get("flagged"),
        "ms_per_1000_faults": cost.get("slope"),
        "ms_per_1000_faults_ci95_low": low,
        "ms_per_1000_faults_ci95_high": high,
    }


def _run_row(result: dict, path: str) -> dict:
    stats = result.get("stats", {})
    speedup = result.get("speedup", {})
    check = result.get("correctness", {})
    compiler = result.get("compiler", {})
    generation = result.get("generation", {})
    ci = stats.get("ci95_ms") or [None, None]
    speedup_ci = speedup.get("ci95") or [None, None]
    noise = result.get("noise") or {}
    noise_ci = noise.get("ci95") or [None, None]
    interleave = result.get("interleave") or {}
    effect_checks = (result.get("settings_effect") or {}).get("checks") or {}
    error = result.get("error") or {}
    environment = result.get("environment") or {}
    ceilings = environment.get("ceilings") or {}
    computed = environment.get("computed_peak") or {}
    workload = result.get("workload", {})
    preparation = result.get("preparation", {})
    return {
        **{key: result.get(key) for key in IDENTITY},
        **sweep_columns(result),
        **mode_columns(result.get("mode_settings") or {}),
        "device_name": environment.get("device_name"),
        "torch": environment.get("torch"),
        "threads": environment.get("threads"),
        "bf16_native": environment.get("bf16_native"),
        "fpmath_mode": environment.get("fpmath_mode"),
        "host": environment.get("hostname"),
        **{f"measured_tflops_{dtype}": ceilings.get("tflops", {}).get(dtype) for dtype in CEILING_DTYPES},
        "measured_memory_bandwidth_gbs": ceilings.get("memory_bandwidth_gbs"),
        "computed_peak_per_core_tflops_float32": ((computed.get("per_core_tflops") or {}).get("float32")),
        "computed_peak_source": computed.get("source"),
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
        "compile_warm_s": result.get("compile_warm_s"),
        "compile_warm_starts": len(result.get("compile_warm_samples_s") or []) or None,
        "compile_bundle_s": result.get("compile_bundle_s"),
        **{f"compile_{phase}_s": (result.get("compile_phases") or {}).get(phase) for phase in COMPILE_PHASES},
        "compile_unexplained_s": result.get("compile_unexplained_s"),
        **{key: preparation.get(key) for key in PREPARATION_COLUMNS},
        "samples_per_s": result.get("throughput", {}).get("samples_per_s"),
        "tokens_per_s": generation.get("tokens_per_s"),
        "ttft_ms": generation.get("ttft_ms"),
        "decode_tokens_per_s": generation.get("decode_tokens_per_s"),
        "peak_memory_bytes": result.get("memory", {}).get("peak_bytes"),
        "memory_estimate_unavailable": result.get("memory", {}).get("estimate_unavailable"),
        "speedup": speedup.get("value"),
        "speedup_ci95_low": speedup_ci[0],
        "speedup_ci95_high": speedup_ci[1],
        "processes": len(result.get("processes") or []) or None,
        "machine_busy": busy(result) if result.get("processes") else None,
        "machine_others_share": max(
            ((p.get("machine") or {}).get("others_share") or 0.0 for p in result.get("processes") or []), default=None
        ),
        **capacity_columns(result),
        "noise_ratio": noise.get("ratio"),
        "noise_ci95_low": noise_ci[0],
        "noise_ci95_high": noise_ci[1],
        **_alone_check_columns("steady_state", result),
        **_alone_check_columns("eager_alone", result),
        **fault_columns(result),
        **{f"interleave_{key}": interleave.get(key) for key in ("eager_block", "mode_block", "blocks")},
        "measurement_caps": "; ".join(interleave.get("caps") or []) or None,
        "settings_took_effect": all(c["took_effect"] for c in effect_checks.values()) if effect_checks else None,
        "settings_effect": "; ".join(f"{name}: {c['evidence']}" for name, c in effect_checks.items()) or None,
        "correct": check.get("passed"),
        "cosine": check.get("cosine"),
        "max_abs_err": check.get("max_abs_err"),
        "top1_agreement": check.get("top1_agreement"),
        "tokens_match": check.get("tokens_match"),
        "token_agreement": check.get("token_agreement"),
        "first_token_disagreement": check.get("first_disagreement"),
        "float64_rmse": check.get("float64_rmse"),
        "eager_float64_rmse": check.get("eager_float64_rmse"),
        "correctness_rule": check.get("criterion"),
        "compile_trace_report": (result.get("compile_trace") or {}).get("report"),
        "graphs": compiler.get("graphs"),
        "graph_breaks": compiler.get("graph_breaks"),
        "recompiles": compiler.get("recompiles"),
        "regions": _regions(result.get("regions")),
        "compute_dtype": workload.get("compute_dtype"),
        "flops_per_call": workload.get("flops_per_call"),
        "parameter_bytes": workload.get("parameter_bytes"),
        **quantization_columns(result.get("quantization") or {}),
        **{f"measure_{key}": result.get("measure", {}).get(key) for key in MEASURE_COLUMNS},
        "started_at": result.get("started_at"),
        "finished_at": result.get("finished_at"),
        "result_file": str(path),
    }


def _regions(record: dict | None) -> str | None:
    """A regional compile's stack in words: `model.layers: 8 × LlamaDecoderLayer, compiled block by block`."""
    if not record:
        return None
    how = "as one nested region" if record["how"] == "nested" else "block by block"
    return f"{record['path']}: {record['blocks']} × {record['block_class']}, compiled {how}"


def quantization_columns(record: dict) -> dict:
    """What quantizing a mode's copy of the model did: weight bytes before and after, the share quantized, and the
    inductor settings torchao changed on the way."""
    changed = record.get("inductor_changed") or {}
    return {
        "weight_bytes": record.get("weight_bytes"),
        "weight_bytes_quantized": record.get("weight_bytes_quantized"),
        "quantized_share": record.get("quantized_share"),
        "quantized_types": ", ".join(record.get("tensor_types") or []) or None,
        "torchao": record.get("torchao"),
        "torchao_inductor_changes": "; ".join(f"{k}: {v['after']}" for k, v in sorted(changed.items())) or None,
    }


def sweep_columns(result: dict) -> dict:
    """The model a sweep point belongs to, and its swept shape values (batch size and dtype are always columns)."""
    swept = result.get("swept") or {}
    return {"sweep_of": result.get("sweep_of"), **{key: swept.get(key) for key in SWEEP_COLUMNS[1:]}}


def mode_columns(settings: dict) -> dict:
    """The settings a mode ran with, one column each, so that two modes that differ in one option tell apart."""
    options = settings.get("options")
    return {
        "mode_kind": settings.get("kind"),
        "mode_backend": settings.get("backend"),
        "mode_compile_mode": settings.get("mode"),
        "mode_options": json.dumps(options, sort_keys=True) if options else None,
        "mode_dynamic": settings.get("dynamic"),
        "mode_fullgraph": settings.get("fullgraph"),
        "mode_jit_method": settings.get("method"),
        "mode_quantize": (settings.get("quantize") or {}).get("method"),
        "mode_mark_dynamic": ", ".join(settings.get("mark_dynamic") or []) or None,
        "mode_recompile_limit": settings.get("recompile_limit"),
        "mode_regional": settings.get("regional"),
    }


def runs_table(
    paths: list[str | Path], expected: dict[str, dict[str, str]] | None = None, downstream: list[str | Path] = ()
) -> pd.DataFrame:
    """One row per job, from exactly the result files given (the current config's), each checked against the
    identity `expected` gives for its path (`results.read_results`)."""
    results = read_results(paths, expected, downstream)
    rows = [_run_row(result, str(path)) for path, result in zip(paths, results)]
    first_calls = {
        (r["hardware"], r["model"]): (r.get("preparation") or {}).get("first_call_s")
        for r in results
        if r["mode"] == "eager" and r["status"] == "ok"
    }
    for row, result in zip(rows, results):
        row.update(break_even_columns(result, first_calls.get((result["hardware"], result["model"]))))
    return pd.DataFrame(rows, columns=[*_run_row({"status": "ok"}, "").keys(), *BREAK_EVEN_COLUMNS])


BREAK_EVEN_COLUMNS = [
    f"break_even_calls{start}{end}" for start in ("", "_warm") for end in ("", "_ci95_low", "_ci95_high")
]


def break_even_columns(result: dict, eager_first_call_s: float | None) -> dict:
    """After how many calls compiling has paid for itself, cold and warm: (compile time less eager's own first
    call) over what a call saves, from the interleaved samples; inf (never) where the mode saves nothing."""
    columns = dict.fromkeys(BREAK_EVEN_COLUMNS)
    if result["status"] != "ok" or not result.get("eager_latency_ms") or eager_first_call_s is None:
        return columns
    saved, saved_ci95 = comparisons.saving_ms(result)
    for start, compile_s in (("", result.get("compile_s")), ("_warm", result.get("compile_warm_s"))):
        if compile_s is not None:
            value, (low, high) = stats.break_even(compile_s - eager_first_call_s, saved, saved_ci95)
            columns.update({f"break_even_calls{start}": value, f"break_even_calls{start}_ci95_low": low,
                            f"break_even_calls{start}_ci95_high": high})  # fmt: skip
    return columns


def latency_samples(paths: list[str | Path]) -> pd.DataFrame:
    """One row per timed iteration of every job that produced samples."""
    frames = []
    for result in read_results(paths):
        samples = result.get("latency_ms") or []
        if samples:
            frame = pd.DataFrame({"iteration": range(len(samples)), "latency_ms": samples})
            for key, value in {**{k: result.get(k) for k in SAMPLE_KEYS[:5]}, **sweep_columns(result)}.items():
                frame.insert(len(frame.columns) - 2, key, value)
            frames.append(frame)
    columns = [*SAMPLE_KEYS, "iteration", "latency_ms"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


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
            seconds = {**phases, "unexplained": start_s - sum(phases.values())}
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


def limits(runs: pd.DataFrame, peak_overrides: dict[str, dict | None]) -> pd.DataFrame:
    """How close each run came to its device's limits: the ceiling its environment job measured on the device
    (`fraction_of_measured`) and, where known, the datasheet's or config's peak (`fraction_of_peak`).

    Text generation reads every weight once per decode step, so its limit is memory bandwidth:
    parameter bytes x decode steps per second. Other models report FLOP/s against FLOP/s
    in the dtype the arithmetic ran in.
    """
    rows = []
    for run in runs[runs["status"] == "ok"].to_dict("records"):
        threads = _int_or_none(run.get("threads"))
        peak = lookup(run.get("device_name"), peak_overrides.get(run["hardware"]), threads)
        per_core = run.get("computed_peak_per_core_tflops_float32")
        if peak is None and per_core is not None and not pd.isna(per_core):
            peak = computed_lookup(run.get("device_name"), per_core, run["computed_peak_source"], threads)
        row = {k: run.get(k) for k in ("hardware", "model", "mode", "device_name", "compute_dtype")}
        if run["task"] == "text-generation":
            steps_per_s = (run.get("decode_tokens_per_s") or float("nan")) / run["batch_size"]
            achieved, limit = run["parameter_bytes"] * steps_per_s / 1e9, (peak or {}).get("memory_bandwidth_gbs")
            measured = run.get("measured_memory_bandwidth_gbs")
            row.update(metric="memory bandwidth", unit="GB/s")
        else:
            achieved = (
                run["flops_per_call"] / (run["median_ms"] / 1e3) / 1e12 if run.get("flops_per_call") else float("nan")
            )
            dtype = run.get("compute_dtype") or "float32"
            limit = (peak or {}).get("tflops", {}).get(dtype)
            measured = run.get(f"measured_tflops_{dtype}")
            row.update(metric="compute", unit="TFLOP/s")
        measured = None if measured is None or pd.isna(measured) else measured
        row.update(
            achieved=achieved,
            measured=measured,
            fraction_of_measured=achieved / measured if measured else None,
            above_measured=bool(measured) and achieved > measured,  # the ceiling does not bound this run
            peak=limit,
            fraction_of_peak=achieved / limit if limit else None,
            above_peak=bool(limit) and achieved > limit,
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
        "measured",
        "fraction_of_measured",
        "above_measured",
        "peak",
        "fraction_of_peak",
        "above_peak",
        "peak_device",
        "peak_source",
    ]
    return pd.DataFrame(rows, columns=columns)


def unbacked_fast_math(fpmath_mode, bf16_native, device) -> bool:
    """oneDNN's BF16 fast math asked for on a CPU without native bf16: its numbers are not a fast-math result."""
    return isinstance(fpmath_mode, str) and fpmath_mode.upper() == "BF16" and bf16_native is False and device == "cpu"


def _int_or_none(value) -> int | None:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else int(value)


def scaling(runs: pd.DataFrame, results: list[dict] = (), threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """Per swept model, hardware and mode: latency, throughput and speedup at each value of the swept setting, and
    each compiled point's speedup against the line's first point (`change`, with its interval and verdict, from
    the `results` where given).

    `swept` names the first setting whose value varies across the model's points (the x axis); the others
    that vary make up `series` (one line each), such as `image_size=224`.
    """
    rows = []
    swept_runs = runs[runs["sweep_of"].notna() & (runs["status"] == "ok")]
    for (model, hardware), frame in swept_runs.groupby(["sweep_of", "hardware"], sort=False):
        varying = [key for key in SWEEP_KEYS if frame[key].nunique(dropna=True) > 1] or ["batch_size"]
        for run in frame.to_dict("records"):
            rows.append({
                "sweep_of": model, "hardware": hardware, "mode": run["mode"], "point": run["model"],
                "swept": varying[0], "value": run[varying[0]],
                "series": ", ".join(f"{key}={run[key]}" for key in varying[1:]),
                "median_ms": run["median_ms"], "ci95_low_ms": run["ci95_low_ms"], "ci95_high_ms": run["ci95_high_ms"],
                "samples_per_s": run["samples_per_s"], "tokens_per_s": run["tokens_per_s"], "speedup": run["speedup"],
                "speedup_ci95_low": run["speedup_ci95_low"], "speedup_ci95_high": run["speedup_ci95_high"],
                "correct": run["correct"],
            })  # fmt: skip
    columns = ["sweep_of", "hardware", "mode", "point", "swept", "value", "series", "median_ms", "ci95_low_ms",
               "ci95_high_ms", "samples_per_s", "tokens_per_s", "speedup", "speedup_ci95_low", "speedup_ci95_high",
               "correct"]  # fmt: skip
    table = pd.DataFrame(rows, columns=columns)
    table = table.sort_values(["sweep_of", "hardware", "mode", "series", "value"], kind="stable").reset_index(drop=True)
    return _with_changes(table, comparisons.by_experiment(results), threshold)


DEPTH_RUN_COLUMNS = ("speedup", "speedup_ci95_low", "speedup_ci95_high", "graphs", "correct")
DEPTH_COLUMNS = [
    "sweep_of", "hardware", "mode", "point", "num_hidden_layers", "compile_s", "compile_ci95_low", "compile_ci95_high",
    "compile_samples", *DEPTH_RUN_COLUMNS, "slope_s_per_layer", "slope_ci95_low", "slope_ci95_high", "slope_interval",
]  # fmt: skip


def compile_depth(runs: pd.DataFrame, results: list[dict], resamples: int = 2000) -> pd.DataFrame:
    """Per model swept over its depth, hardware and compiling mode: the cold compile at each depth (the median of
    its cold starts, with a bootstrap 95% interval where there are three or more) beside the speedup, and the
    line's trend, seconds of cold compile per layer with its interval (`stats.slope`)."""
    (depth,) = CONFIG_SWEEP_KEYS
    run = comparisons.by_experiment(results)
    compiling = runs["mode_kind"].isin(COMPILING_KINDS) & runs["compile_s"].notna()
    swept = runs[runs["sweep_of"].notna() & (runs["status"] == "ok") & runs[depth].notna() & compiling]
    rows = []
    for (model, hardware, mode), line in swept.groupby(["sweep_of", "hardware", "mode"], sort=False):
        if line[depth].nunique() < 2:
            continue
        line = line.sort_values(depth, kind="stable")
        cold = [comparisons.compile_samples(run[(hardware, point, mode)])["cold"] for point in line["model"]]
        trend = stats.slope(list(line[depth].astype(float)), cold, resamples=resamples)
        for point, samples in zip(line.to_dict("records"), cold):
            low, high = stats.summarize(samples, resamples=resamples)["ci95_ms"] if len(samples) >= 3 else (None, None)
            rows.append({
                "sweep_of": model, "hardware": hardware, "mode": mode, "point": point["model"],
                "num_hidden_layers": int(point[depth]), "compile_s": float(np.median(samples)),
                "compile_ci95_low": low, "compile_ci95_high": high, "compile_samples": len(samples),
                **{key: point[key] for key in DEPTH_RUN_COLUMNS},
                "slope_s_per_layer": trend["slope"], "slope_ci95_low": trend["ci95"][0],
                "slope_ci95_high": trend["ci95"][1], "slope_interval": trend["method"],
            })  # fmt: skip
    return pd.DataFrame(rows, columns=DEPTH_COLUMNS)


CHANGE_COLUMNS = {"ratio": "change", "ratio_ci95_low": "change_ci95_low", "ratio_ci95_high": "change_ci95_high",
                  "verdict": "change_verdict", "detectable_change": "change_detectable"}  # fmt: skip


def _with_changes(table: pd.DataFrame, run: dict, threshold: float) -> pd.DataFrame:
    """Each compiled point after the first: its speedup over its line's first point's, each measured against eager
    in its own job, as a ratio with its interval and verdict (`faster`: the speedup grew)."""
    changes = pd.DataFrame(index=table.index, columns=list(CHANGE_COLUMNS.values()), dtype=object)
    lines = table.groupby(["sweep_of", "hardware", "mode", "series"], sort=False, dropna=False).groups.values()
    for i, index in enumerate(lines):
        line = table.loc[index]
        hardware, mode = line.iloc[0]["hardware"], line.iloc[0]["mode"]
        first = run.get((hardware, line.iloc[0]["point"], mode))
        if not (first and first.get("speedup")):
            continue
        base = comparisons.speedup(first, seed=2 * i)
        for j, (row, point) in enumerate(zip(index[1:], line["point"].iloc[1:])):
            later = run.get((hardware, point, mode))
            if later and later.get("speedup"):
                change = (comparisons.speedup(later, seed=2 * i + 1 + 2 * j) / base).row(threshold)
                changes.loc[row] = [change[key] for key in CHANGE_COLUMNS]
    return pd.concat([table, changes], axis=1)


def speedups(runs: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD, results: list[dict] = ()) -> pd.DataFrame:
    """Per hardware x model x mode: the interleaved speedup with its interval, its verdict against the model's noise
    floor (`against_noise`, the band of `same` widened to the floor), whether the measurement was `unstable`, the
    cross-job ratio beside it, and from `results` the eager beside the mode against the eager job's
    (`eager_job_ratio`, with its interval and `eager_job_flagged`)."""
    ok_eager = runs[(runs["mode"] == "eager") & (runs["status"] == "ok")].set_index(["hardware", "model"])
    modes = runs[runs["mode"] != "eager"].copy()
    keys = list(zip(modes["hardware"], modes["model"]))
    modes["eager_job_median_ms"] = [ok_eager["median_ms"].get(key) for key in keys]
    modes["cross_job_speedup"] = modes["eager_job_median_ms"] / modes["median_ms"]
    beside = eager_beside(results)
    for key, column in (("median_ms", "eager_beside_median_ms"), ("value", "eager_job_ratio"),
                        ("low", "eager_job_ratio_ci95_low"), ("high", "eager_job_ratio_ci95_high"),
                        ("flagged", "eager_job_flagged"), ("capacity", "parallel_speedup"),
                        ("job_capacity", "eager_job_parallel_speedup")):  # fmt: skip
        modes[column] = [beside.get(k, {}).get(key) for k in zip(modes["hardware"], modes["model"], modes["mode"])]
    for end in ("low", "high"):
        modes[f"noise_ci95_{end}"] = [ok_eager[f"noise_ci95_{end}"].get(key) for key in keys]
    modes["eager_job_faults_per_call"] = [ok_eager["mode_faults_per_call"].get(key) for key in keys]
    intervals = list(zip(modes["speedup_ci95_low"], modes["speedup_ci95_high"]))
    floors = list(zip(modes["noise_ci95_low"], modes["noise_ci95_high"]))
    modes["threshold"] = threshold
    modes["against_noise"] = [against_noise(*interval, *floor, threshold) for interval, floor in zip(intervals, floors)]
    modes["detectable_change"] = [
        None if _missing(low) else detectable_change(low, high, threshold) for low, high in intervals
    ]
    modes["unstable"] = [
        bool(run_busy == True or eager_busy == True or unsteady_floor(*floor, threshold))  # noqa: E712
        for run_busy, eager_busy, floor in zip(
            modes["machine_busy"], [ok_eager["machine_busy"].get(key) for key in keys], floors
        )
    ]
    columns = [
        "hardware",
        "model",
        "mode",
        "dtype",
        "batch_size",
        *SWEEP_COLUMNS,
        "status",
        "speedup",
        "speedup_ci95_low",
        "speedup_ci95_high",
        "noise_ci95_low",
        "noise_ci95_high",
        "threshold",
        "against_noise",
        "unstable",
        "detectable_change",
        "processes",
        "cross_job_speedup",
        "median_ms",
        "eager_job_median_ms",
        "eager_beside_median_ms",
        "eager_job_ratio",
        "eager_job_ratio_ci95_low",
        "eager_job_ratio_ci95_high",
        "eager_job_flagged",
        "parallel_speedup",
        "eager_job_parallel_speedup",
        "eager_faults_per_call",
        "eager_job_faults_per_call",
        "compile_s",
        "correct",
    ]
    return modes[columns].reset_index(drop=True)


def eager_beside(results: list[dict]) -> dict[tuple[str, str, str], dict]:
    """Per ok mode result with interleaved eager samples: eager's median beside it, that eager against the eager
    job's (`stats.eager_job_ratio`), and the machine's parallel speedup in the mode's processes and in the eager
    job's (`comparisons.parallel_capacity`; None without probes)."""
    eager = {(r["hardware"], r["model"]): r for r in results if r["mode"] == "eager" and r["status"] == "ok"}
    out = {}
    for result in results:
        job = eager.get((result["hardware"], result["model"]))
        if result["mode"] == "eager" or result["status"] != "ok" or not result.get("eager_latency_ms") or not job:
            continue
        ratio = stats.eager_job_ratio(result, job)
        out[(result["hardware"], result["model"], result["mode"])] = {
            "median_ms": float(np.median(result["eager_latency_ms"])),
            "value": ratio["value"],
            "low": ratio["ci95"][0],
            "high": ratio["ci95"][1],
            "flagged": ratio["flagged"],
            "capacity": (comparisons.parallel_capacity(result) or {}).get("overall"),
            "job_capacity": (comparisons.parallel_capacity(job) or {}).get("overall"),
        }
    return out


def against_noise(low, high, noise_low, noise_high, threshold: float = DEFAULT_THRESHOLD) -> str | None:
    """A speedup's verdict over eager, with the band of `same` widened to the model's noise floor (eager timed
    against itself) where the floor is wider than the threshold."""
    if _missing(low) or _missing(high):
        return None
    floor = None if _missing(noise_low) or _missing(noise_high) else (noise_low, noise_high)
    return verdict(low, high, threshold, floor)


def unsteady_floor(noise_low, noise_high, threshold: float) -> bool:
    """A noise floor that is itself a verdict: eager against eager came out faster or slower beyond the band."""
    return not (_missing(noise_low) or _missing(noise_high)) and verdict(noise_low, noise_high, threshold) in (
        "faster",
        "slower",
    )


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


def settings_difference(run: dict, base: dict) -> str:
    """The settings in which two runs' modes differ, as `name: value` (the first run's value)."""
    differing = []
    for column in mode_columns({}):
        value, other = run.get(column), base.get(column)
        if not (_missing(value) and _missing(other)) and value != other:
            differing.append(f"{column.removeprefix('mode_')}: {'–' if _missing(value) else value}")
    return "; ".join(differing) or "nothing"


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def hardware_costs(
    runs: pd.DataFrame, prices: dict[str, float], baseline: str | None, calls_per_start: int = 100_000
) -> pd.DataFrame:
    """Per run: p90 latency relative to the baseline hardware's same model and mode, and where the hardware
    has a price, the cost of a million inferences (price per hour over inferences per hour at the median),
    and that cost with each process start's compile (cold, or warm from the caches) spread over
    `calls_per_start` calls."""
    ok = runs[runs["status"] == "ok"]
    baseline = baseline_of(ok["hardware"], baseline)
    base = ok[ok["hardware"] == baseline].set_index(["model", "mode"])["p90_ms"]
    frame = ok[["hardware", "model", "mode", "batch_size", "median_ms", "p90_ms"]].copy()
    frame["hardware_label"] = _hardware_labels(ok)
    frame["baseline_hardware"] = baseline
    frame["relative_p90"] = [row.p90_ms / base.get((row.model, row.mode), np.nan) for row in frame.itertuples()]
    frame["price_per_hour"] = frame["hardware"].map(prices)
    per_second = frame["price_per_hour"] / 3600
    frame["cost_per_million"] = per_second * (frame["median_ms"] / 1e3) / frame["batch_size"] * 1e6
    calls = 1e6 / frame["batch_size"]
    for column, start in (
        ("cost_per_million_cold_start", "compile_s"),
        ("cost_per_million_warm_start", "compile_warm_s"),
    ):
        compile_s = ok[start].where(ok["mode"] != "eager", ok["first_call_s"]).fillna(0)
        frame[column] = per_second * calls * (frame["median_ms"] / 1e3 + compile_s / calls_per_start)
    frame["calls_per_start"] = calls_per_start
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
    from ..core.files import atomic_write

    atomic_write(path, lambda handle: table.to_csv(handle, index=False))


STREAM_CALL_COLUMNS = [
    "hardware", "model", "mode", "call", "axis", "value", "latency_ms", "eager_ms", "compiled", "recompiled",
    "compile_s", "after_limit_uncompiled", "recompile_reasons",
]  # fmt: skip


def stream_calls(results: list[dict]) -> pd.DataFrame:
    """One row per call of every shape stream's first pass (the one that compiles), eager's call beside it."""
    rows = []
    for result in results:
        stream = result.get("stream") if result["status"] == "ok" else None
        if not stream:
            continue
        for call, eager_ms in zip(stream["calls"], stream["eager_call_ms"]):
            rows.append({
                **{key: result[key] for key in ("hardware", "model", "mode")}, **call, "eager_ms": eager_ms,
                "recompile_reasons": "; ".join(call["recompile_reasons"]) or None,
            })  # fmt: skip
    return pd.DataFrame(rows, columns=STREAM_CALL_COLUMNS)


STREAM_COLUMNS = [
    "hardware", "model", "stream_of", "mode", "status", "axis", "calls", "distinct", "passes", "compiles",
    "recompiles", "limit_reached", "limit_call", "calls_after_limit_uncompiled", "total_s", "eager_total_s",
    "total_speedup", "steady_total_s", "eager_steady_total_s", "steady_speedup", "overtakes_eager_at_call",
    "correct", "per_value", "recompile_reasons", "error",
]  # fmt: skip


def streams(results: list[dict]) -> pd.DataFrame:
    """One row per shape-stream experiment: compiles, recompiles, the recompile limit, the stream's total time
    against eager's over the same stream (its first pass, compiles included, and its best later pass), and the
    speedup at each distinct value once compiled."""
    rows = []
    for result in results:
        if not str(result["model"]).endswith(".stream"):
            continue
        stream = result.get("stream") or {}
        per_value = "; ".join(
            f"{row['value']}: {row['speedup']:.2f}× ({row['ci95'][0]:.2f}–{row['ci95'][1]:.2f})"
            for row in stream.get("per_value", [])
        )
        rows.append({
            **{key: result[key] for key in ("hardware", "model", "mode", "status")},
            "stream_of": str(result["model"]).removesuffix(".stream"),
            **{key: stream.get(key) for key in (
                "axis", "passes", "compiles", "recompiles", "limit_reached", "limit_call",
                "calls_after_limit_uncompiled", "total_s", "eager_total_s", "steady_total_s",
                "eager_steady_total_s", "overtakes_eager_at_call", "correct",
            )},
            "calls": len(stream.get("values", [])) or None,
            "distinct": len(set(stream.get("values", []))) or None,
            "total_speedup": _quotient(stream.get("eager_total_s"), stream.get("total_s")),
            "steady_speedup": _quotient(stream.get("eager_steady_total_s"), stream.get("steady_total_s")),
            "per_value": per_value or None,
            "recompile_reasons": "; ".join(dict.fromkeys(stream.get("recompile_reasons", [])))[:500] or None,
            "error": (result.get("error") or {}).get("message"),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=STREAM_COLUMNS)


def _quotient(a, b) -> float | None:
    return a / b if a and b else None


START_COLUMNS = ["hardware", "model", "mode", "path", "repeat", "status", "reason", "total_s", *START_PARTS,
                 "artifact_bytes", "correct", "correctness_rule", "overhead_over_eager_s"]  # fmt: skip
START_PATH_COLUMNS = ["hardware", "model", "mode", "path", "starts", "n", "status", "reason", "total_s",
                      "total_ci95_low", "total_ci95_high", *START_PARTS, "artifact_bytes", "artifact_build_s",
                      "correct", "overhead_over_eager_s", "overhead_ci95_low", "overhead_ci95_high", "break_even_calls",
                      "break_even_calls_ci95_low", "break_even_calls_ci95_high"]  # fmt: skip


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
        for row in summaries.start_paths(record, by_name.get((record["hardware"], record["model"], record["mode"])))
    ]
    return pd.DataFrame(rows, columns=START_PATH_COLUMNS)
