"""The records compilebench passes around, each defined once, every key declared.

An `Experiment` (`experiment`, a frozen value) is everything one measurement depends on. A worker takes one
`Request` and writes a `ProcessRecord`: raw samples and what it saw. `summaries` makes a `Result` from an
experiment's process records. All are plain JSON-ready data, typed here so that the worker, the summaries, the
tables and the tests agree on their shape (a test checks real records against these declarations, both ways).
"""

from __future__ import annotations

import dataclasses
import json
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, ClassVar, TypedDict

from .experiment import Experiment, ModeSettings

SCHEMA_VERSION = 2  # 2: measured in `measure.processes` processes, kept under `processes`
SUPPORTED_SCHEMAS = (2,)  # the versions a result may carry and be read as it is
STATUSES = ("ok", "failed", "timeout", "unsupported")
# An environment record's status beside ok and failed: an optional GPU entry whose job found no GPU.
SKIPPED = "skipped"
# A cold compile's phases as compile_phases reads them from torch's own metrics, in the order they run.
COMPILE_PHASES = ("dynamo", "aot_autograd", "inductor_lowering", "autotune", "codegen", "cpp_triton_compile")


def unexplained_s(start_s: float, phases: dict[str, float]) -> float:
    """What a start's phases leave of its seconds; never below 0 (phases torch times across threads may overlap)."""
    return max(start_s - sum(phases.values()), 0.0)


# The paths from a process's start to its first output (`measure.starts`), in the order each round runs them:
# eager's floor, a compile in empty caches, the caches a cold start left, torch's portable cache artifacts alone, an
# AOTInductor package, a precompiled function.
START_PATHS = ("eager", "cold", "warm", "artifacts", "package", "precompiled")
# The paths whose artifact a process of its own builds before the rounds.
ARTIFACT_PATHS = ("package", "precompiled")
# The parts of a start, in the order they run: the interpreter and compilebench's worker (no torch), torch and the
# model's libraries imported, inductor's probe of the CPU's vector instructions (it compiles test programs into its
# cache folder, once per folder), the model built, the mode's wrapper made (torch.compile's own; scripting; export
# and package build), the path's artifact loaded, the first call (a lazy compile runs in it).
START_PARTS = ("interpreter_s", "import_s", "isa_probe_s", "build_s", "prepare_s", "load_s", "first_call_s")
# The shape settings a sweep may vary, in the order a sweep point's name lists them.
SWEEP_KEYS = ("batch_size", "image_size", "seq_len", "new_tokens", "dtype", "num_hidden_layers")
# Sweep keys that set the architecture: a transformers model's own `config`, not a shape.
CONFIG_SWEEP_KEYS = ("num_hidden_layers",)


class ErrorInfo(TypedDict):
    message: str
    traceback: str


class ResultHeader(TypedDict):
    """What every result carries, whatever happened to the job."""

    schema: int
    model: str
    mode: str
    hardware: str
    experiment_sha256: str  # Experiment.digest of what the job measured
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


class _Measured(ResultHeader, total=False):
    """What a measuring process records beyond its header, process record and result alike (absent when it did not
    get that far)."""

    spec: dict[str, Any]  # ModelSpec.to_json: the model's settings, for telling two runs' experiments apart
    experiment: dict[str, Any]  # Experiment.to_json of what the job measured, which experiment_sha256 digests
    finished_at: str
    environment: dict[str, Any]  # `environment_probe.summary`, and `ran_on`: where this process ran
    compile_s: float  # cold: the first call, after what preparation counts (jit scripting; export and package build)
    compile_warm_s: float | None  # first call of a fresh process on the caches the cold one wrote; export: load + call
    compile_bundle_s: float | None  # a fresh process's first call from torch's portable cache artifacts alone
    warm_starts: dict[str, Any]  # runner.start of each warm start (None where it did not run), and notes
    first_call_from: str  # measured again after a level shift: the set-aside record whose first call it kept
    compile_phases: dict[str, float] | None  # compile_phases.read: seconds per phase of the cold compile
    compile_trace: dict[str, Any]  # with measure.compile_trace: the TORCH_TRACE log, its tlparse report or why none
    # seconds of each step before the first call (script_s; export_s, package_s, load_s; a runtime's onnx_export_s,
    # convert_s, session_s, compile_model_s) and an artifact's bytes on disk (package_bytes, artifact_bytes)
    preparation: dict[str, float]
    settings_effect: dict[str, Any]  # wrappers.settings_effect: what inductor produced under the mode's settings
    warmup_ms: list[float]
    latency_ms: list[float]  # one per timed iteration (a stream: one per call of its first pass)
    eager_latency_ms: list[float]  # eager, interleaved with the mode
    interleave: dict[str, Any]  # timing.BlockPlan.record: the block lengths used
    machine: dict[str, Any]  # machine.Load: what else used the machine while the process measured; on a CPU
    # `capacity`: machine.parallel_capacity before eager is first timed and after the interleaved timing
    memory: dict[str, Any]
    # a process record: [page faults, calls] over each timed stretch (`mode_blocks`, `eager_blocks`, `mode_alone`,
    # `eager_alone`); a result: `summaries.page_faults`, per call
    page_faults: dict[str, Any]
    correctness: dict[str, Any]
    compiler: dict[str, Any]  # TorchDynamo counters
    workload: dict[str, Any]
    quantization: dict[str, Any]  # a quantized mode: what torchao did to the mode's copy of the model
    regions: dict[str, Any]  # a regional compile: regions.Stack.record of the stack compiled, and how
    runtime: dict[str, Any]  # a runtime's mode: its name, version, threads and settings as read back from it
    profile: dict[str, Any]
    stream: dict[str, Any]  # a shape stream: each call, each pass, each distinct value
    # a training step: losses, gradients and weights after k steps against eager's (`training.check_steps`)
    train_correctness: dict[str, Any]
    training: dict[str, Any]  # a training step: optimizer, each side's step split into parts, each side's peak memory


