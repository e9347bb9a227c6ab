"""Synthetic result files, shaped like the engine's, for testing tables, figures and the paper."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from compilebench.analysis.stats import Timed, paired, steady_state, summarize
from compilebench.configuration.schema import MEASURE_DEFAULTS
from compilebench.core.experiment import Experiment
from compilebench.core.files import write_json
from compilebench.core.modes import BUILTIN_MODES, settings
from compilebench.core.records import START_PARTS, START_PATHS, Result, result_header


def typed(exp: dict) -> Experiment:
    """An experiment from the few settings a synthetic result names, the rest as a config's defaults give them."""
    model = {"source": "torchvision", "arch": "resnet18", "weights": "random", "image_size": 224, "seq_len": 32}
    spec = {**model, "new_tokens": 16, "jit": "trace", **exp["spec"]}
    return Experiment.from_json({**exp, "spec": spec, "measure": {**MEASURE_DEFAULTS, **exp["measure"]}})


def speedup(eager: list[float], mode: list[float], resamples: int = 200) -> dict:
    ratio = paired([(Timed(np.asarray(eager)), Timed(np.asarray(mode)))], resamples=resamples)
    return {**ratio.record(), "eager_median_ms": float(np.median(eager)), "n": len(mode)}


MODES = {"eager": 1.0, "jit": 1.1, "compile-default": 1.6, "compile-max-autotune": 2.0}
DEVICE_NAMES = ("Test CPU", "NVIDIA H100 80GB HBM3")
MEASURE = {
    "warmup": 2,
    "iterations": 30,
    "min_time_s": 0.1,
    "interleave_block": 5,
    "fullgraph": False,
    "private_cache": True,
}
FLAGGED = ("cpu", "resnet", "compile-default")  # the synthetic result whose steady-state check fails
EAGER_ALONE_FLAGGED = ("cpu", "resnet", "jit")  # the one whose eager, beside the mode, ran 12% slower than alone
FAULTING = ("cpu", "resnet", "compile-max-autotune")  # the one whose calls took 5,058 page faults each
MEASURED_CEILINGS = {"tflops": {"float32": 0.2, "bfloat16": 0.05}, "memory_bandwidth_gbs": 20.0, "method": "torch.mm"}
MODELS = {"resnet": ("image-classification", 20.0), "llama": ("text-generation", 50.0)}


def resealed(record: Result, **changes) -> Result:
    """`record` as the result of another experiment: `changes` (dotted keys of the experiment it records, such as
    `spec.batch_size`) made to that experiment, and the header written again from it, fingerprint included."""
    exp = copy.deepcopy(record["experiment"])
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        target = exp
        for part in parents:
            target = target[part]
        target[last] = value
    header = result_header(Experiment.from_json(exp), started_at=record["started_at"])
    return {**record, **{k: v for k, v in header.items() if k not in ("status", "error")}}


def scaled_latencies(record: Result, factor: float) -> Result:
    """`record` with every timed call of the mode `factor` times as long, in the result and in each process."""
    for timed in (record, *(record.get("processes") or [])):
        if timed.get("latency_ms"):
            timed["latency_ms"] = [x * factor for x in timed["latency_ms"]]
    return record


def with_its_process(record: Result) -> Result:
    """An ok result measured in one process keeps that process's samples and figures under `processes`, as every
    ok result the engine writes does."""
    if record["status"] == "ok":
        record["processes"] = [{k: v for k, v in record.items() if k in ONE_PROCESS}]
    return record


ONE_PROCESS = ("latency_ms", "eager_latency_ms", "speedup", "noise", "steady_state", "eager_alone", "machine",
               "compile_s", "started_at", "finished_at")  # fmt: skip


