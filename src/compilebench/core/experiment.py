"""An experiment as a value: frozen, typed, built once by `config` and handed to every function that measures.

Its JSON form (`to_json`) is the contract with what is on disk: the workflow passes it to each job as a param,
a job's worker reads it back (`from_json`), and its fingerprint (`digest`, a result's `experiment_sha256`) is the
SHA-256 of that form. It is exactly the form earlier versions wrote, key for key, so that an upgrade measures
nothing again (tests/golden_digests.json holds the fingerprints of every shipped and test experiment). A key is
omitted where it is optional and unset, as the config left it out.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

DEFAULT_EXTRA_PROCESSES = 2  # `measure.max_extra_processes` where the config gives none


def _optional(part: type | None = None) -> Any:
    """A key the JSON form holds only when it is set."""
    return field(default=None, metadata={"optional": True, "part": part})


def _part(part: type) -> Any:
    return field(metadata={"part": part})


class Part:
    """A frozen record with a JSON form: its fields, parts as their own JSON, unset optional keys left out."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]):
        return cls._read(data)

    @classmethod
    def _read(cls, data: Mapping[str, Any]):
        known = {f.name: f for f in dataclasses.fields(cls) if f.init}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"{cls.__name__} has no key {', '.join(unknown)}: expected {', '.join(sorted(known))}")
        values = {}
        for name, value in data.items():
            part = known[name].metadata.get("part")
            values[name] = part.from_json(value) if part is not None and value is not None else copy.deepcopy(value)
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("optional"):
                continue
            out[f.name] = value.to_json() if isinstance(value, Part) else copy.deepcopy(value)
        return canonical(out)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def canonical(value: Any) -> Any:
    """Dicts with sorted keys, all the way down: Snakemake compares params as text, and key order is no change."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


@dataclass(frozen=True)
class Stream(Part):
    """A shape stream (`models.NAME.stream`): one axis, its values in call order or a seeded range."""

    batch_size: Any = _optional()
    seq_len: Any = _optional()
    image_size: Any = _optional()
    repeat: int | None = _optional()
    calls: int | None = _optional()
    seed: int | None = _optional()
    passes: int | None = _optional()

    AXES: ClassVar[tuple[str, ...]] = ("batch_size", "seq_len", "image_size")

    @property
    def axis(self) -> str:
        return next(a for a in self.AXES if getattr(self, a) is not None)

    @property
    def largest(self) -> int:
        """The axis's largest value: a range's `high`, or the largest of a list."""
        values = getattr(self, self.axis)
        return values["high"] if isinstance(values, dict) else max(values)


@dataclass(frozen=True)
class Quantize(Part):
    """A quantized mode's torchao settings, `min_cosine` filled in."""

    method: str
    min_cosine: float
    group_size: int | None = _optional()


# A training step on a CPU runs with glibc's allocator pinned: what a step frees stays with the process rather than
# going back to the kernel to be faulted in again next step (otherwise eager's step pays ~10k page faults that
# a process whose heap was grown before does not, and two processes disagree). A hardware entry's `env` setting
# either variable decides instead.
PINNED_ALLOCATOR = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "10000000000"}


@dataclass(frozen=True)
class Train(Part):
    """A training experiment's step (`models.NAME.train`): the optimizer and its learning rate, the loss, and after
    how many steps the mode's weights are checked against eager's."""

    optimizer: str
    lr: float
    loss: str
    steps_checked: int


@dataclass(frozen=True)
class ModeSettings(Part):
    """What a mode runs with, every setting of its kind filled in (`modes.settings`)."""

    kind: ClassVar[str]
    quantize: Quantize | None = _optional(Quantize)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModeSettings:
        """The settings of the kind `data` names: read as that kind's own class."""
        kinds = {
            c.kind: c
            for c in (
                EagerSettings,
                JitSettings,
                CompileSettings,
                ExportSettings,
                OnnxRuntimeSettings,
                OpenVinoSettings,
            )
        }
        kind = kinds.get(data.get("kind"))
        if kind is None or cls not in (ModeSettings, kind):
            raise ValueError(f"mode settings of kind {data.get('kind')!r}: expected one of {', '.join(kinds)}")
        return kind._read({k: v for k, v in data.items() if k != "kind"})

    def to_json(self) -> dict[str, Any]:
        return canonical({"kind": self.kind, **super().to_json()})


@dataclass(frozen=True)
class EagerSettings(ModeSettings):
    kind: ClassVar[str] = "eager"


@dataclass(frozen=True)
class JitSettings(ModeSettings):
    kind: ClassVar[str] = "jit"
    method: str = "trace"
    freeze: bool = True
    optimize_for_inference: bool = True


