"""The runs table and the per-call samples: one row per experiment, flattened from its result; the run's exit line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..analysis import levels, machine_state, stats
from ..analysis.machine_state import busy
from ..core.errors import UserError
from ..core.files import read_results
from ..core.records import COMPILE_PHASES, STATUSES, SWEEP_KEYS

CEILING_DTYPES = ("float32", "bfloat16", "float16")
IDENTITY = ["hardware", "model", "mode", "task", "device", "dtype", "batch_size"]


# The model a sweep point belongs to, and the swept settings that are not identity columns already.
SWEEP_COLUMNS = ["sweep_of", *(key for key in SWEEP_KEYS if key not in IDENTITY)]


PREPARATION_COLUMNS = ["isa_probe_s", "first_call_s", "script_s", "export_s", "package_s", "load_s", "package_bytes",
                       "onnx_export_s", "convert_s", "session_s", "compile_model_s", "artifact_bytes"]  # fmt: skip


# A mode's speedup over eager, as the speedups table gives it, in the tables that set modes side by side.
SPEEDUP_COLUMNS = ["speedup", "speedup_ci95_low", "speedup_ci95_high", "against_noise", "verdict", "verdict_why"]
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
    """The machine's parallel speedup at both ends of the result's processes (`machine_state.parallel_capacity`)."""
    capacity = machine_state.parallel_capacity(result) or {}
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


def level_columns(result: dict) -> dict:
    """The level shift the result still rests on (`level_shift_*`, in words too), and how many processes were set
    aside for one and measured again."""
    shift = result.get("level_shift") or {}
    return {
        "level_shift": levels.said(shift) if shift else None,
        **{f"level_shift_{key}": shift.get(key) for key in ("side", "at_call", "before_ms", "after_ms")},
        "set_aside": len(result.get("set_aside") or []) if result.get("processes") else None,
        **bimodal_columns(result.get("bimodal")),
    }


def bimodal_columns(found: dict | None) -> dict:
    """A mode that ran at two speeds: each level's median and the fast level's share of the levels seen."""
    fast, slow = (found or {}).get("levels") or ({}, {})
    return {"bimodal_fast_ms": fast.get("median_ms"), "bimodal_slow_ms": slow.get("median_ms"),
            "bimodal_fast_share": fast.get("share")}  # fmt: skip


def call_in_words(spec: dict, batch_size: int | None) -> str | None:
    """What one timed call of a model does, for a reader of page 1: a training step, a whole generation, or one
    forward pass over a batch of its inputs."""
    if not spec:
        return None
    count = batch_size or spec.get("batch_size") or 1
    if spec.get("train_of"):
        return f"one training step on a batch of {count}"
    if spec.get("task") == "text-generation":
        prompts = "" if count == 1 else f", {count} prompts at once"
        return f"a {spec.get('new_tokens')}-token generation after a {spec.get('seq_len')}-token prompt{prompts}"
    if spec.get("source") == "python":
        return f"one forward pass of {spec.get('arch')}() on a batch of {count}"
    if spec.get("task") == "image-classification":
        timm = spec.get("source") == "timm"  # its declared size wins over image_size; config.img_size over both
        side = (spec.get("config") or {}).get("img_size") if timm else spec.get("image_size")
        at = "at the size the model declares" if side is None else f"of {side}×{side}"
        return f"{count} image{'s' if count != 1 else ''} {at} classified"
    return f"{count} sequence{'s' if count != 1 else ''} of {spec.get('seq_len')} tokens ({spec.get('task')})"


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
        "train_of": (result.get("spec") or {}).get("train_of"),
        "one_call": call_in_words(result.get("spec") or {}, result.get("batch_size")),
        **mode_columns(result.get("mode_settings") or {}),
        "device_name": environment.get("device_name"),
        "torch": environment.get("torch"),
        "threads": environment.get("threads"),
        "bf16_native": environment.get("bf16_native"),
        "fpmath_mode": environment.get("fpmath_mode"),
        "host": environment.get("hostname"),
        **{f"measured_tflops_{dtype}": ceilings.get("tflops", {}).get(dtype) for dtype in CEILING_DTYPES},
        "measured_memory_bandwidth_gbs": ceilings.get("memory_bandwidth_gbs"),
        "llc_bytes": environment.get("llc_bytes"),
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
        "speedup_mode_ms": speedup.get("mode_ms"),
        "speedup_eager_ms": speedup.get("eager_ms"),
        "processes": len(result.get("processes") or []) or None,
        "machine_busy": busy(result) if result.get("processes") else None,
        "machine_others_share": max(
            ((p.get("machine") or {}).get("others_share") or 0.0 for p in result.get("processes") or []), default=None
        ),
        **capacity_columns(result),
        **level_columns(result),
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
        **runtime_columns(result.get("runtime") or {}),
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


def runtime_columns(record: dict) -> dict:
    """A runtime mode's runtime as read back from it: its version, threads, and where and how it runs."""
    where = record.get("providers") or [record[k] for k in ("device", "hint", "precision") if record.get(k)]
    return {
        "runtime_version": record.get("version"),
        "runtime_threads": record.get("threads"),
        "runtime_settings": ", ".join(map(str, where)) or None,
        "runtime_not_as_asked": "; ".join(record.get("not_as_asked") or []) or None,  # what ran is the label
    }


def sweep_columns(result: dict) -> dict:
    """The model a sweep point belongs to, and its swept shape values (batch size and dtype are always columns)."""
    swept = result.get("swept") or {}
    return {"sweep_of": result.get("sweep_of"), **{key: swept.get(key) for key in SWEEP_COLUMNS[1:]}}


def inference_only(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of inference experiments: training steps (`train_of` set) are another workload, shown apart."""
    return frame[frame["train_of"].isna()] if "train_of" in frame else frame


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
        "mode_scope": settings.get("scope"),
        "mode_optimizer": settings.get("optimizer"),
        "mode_autograd": settings.get("autograd"),
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
    saved, saved_ci95 = stats.saving_ms(result)
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


def status_line(table: pd.DataFrame) -> str:
    counts = table["status"].value_counts()
    return ", ".join(f"{int(counts.get(s, 0))} {s}" for s in STATUSES)


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