class ProcessRecord(_Measured, total=False):
    """What one measuring process writes (`runner.measure_process`): raw samples and facts, no summaries."""

    twin_latency_ms: list[float]  # eager only: a second eager callable, interleaved with the first
    alone_latency_ms: list[float]  # a mode timed alone, half before and half after its interleaved phase
    alone_calls: list[int]  # the calls of each of those two stretches, in order
    eager_alone_latency_ms: list[float]  # a non-eager mode's process: eager timed alone before the mode is built
    generations: dict[str, Any]  # text generation: new_tokens, and the timed generations' ms per token
    cache_replaced: dict[str, Any]  # a later process that failed on process 1's caches compiled cold: why
    samples_sha256: str  # files.samples_digest of what the process measured, as its worker wrote it
    record_sha256: str  # files.record_digest of every figure it carries, as its job last wrote it


class Result(_Measured, total=False):
    """What `summaries.combine` makes of an experiment's process records."""

    compile_unexplained_s: float | None  # compile_s less the phases
    processes: list[dict[str, Any]]  # summaries.process_entry of each measuring process, the cold one first
    processes_notes: list[str]  # several processes: what became of those the result does not rest on
    compile_warm_samples_s: list[float]  # the warm starts among the processes; compile_warm_s is their median
    compile_cold_samples_s: list[float]  # measure.cold_processes: each process's cold compile; compile_s their median
    stats: dict[str, Any]  # stats.summarize
    speedup: dict[str, Any]  # stats.speedup: value, ci95, interval (its method)
    noise: dict[str, Any]  # eager only: ratio, ci95 of eager against a second eager callable, and its samples
    steady_state: dict[str, Any]  # a mode's interleaved median against its median timed alone
    eager_alone: dict[str, Any]  # eager interleaved with the mode against eager timed alone before the mode was built
    throughput: dict[str, float]
    generation: dict[str, Any]  # summaries.summarize_tokens
    set_aside: list[dict[str, Any]]  # records set aside for a level shift and measured again (analysis.levels)
    level_shift: dict[str, Any] | None  # the level shift of a process the result still rests on
    bimodal: dict[str, Any] | None  # the mode's processes at two levels: each level's median and share


@dataclass(frozen=True)
class Request:
    """One request to the worker (`python -m compilebench.worker`), as the parent sends it on standard input."""

    kind: ClassVar[str]
    out: str

    def to_json(self) -> dict:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {"kind": self.kind, **{k: v.to_json() if hasattr(v, "to_json") else v for k, v in fields.items()}}

    @classmethod
    def from_json(cls, fields: dict) -> Request:
        """The request of this kind that `fields` (its JSON form, less the kind) describe."""
        typed = {"exp": Experiment.from_json, "settings": ModeSettings.from_json}
        return cls(**{k: typed[k](v) if k in typed else v for k, v in fields.items()})


@dataclass(frozen=True)
class EnvironmentRequest(Request):
    kind: ClassVar[str] = "environment"
    hardware: str
    entry: dict
    check: bool = True
    skip_if_absent: bool = False


@dataclass(frozen=True)
class ModeCheckRequest(Request):
    kind: ClassVar[str] = "mode_check"
    mode: str
    settings: ModeSettings
    models: dict = dataclasses.field(default_factory=dict)  # a regional mode's models: name to ModelSpec JSON