@dataclass(frozen=True)
class CompileSettings(ModeSettings):
    kind: ClassVar[str] = "compile"
    backend: str = "inductor"
    mode: str = "default"
    options: dict[str, Any] = field(default_factory=dict)
    dynamic: bool | None = False
    fullgraph: bool = False
    mark_dynamic: list[str] | None = _optional()
    recompile_limit: int | None = _optional()
    regional: bool | str | None = _optional()  # true, a stack's dotted path, or "nested"
    # Training experiments only: what is compiled (the model, or the whole step), the optimizer's step compiled too,
    # the backward traced by compiled autograd.
    scope: str | None = _optional()
    optimizer: bool | None = _optional()
    autograd: bool | None = _optional()


@dataclass(frozen=True)
class ExportSettings(ModeSettings):
    kind: ClassVar[str] = "export"
    options: dict[str, Any] = field(default_factory=dict)
    strict: bool = False


@dataclass(frozen=True)
class OnnxRuntimeSettings(ModeSettings):
    """The model exported to ONNX (torch.onnx.export) and run by an ONNX Runtime InferenceSession."""

    kind: ClassVar[str] = "onnxruntime"
    dynamo: bool = True
    graph_optimization_level: str = "all"
    opset: int | None = _optional()


@dataclass(frozen=True)
class OpenVinoSettings(ModeSettings):
    """The model converted by OpenVINO (from the torch model, or from its ONNX export) and compiled for a device."""

    kind: ClassVar[str] = "openvino"
    source: str = "torch"
    precision: str = "f32"
    hint: str = "LATENCY"
    streams: int = 1


@dataclass(frozen=True)
class ModelSpec(Part):
    """A model entry as the experiment runs it: asset names resolved to paths, pretrained weights to their folder."""

    source: str
    arch: str
    task: str
    weights: str
    dtype: str
    batch_size: int
    image_size: int
    seq_len: int
    new_tokens: int
    jit: str
    config: dict[str, Any] | None = _optional()
    hub_id: str | None = _optional()
    revision: str | None = _optional()
    prompt: str | None = _optional()
    image: str | None = _optional()
    labels: str | None = _optional()
    weights_dtype: str | None = _optional()
    sweep_of: str | None = _optional()
    swept: dict[str, Any] | None = _optional()
    stream: Stream | None = _optional(Stream)
    stream_of: str | None = _optional()
    train: Train | None = _optional(Train)
    train_of: str | None = _optional()


@dataclass(frozen=True)
class Measure(Part):
    """How an experiment is measured: `config.MEASURE_DEFAULTS`, then the global `measure`, then the model's own."""

    warmup: int
    iterations: int
    min_time_s: float
    max_iterations: int
    interleave_block: int | None
    processes: int
    interleave_block_s: float
    block_warmup: int
    min_blocks: int
    steady_state_s: float
    timeout_s: float
    fullgraph: bool
    bootstrap_resamples: int
    private_cache: bool
    warm_start: bool
    bundle_start: bool
    profile: bool
    profile_iterations: int
    compile_trace: bool | None = _optional()
    cold_processes: bool | None = _optional()  # every process compiles in empty caches, not process 1 alone
    max_extra_processes: int | None = _optional()  # fresh processes measured again for a level shift (None: 2)
    trace: str | None = _optional()  # with `profile`: where the Chrome trace goes
    compile_trace_dir: str | None = _optional()  # with `compile_trace`: where the TORCH_TRACE log goes

    @property
    def extra_processes(self) -> int:
        """How many times a process whose level moved is measured again (`max_extra_processes`, default 2)."""
        return DEFAULT_EXTRA_PROCESSES if self.max_extra_processes is None else self.max_extra_processes

    @property
    def warm_start_by_job(self) -> bool:
        """Whether the warm start is a fresh process the job starts after process 1, not a later measuring process
        (one process, or every process cold)."""
        return self.processes == 1 or bool(self.cold_processes)


@dataclass(frozen=True)
class Experiment(Part):
    """Everything one measurement depends on, and nothing else. A reference experiment (the eager float32 output
    of a model on a hardware entry) has no mode and no measure."""

    model: str
    hardware: str
    seed: int
    spec: ModelSpec = _part(ModelSpec)
    device: str
    hardware_env: dict[str, str]
    threads: int | None
    mode: str | None = _optional()
    mode_settings: ModeSettings | None = _optional(ModeSettings)
    measure: Measure | None = _optional(Measure)
    python_env: str | None = _optional()  # the platform's own Python environment (envs/NAME.txt), where it has one

    @property
    def name(self) -> str:
        return f"{self.hardware}/{self.model}/{self.mode}"

    def reference(self) -> Experiment:
        """What the eager float32 reference of this experiment's model depends on: not the mode, not the
        measurement."""
        return dataclasses.replace(self, mode=None, mode_settings=None, measure=None)

    def digest(self) -> str:
        """The fingerprint of everything the job measured with: a result is taken only for the experiment it
        carries."""
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()

    def identity(self) -> dict[str, str]:
        """What a result must carry to stand for this experiment."""
        return {"hardware": self.hardware, "model": self.model, "mode": self.mode, "experiment_sha256": self.digest()}