def synthetic_results(folder: Path, hardware=("cpu", "cpu-fast")) -> list[Path]:
    rng = np.random.default_rng(0)
    paths = []
    for h, hw in enumerate(hardware):
        for model, (task, base) in MODELS.items():
            eager = list(rng.normal(base * (1 + h), 0.5, 30))
            for mode, gain in MODES.items():
                path = folder / "runs" / hw / model / f"{mode}.json"
                exp = {
                    "model": model,
                    "mode": mode,
                    "mode_settings": settings(BUILTIN_MODES[mode]),
                    "hardware": hw,
                    "seed": 0,
                    "spec": {"task": task, "dtype": "float32", "batch_size": 1},
                    "measure": MEASURE,
                    "device": "cpu",
                    "hardware_env": {},
                    "threads": 2,
                }
                record: Result = result_header(typed(exp), started_at=f"2026-01-01T00:{len(paths):02d}:00+00:00")
                record["finished_at"] = f"2026-01-01T00:{len(paths):02d}:30+00:00"
                if model == "llama" and mode == "jit":
                    message = "TorchScript cannot capture generation"
                    record.update(result_header(typed(exp), "unsupported", message, started_at=record["started_at"]))
                else:
                    samples = list(rng.normal(base * (1 + h) / gain, 0.3, 30))
                    record.update(
                        compile_s=0.01 if mode in ("eager", "jit") else 20.0 * gain,
                        latency_ms=samples,
                        stats=summarize(samples, resamples=200),
                        throughput={"samples_per_s": 1e3 / np.median(samples)},
                        memory={"peak_bytes": int(1e8 * gain)},
                        compiler={"graphs": 1, "graph_breaks": 0, "recompiles": 0},
                        correctness={
                            "passed": True,
                            "cosine": 0.9999,
                            "max_abs_err": 1e-5,
                            "top1_agreement": 1.0,
                            "float64_rmse": 2e-6,
                            "eager_float64_rmse": 1.5e-6,
                            "rule": "float64",
                            "criterion": "cosine >= 0.99 and RMSE against float64 <= 2 x eager's 1.5e-06",
                        },
                    )
                    if mode == "eager":
                        record["preparation"] = {"first_call_s": 0.5}
                        record["noise"] = {"ratio": 1.0, "ci95": [0.97, 1.03], "n": 30, "interval": "paired block"}
                    else:
                        record["speedup"] = speedup(eager, samples, resamples=200)
                        record["eager_latency_ms"] = eager
                        # One result that interleaving perturbed: its median timed alone is 15% lower.
                        alone_ms = list(np.asarray(samples) / (1.15 if (hw, model, mode) == FLAGGED else 1.0))
                        record["steady_state"] = {
                            **steady_state([samples], [alone_ms], resamples=200),
                            "latency_ms": alone_ms,
                        }
                        slowed = 1.12 if (hw, model, mode) == EAGER_ALONE_FLAGGED else 1.0
                        eager_alone_ms = list(np.asarray(eager) / slowed)
                        record["eager_alone"] = {
                            **steady_state([eager], [eager_alone_ms], resamples=200),
                            "latency_ms": eager_alone_ms,
                        }
                        faulting = (hw, model, mode) == FAULTING
                        record["page_faults"] = {
                            "mode_per_call": 5058.1 if faulting else 1.0,
                            "eager_per_call": 2.0,
                            "mode_alone_per_call": 2532.3 if faulting else 1.0,
                            "eager_alone_per_call": 2.9,
                            "ms_per_1000": {"slope": 1.03, "ci95": [0.93, 1.06], "method": "bootstrap"}
                            if faulting
                            else None,
                            "flagged": faulting,
                            "rule": "the mode's interleaved calls took 256 page faults or more each",
                        }
                    if mode.startswith("compile"):
                        cold = {"dynamo": 2.0, "aot_autograd": 3.0, "inductor_lowering": 1.0, "autotune": 0.0,
                                "codegen": 4.0, "cpp_triton_compile": 20.0 * gain - 11.0}  # fmt: skip
                        warm = {**dict.fromkeys(cold, 0.0), "dynamo": 1.0, "aot_autograd": 0.5}
                        record.update(
                            compile_phases=cold,
                            compile_unexplained_s=1.0,
                            compile_warm_s=2.0,
                            compile_bundle_s=5.0,
                            warm_starts={"warm": {"first_call_s": 2.0, "compile_phases": warm}, "bundle": None},
                        )
                    if task == "text-generation":
                        tokens_per_s = 16e3 / np.median(samples)
                        record["generation"] = {
                            "tokens_per_s": tokens_per_s,
                            "decode_tokens_per_s": tokens_per_s,
                            "ttft_ms": 5.0 / gain,
                        }
                        record["correctness"].update(tokens_match=True, token_agreement=0.75, first_disagreement=12)
                    record["environment"] = {"hardware": hw, "device_name": DEVICE_NAMES[h], "threads": 2}
                    if hw == "cpu":
                        record["environment"]["ceilings"] = MEASURED_CEILINGS
                    record["workload"] = {"compute_dtype": "bfloat16", "parameter_bytes": 14_000_000_000}
                    if task != "text-generation":
                        record["workload"]["flops_per_call"] = 20_000_000_000
                    if mode in ("eager", "compile-max-autotune"):
                        record["profile"] = {
                            "trace": f"results/traces/{hw}/{model}/{mode}.json",
                            "iterations": 5,
                            "time_basis": "device",
                            "top_ops": [
                                {
                                    "op": f"{mode}_op_{i}",
                                    "self_us_per_call": 100.0 / (i + 1),
                                    "calls_per_call": 1.0,
                                    "share": 0.1,
                                }
                                for i in range(12)
                            ],
                        }
                write_json(path, with_its_process(record))
                paths.append(path)
    return paths