@dataclass(frozen=True)
class ReferenceRequest(Request):
    kind: ClassVar[str] = "reference"
    exp: Experiment


@dataclass(frozen=True)
class StartRequest(Request):
    """One fresh start of the experiment on one of `START_PATHS`, timed from the process's start to its first output
    (`worker.starts.start`); with a reference, that output checked against it."""

    kind: ClassVar[str] = "start"
    exp: Experiment
    path: str = "warm"
    artifact: str | None = None  # what the path loads: cache artifacts, a package or a precompiled function
    save_artifacts: str | None = None  # a cold start: where to save torch's cache artifacts after its first output
    reference: str | None = None


@dataclass(frozen=True)
class ArtifactRequest(Request):
    """Build what a start path loads (`ARTIFACT_PATHS`: an AOTInductor package, a precompiled function) into `artifact`,
    in a fresh process of its own."""

    kind: ClassVar[str] = "artifact"
    exp: Experiment
    path: str
    artifact: str


@dataclass(frozen=True)
class StepMemoryRequest(Request):
    """One side of a training experiment (`eager` or `mode`) stepped alone in a fresh process, for its peak memory
    (`worker.training.step_memory`)."""

    kind: ClassVar[str] = "step_memory"
    exp: Experiment
    side: str


@dataclass(frozen=True)
class MeasureRequest(Request):
    kind: ClassVar[str] = "measure"
    exp: Experiment
    reference: str | None = None
    env_record: str | None = None
    caches_given: bool = False
    cache_artifacts: str | None = None
    profile: bool = True  # with measure.profile: only the first process profiles


REQUESTS: dict[str, type[Request]] = {
    r.kind: r
    for r in (
        EnvironmentRequest,
        ModeCheckRequest,
        ReferenceRequest,
        StartRequest,
        ArtifactRequest,
        StepMemoryRequest,
        MeasureRequest,
    )
}


REQUIRED_KEYS = frozenset(ResultHeader.__required_keys__)
RESULT_KEYS = frozenset(Result.__required_keys__ | Result.__optional_keys__)
# What an `ok` result holds beyond its header, whatever the mode.
OK_KEYS = frozenset({"finished_at", "latency_ms", "stats", "correctness"})
# The settings a result records of its experiment, which must be that experiment's.
RECORDED_SETTINGS = ("device", "task", "dtype", "batch_size", "sweep_of", "swept", "mode_settings", "measure", "spec")


def error_info(exc: BaseException, lines: int = 15) -> ErrorInfo:
    """What a failure record says: the exception in one line, and the end of its traceback."""
    tail = "".join(traceback.format_exception(exc)).strip().splitlines()[-lines:]
    return {"message": f"{type(exc).__name__}: {exc}", "traceback": "\n".join(tail)}


def skipped(env_record: dict) -> bool:
    """An optional entry whose environment job found no device to run on: it has no experiments, by design."""
    return env_record.get("status") == SKIPPED


def is_training(result: dict) -> bool:
    """A training step's result (`MODEL.train`), another workload than the inference experiments beside it."""
    return bool((result.get("spec") or {}).get("train")) or "train_correctness" in result


def identity(exp: Experiment) -> dict[str, Any]:
    """What a result must carry to stand for `exp`: its name and fingerprint, and the settings it records, as
    JSON reads them back."""
    header = json.loads(json.dumps(result_header(exp)))
    return {**exp.identity(), **{key: header[key] for key in RECORDED_SETTINGS}}


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def result_header(
    exp: Experiment, status: str = "ok", error: str | None = None, *, traceback: str = "", started_at: str | None = None
) -> ResultHeader:
    """The header of `exp`'s result: which model, mode and hardware, in which dtype and batch, and how it went."""
    if status not in STATUSES:
        raise ValueError(f"status {status!r} is not one of {STATUSES}")
    spec = exp.spec
    return {
        "schema": SCHEMA_VERSION,
        "model": exp.model,
        "mode": exp.mode,
        "mode_settings": exp.mode_settings.to_json(),
        "hardware": exp.hardware,
        "experiment_sha256": exp.digest(),
        "experiment": exp.to_json(),
        "device": exp.device,
        "task": spec.task,
        "dtype": spec.dtype,
        "batch_size": spec.batch_size,
        "sweep_of": spec.sweep_of,
        "swept": spec.swept or {},
        "status": status,
        "error": None if error is None else {"message": error, "traceback": traceback},
        "started_at": started_at or now(),
        "measure": exp.measure.to_json(),
        "spec": spec.to_json(),
    }
