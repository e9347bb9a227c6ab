"""The two records compilebench passes around, each defined once.

An `Experiment` is everything one benchmark job depends on (`config.experiment`
derives it); a `Result` is what that job writes. Both are plain JSON-ready dicts,
typed here so that the engine, the tables and the tests agree on their shape.
"""

from __future__ import annotations

import hashlib
import json
import traceback
from datetime import datetime, timezone
from typing import Any, NotRequired, TypedDict

SCHEMA_VERSION = 2  # 2: measured in `measure.processes` processes, kept under `processes`
STATUSES = ("ok", "failed", "timeout", "unsupported")
# An environment record's status beside ok and failed: an optional GPU entry whose job found no GPU.
SKIPPED = "skipped"
# A cold compile's phases as compile_phases reads them from torch's own metrics, in the order they run.
COMPILE_PHASES = ("dynamo", "aot_autograd", "inductor_lowering", "autotune", "codegen", "cpp_triton_compile")
# The shape settings a sweep may vary, in the order a sweep point's name lists them.
SWEEP_KEYS = ("batch_size", "image_size", "seq_len", "new_tokens", "dtype")


class Experiment(TypedDict):
    model: str
    mode: str
    mode_settings: dict[str, Any]  # modes.settings: the kind and every setting of it
    hardware: str
    seed: int
    spec: dict[str, Any]  # the model entry, asset names resolved to paths
    measure: dict[str, Any]  # measurement settings, defaults filled in
    device: str
    hardware_env: dict[str, str]
    threads: int | None
    python_env: NotRequired[str]  # the platform's own Python environment (envs/NAME.txt), where it has one


class ErrorInfo(TypedDict):
    message: str
    traceback: str


class ResultHeader(TypedDict):
    """What every result carries, whatever happened to the job."""

    schema: int
    model: str
    mode: str
    hardware: str
    experiment_sha256: str  # experiment_digest of what the job measured
    device: str
    task: str
    dtype: str
    batch_size: int
    sweep_of: str | None  # the model a sweep point belongs to
    swept: dict[str, Any]  # this point's values of the swept settings
    mode_settings: dict[str, Any]  # exactly what the mode ran with
    status: str  # one of STATUSES
    error: ErrorInfo | None
    started_at: str
    measure: dict[str, Any]


class Result(ResultHeader, total=False):
    """A header, and what a measurement adds to it (absent when it did not get that far)."""

    finished_at: str
    environment: dict[str, Any]  # env.summary of the environment record, and where the job ran
    compile_s: float  # cold: the first call, after what preparation counts (jit scripting; export and package build)
    compile_warm_s: float | None  # first call of a fresh process on the caches the cold one wrote; export: load + call
    compile_bundle_s: float | None  # a fresh process's first call from torch's portable cache bundle alone
    warm_starts: dict[str, Any]  # runner.first_call of each warm start (None where it did not run), and notes
    compile_phases: dict[str, float] | None  # compile_phases.read: seconds per phase of the cold compile
    compile_unexplained_s: float | None  # compile_s less the phases
    preparation: dict[str, float]  # seconds of each step before the first call (script_s; export_s, package_s, load_s)
    warmup_ms: list[float]
    latency_ms: list[float]  # one per timed iteration
    eager_latency_ms: list[float]  # eager, interleaved with the mode
    processes: list[dict[str, Any]]  # replication.process_record of each measuring process, the cold one first
    compile_warm_samples_s: list[float]  # the warm starts among the processes; compile_warm_s is their median
    machine: dict[str, Any]  # machine.Load of the first process: what else used the machine while it measured
    stats: dict[str, Any]  # stats.summarize
    speedup: dict[str, Any]  # stats.speedup: value, ci95, interval (its method)
    noise: dict[str, Any]  # eager only: ratio, ci95 of eager against a second eager callable, and its samples
    throughput: dict[str, float]
    memory: dict[str, Any]
    correctness: dict[str, Any]
    compiler: dict[str, Any]  # TorchDynamo counters
    workload: dict[str, Any]
    generation: dict[str, Any]
    profile: dict[str, Any]


REQUIRED_KEYS = frozenset(ResultHeader.__required_keys__)


def experiment_digest(exp: Experiment) -> str:
    """A fingerprint of everything a job measured with: a result is taken only for the experiment it carries."""
    return hashlib.sha256(json.dumps(exp, sort_keys=True).encode()).hexdigest()


def identity(exp: Experiment) -> dict[str, str]:
    """What a result must carry to stand for `exp`."""
    return {
        "hardware": exp["hardware"],
        "model": exp["model"],
        "mode": exp["mode"],
        "experiment_sha256": experiment_digest(exp),
    }


def error_info(exc: BaseException, lines: int = 15) -> ErrorInfo:
    """What a failure record says: the exception in one line, and the end of its traceback."""
    tail = "".join(traceback.format_exception(exc)).strip().splitlines()[-lines:]
    return {"message": f"{type(exc).__name__}: {exc}", "traceback": "\n".join(tail)}


def skipped(env_record: dict) -> bool:
    """An optional entry whose environment job found no device to run on: it has no experiments, by design."""
    return env_record.get("status") == SKIPPED


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def result_header(
    exp: Experiment, status: str = "ok", error: str | None = None, *, traceback: str = "", started_at: str | None = None
) -> ResultHeader:
    """The header of `exp`'s result: which model, mode and hardware, in which dtype and batch, and how it went."""
    if status not in STATUSES:
        raise ValueError(f"status {status!r} is not one of {STATUSES}")
    spec = exp["spec"]
    return {
        "schema": SCHEMA_VERSION,
        "model": exp["model"],
        "mode": exp["mode"],
        "mode_settings": exp["mode_settings"],
        "hardware": exp["hardware"],
        "experiment_sha256": experiment_digest(exp),
        "device": exp["device"],
        "task": spec["task"],
        "dtype": spec["dtype"],
        "batch_size": spec["batch_size"],
        "sweep_of": spec.get("sweep_of"),
        "swept": spec.get("swept", {}),
        "status": status,
        "error": None if error is None else {"message": error, "traceback": traceback},
        "started_at": started_at or now(),
        "measure": exp["measure"],
    }