def synthetic_sweep(folder: Path, batches=(1, 4, 16)) -> list[Path]:
    """A swept model on one hardware: compile-default's speedup shrinks as the batch grows (2.0x, 1.5x, 1.05x)."""
    rng = np.random.default_rng(1)
    paths = []
    for batch, gain in zip(batches, (2.0, 1.5, 1.05)):
        point = f"net.bs{batch}"
        eager = list(rng.normal(10.0 * batch, 0.05 * batch, 40))
        for mode, mode_gain in (("eager", 1.0), ("compile-default", gain)):
            exp = {
                "model": point,
                "mode": mode,
                "mode_settings": settings(BUILTIN_MODES[mode]),
                "hardware": "cpu",
                "seed": 0,
                "spec": {"task": "image-classification", "dtype": "float32", "batch_size": batch,
                         "sweep_of": "net", "swept": {"batch_size": batch}},
                "measure": MEASURE,
                "device": "cpu",
                "hardware_env": {},
                "threads": 2,
            }  # fmt: skip
            samples = list(rng.normal(10.0 * batch / mode_gain, 0.05 * batch, 40))
            record: Result = {**result_header(typed(exp)), "finished_at": "2026-01-01T00:00:30+00:00"}
            record.update(
                compile_s=1.0, latency_ms=samples, stats=summarize(samples, resamples=200),
                throughput={"samples_per_s": batch * 1e3 / np.median(samples)},
                correctness={"passed": True, "cosine": 1.0, "max_abs_err": 0.0},
            )  # fmt: skip
            if mode != "eager":
                record.update(speedup=speedup(eager, samples, resamples=200), eager_latency_ms=eager)
            path = folder / "runs" / "cpu" / point / f"{mode}.json"
            write_json(path, with_its_process(record))
            paths.append(path)
    return paths


def synthetic_starts(totals: dict[str, list[float]], **unsupported: str) -> dict:
    """A starts record (`starts.starts_job`) with these totals per path, three starts each, and paths unsupported."""
    rows = []
    for path, values in totals.items():
        for repeat, total in enumerate(values, 1):
            parts = dict.fromkeys(START_PARTS, 0.0) | {"import_s": 2.0, "first_call_s": total - 2.0}
            rows.append({"path": path, "repeat": repeat, "status": "ok", "reason": None, "total_s": total,
                         "parts": parts, "artifact_bytes": 1000 if path != "eager" else None, "correct": True,
                         "correctness_rule": "float64"})  # fmt: skip
    for path, reason in unsupported.items():
        rows += [{"path": path, "repeat": k, "status": "unsupported", "reason": reason} for k in (1, 2, 3)]
    paths = [p for p in START_PATHS if p in totals or p in unsupported]
    return {"schema": 1, "hardware": "cpu", "model": "m", "mode": "compile-default", "experiment_sha256": "0" * 64,
            "paths": paths, "repeats": 3, "rows": rows, "builds": {}}  # fmt: skip
