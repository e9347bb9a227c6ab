"""An experiment as a value: frozen, typed, built once by `config` and handed to every function that measures.

Its JSON form (`to_json`) is the contract with what is on disk: the workflow passes it to each job as a param,
a job's worker reads it back (`from_json`), and its fingerprint (`digest`, a result's `experiment_sha256`) is the
SHA-256 of that form. It is exactly the form earlier versions wrote, key for key, so that an upgrade measures
nothing again (tests/golden_digests.json holds the fingerprints of every shipped and test experiment). A key is
omitted where it is optional and unset, as the config left it out.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any, ClassVar

from .kinds import ModeSettings
from .parts import Part, Quantize, canonical
from .parts import optional as _optional
from .parts import part as _part

__all__ = ["Experiment", "Measure", "ModeSettings", "ModelSpec", "Part", "Quantize", "Stream", "Train", "canonical"]

DEFAULT_EXTRA_PROCESSES = 2  # `measure.max_extra_processes` where the config gives none


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
    file: str | None = _optional()  # source python: the user's file, its content's hash, the callables in it
    file_sha256: str | None = _optional()
    factory: str | None = _optional()
    inputs: str | None = _optional()
    input: dict[str, Any] | None = _optional()


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
