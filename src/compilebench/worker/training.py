"""A training step measured as an inference call is: one optimizer step (zero_grad, forward, loss, backward, the
optimizer's step), eager and the mode each on a copy of the same initial weights and the same batch, timed in
interleaved blocks; the mode's losses, gradients and weights checked against eager's after k steps; the step split
into forward, backward and optimizer; the step's peak memory."""

from __future__ import annotations

import contextlib
import copy
import ctypes
import ctypes.util
import gc
import logging
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from ..core import kinds
from ..core.errors import Unsupported
from ..core.experiment import Experiment, ModeSettings, Train
from ..core.thresholds import FLOAT64_MULTIPLIER, TRAIN_TOL
from . import timing, wrappers
from .correctness import rmse
from .models import BuiltModel

log = logging.getLogger(__name__)

SGD_MOMENTUM = 0.9
SPLIT_STEPS = 5  # steps of each side timed part by part, after the timed phase
MEMORY_STEPS = 3  # steps of each side whose peak memory is read
SPLIT_PARTS = ("forward_ms", "backward_ms", "optimizer_ms")
EAGER = ModeSettings.from_json({"kind": "eager"})
MEMORY_RULE = (
    f"each side alone in a fresh process of its own: the most memory {MEMORY_STEPS} steps took above what the process "
    "held before them (its first steps, which compile, recompile and allocate the optimizer's state, read apart): the "
    "allocator's peak on a GPU; on a CPU the peak resident set (VmHWM, reset) over the resident set before, freed "
    "memory handed back first"
)


@dataclass(frozen=True)
class Batch:
    """The one batch every copy trains on: the model's inputs, seeded targets, and the loss on the model's output."""

    inputs: tuple[torch.Tensor, ...]
    loss: Callable[[torch.Tensor], torch.Tensor]
    targets: str  # what the loss compares the output with, in words

    def in_float64(self) -> Batch:
        inputs = tuple(x.double() if x.is_floating_point() else x for x in self.inputs)
        return Batch(inputs, self.loss, self.targets)


def training_batch(built: BuiltModel, seed: int) -> Batch:
    """Cross-entropy on seeded class labels for a classifier's [batch, classes] output, on the next token for text
    generation, on the input tokens themselves for fill-mask."""
    inputs = built.inputs
    with torch.no_grad():
        shape = built.module(*inputs).shape
    if len(shape) == 2:
        generator = torch.Generator().manual_seed(seed)
        labels = torch.randint(shape[-1], (shape[0],), generator=generator).to(inputs[0].device)
        return Batch(inputs, lambda out: nn.functional.cross_entropy(out.float(), labels), "seeded class labels")
    ids = inputs[0]
    if built.task == "text-generation":

        def next_token(out: torch.Tensor) -> torch.Tensor:
            return nn.functional.cross_entropy(out[:, :-1].flatten(0, 1).float(), ids[:, 1:].flatten())

        return Batch(inputs, next_token, "the next token")
    return Batch(
        inputs, lambda out: nn.functional.cross_entropy(out.flatten(0, 1).float(), ids.flatten()), "the input tokens"
    )


def optimizer_for(train: Train, module: nn.Module) -> torch.optim.Optimizer:
    if train.optimizer == "sgd":
        return torch.optim.SGD(module.parameters(), lr=train.lr, momentum=SGD_MOMENTUM)
    return torch.optim.AdamW(module.parameters(), lr=train.lr)


def compiled_autograd_obstacle() -> str | None:
    """Why this torch cannot trace the backward with compiled autograd, or None where it can."""
    module = getattr(torch._dynamo, "compiled_autograd", None)
    if module is None or not hasattr(module, "_enable"):
        return f"torch {torch.__version__} has no compiled autograd (torch._dynamo.compiled_autograd._enable)"
    return None


def training_copy(module: nn.Module) -> nn.Module:
    """A copy of `module` in training mode with its dropout off, so that every copy does the same arithmetic."""
    trained = copy.deepcopy(module).train()
    for layer in trained.modules():
        if isinstance(layer, nn.modules.dropout._DropoutNd):
            layer.eval()
    return trained


class Trainee:
    """One copy of the model with its optimizer, stepping on the batch as `settings` say: eager, or compiled (the
    model or the whole step, the optimizer's step too, the backward by compiled autograd)."""

    def __init__(self, module: nn.Module, train: Train, batch: Batch, settings: ModeSettings, wrap_options=None):
        self.module, self.batch, self.settings = module, batch, settings
        self.steps, self.last_loss = 0, None
        self.optimizer = optimizer_for(train, module)
        self.forward: Callable = module
        self.optimizer_step: Callable = self.optimizer.step
        self.autograd: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
        self.whole: Callable[[], torch.Tensor] = self._step
        if not kinds.of(settings).compiles_on_first_call:
            return
        kwargs = wrappers.compile_kwargs(settings)
        if settings.autograd:
            if why := compiled_autograd_obstacle():
                raise Unsupported(f"compiled autograd: {why}")
            backward_compiler = torch.compile(**kwargs)
            self.autograd = lambda: torch._dynamo.compiled_autograd._enable(backward_compiler)
        if settings.optimizer:
            self.optimizer_step = torch.compile(self.optimizer.step, **kwargs)
        if (settings.scope or "model") == "step":
            self.whole = torch.compile(self._step, **kwargs)
        else:
            self.forward, _ = wrappers.wrap(module, settings, batch.inputs, **wrap_options)

    @property
    def compiled_whole(self) -> bool:
        return getattr(self.settings, "scope", None) == "step"  # a compile setting

    def _step(self) -> torch.Tensor:
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.batch.loss(self.forward(*self.batch.inputs))
        with self.autograd():
            loss.backward()
        self.optimizer_step()
        return loss.detach()

    def step(self) -> torch.Tensor:
        self.steps += 1
        with torch.enable_grad():
            self.last_loss = self.whole()
            return self.last_loss

    def not_finite(self) -> str | None:
        """The first of its last loss and its weights that is not finite (NaN or infinite), or None."""
        if self.last_loss is not None and not bool(torch.isfinite(self.last_loss).all()):
            return "its loss"
        return next((f"weight {name}" for name, p in self.module.named_parameters()
                     if not bool(torch.isfinite(p.detach()).all())), None)  # fmt: skip

    def split(self, clock: timing.Clock) -> dict[str, float]:
        """One step timed part by part, each part synchronized: forward with the loss, backward, optimizer."""
        with torch.enable_grad():
            self.optimizer.zero_grad(set_to_none=True)
            forward_ms, loss = clock.time(lambda: self.batch.loss(self.forward(*self.batch.inputs)))
            with self.autograd():
                backward_ms, _ = clock.time(loss.backward)
            optimizer_ms, _ = clock.time(self.optimizer_step)
        return {"forward_ms": forward_ms, "backward_ms": backward_ms, "optimizer_ms": optimizer_ms}


@dataclass
class Trajectory:
    """What k steps of one copy left: the loss of each step, the last step's gradients and the weights after."""

    losses: torch.Tensor
    grads: dict[str, torch.Tensor]
    params: dict[str, torch.Tensor]


def trajectory(trainee: Trainee, steps: int, clock: timing.Clock | None = None) -> tuple[Trajectory, float | None]:
    """`steps` steps of `trainee` from where it stands, and the first step's milliseconds (its compile) where a clock
    is given."""
    losses, first_ms = [], None
    for k in range(steps):
        if k == 0 and clock is not None:
            first_ms, loss = clock.time(trainee.step)
        else:
            loss = trainee.step()
        losses.append(loss.double().cpu())
    named = list(trainee.module.named_parameters())
    grads = {name: p.grad.detach().double().cpu() for name, p in named if p.grad is not None}
    params = {name: p.detach().double().cpu() for name, p in named}
    return Trajectory(torch.stack(losses), grads, params), first_ms


def _pairs(one: Trajectory, other: Trajectory) -> list[tuple[str, str, torch.Tensor, torch.Tensor]]:
    pairs = [("loss", "losses", one.losses, other.losses)]
    pairs += [("grad", f"grad of {name}", one.grads[name], other.grads.get(name)) for name in one.grads]
    pairs += [("param", name, one.params[name], other.params[name]) for name in one.params]
    return pairs


GROUP_FLOOR = 1e-3  # a tensor's error is relative to at least this share of its group's largest value


def relative_errors(one: Trajectory, other: Trajectory) -> list[tuple[str, str, float]]:
    """Each tensor's largest difference of `other` from `one`, relative to the larger of its own largest value and
    GROUP_FLOOR x the largest of its group (losses, gradients, weights): a gradient that is zero in exact arithmetic
    (a key projection's bias under softmax) holds rounding noise that no relative error describes."""
    pairs = _pairs(one, other)
    largest: dict[str, float] = {}
    for group, _, ref, _ in pairs:
        largest[group] = max(largest.get(group, 0.0), float(ref.abs().max()))
    errors = []
    for group, name, ref, out in pairs:
        scale = max(float(ref.abs().max()), GROUP_FLOOR * largest[group], 1e-30)
        errors.append((group, name, float("inf") if out is None else float((out - ref).abs().max()) / scale))
    return errors


def check_steps(
    mode: Trajectory, eager: Trajectory, repeat: Trajectory, float64: Trajectory | None, k: int, dtype: str
) -> dict:
    """`train_correctness`, gated as PyTorch's dynamo harness gates training: eager run twice must agree (else
    `eager_two_runs_differ`); then each loss, gradient and weight of the mode after k steps passes where it is
    close to eager's (within TRAIN_TOL, absolute and relative), or, where the model trains in float64, where its
    RMSE against float64 is at most the multiplier x eager's own + TRAIN_TOL / 10."""
    tolerance = TRAIN_TOL if dtype == "float32" else 10 * TRAIN_TOL
    repeat_rel = max(rel for _, _, rel in relative_errors(eager, repeat))
    worst: dict[str, float] = {"loss": 0.0, "grad": 0.0, "param": 0.0}
    failing = None
    multiplier = FLOAT64_MULTIPLIER["float32" if dtype == "float32" else "reduced"]
    errors = relative_errors(eager, mode)
    for (group, name, ref, out), (_, _, rel), truth in zip(_pairs(eager, mode), errors, _truths(eager, float64)):
        worst[group] = rel if math.isnan(rel) or rel > worst[group] else worst[group]  # a NaN stays: not 0.0
        passed = out is not None and (
            bool(torch.allclose(out, ref, atol=tolerance, rtol=tolerance))
            or (truth is not None and rmse(truth, out) <= multiplier * rmse(truth, ref) + tolerance / 10)
        )
        if not passed and (failing is None or rel > failing[1]):
            failing = (name, rel)
    close = f"within {tolerance:g} of eager's (absolute and relative)"
    rule = (
        f"after {k} steps: each loss, gradient and weight {close}, or with an RMSE against eager in float64 at most "
        f"{multiplier:g} x eager's + {tolerance / 10:g}"
        if float64 is not None
        else f"after {k} steps: each loss, gradient and weight {close}"
    )
    record = {
        "k": k,
        "loss_max_rel": worst["loss"],
        "grad_max_rel": worst["grad"],
        "param_max_rel": worst["param"],
        "eager_repeat_max_rel": repeat_rel,
        "rule": rule,
    }
    if repeat_rel > tolerance:
        reason = f"eager_two_runs_differ: two eager copies differ by {repeat_rel:.3g} (relative) after {k} steps"
        return {**record, "passed": False, "reason": reason}
    if failing is not None:
        reason = f"{failing[0]} differs from eager's by {failing[1]:.3g} (relative) after {k} steps"
        return {**record, "passed": False, "reason": reason, "worst_tensor": failing[0]}
    return {**record, "passed": True}


def _truths(eager: Trajectory, float64: Trajectory | None) -> list[torch.Tensor | None]:
    if float64 is None:
        return [None] * len(_pairs(eager, eager))
    return [truth for _, _, truth, _ in _pairs(float64, float64)]


def float64_trajectory(module: nn.Module, exp: Experiment, batch: Batch) -> tuple[Trajectory | None, str | None]:
    """k eager steps of a float64 copy (weights, inputs, no autocast), or why there are none."""
    try:
        with torch.autocast(exp.device, enabled=False):
            trainee = Trainee(module.double(), exp.spec.train, batch.in_float64(), EAGER)
            return trajectory(trainee, exp.spec.train.steps_checked)[0], None
    except Exception as exc:  # a model that cannot train in float64 is checked against eager alone
        return None, f"the model does not train in float64: {type(exc).__name__}: {str(exc)[:300]}"


_libc = None


def _release_freed_memory() -> None:
    """Hand memory the allocator holds free back to the system, so that the resident set is what is alive."""
    global _libc
    gc.collect()
    if _libc is None:
        name = ctypes.util.find_library("c")
        _libc = ctypes.CDLL(name) if name else False
    if _libc and hasattr(_libc, "malloc_trim"):
        _libc.malloc_trim(0)


def _status_bytes(field: str) -> int | None:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def peak_above(run: Callable[[], object], device: str) -> int | None:
    """The most memory `run` took above what the process held before it: the allocator's peak on a GPU; on a CPU the
    peak resident set (`VmHWM`, reset through /proc/self/clear_refs) over the resident set before, freed memory handed
    back first. None where the system offers neither."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        run()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before
    _release_freed_memory()
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        return None
    before = _status_bytes("VmRSS")
    run()
    peak = _status_bytes("VmHWM")
    return None if before is None or peak is None else max(0, peak - before)


def step_memory(exp: Experiment, built: BuiltModel, side: str, wrap_options: dict) -> dict:
    """One side's steps alone in this fresh process, as a user who trains only that way runs them: the peak of its
    first steps (as many as the measurement takes before timing, at least MEMORY_STEPS: the compile's, and any
    recompile's, for a compiled mode) and of MEMORY_STEPS steps after them, each over what the process held before
    (`peak_above`); the whole process's peak; and the graphs compiled during the later steps (0 unless the mode kept
    recompiling, which the figure then includes)."""
    from torch._dynamo.utils import counters

    from .memory import process_peak_bytes

    settings = EAGER if side == "eager" else exp.mode_settings
    batch = training_batch(built, exp.seed)
    trainee = Trainee(training_copy(built.module), exp.spec.train, batch, settings, wrap_options)
    first = max(exp.spec.train.steps_checked, MEMORY_STEPS)
    first_peak = peak_above(lambda: [trainee.step() for _ in range(first)], exp.device)
    graphs = counters["stats"]["unique_graphs"]
    steps_peak = peak_above(lambda: [trainee.step() for _ in range(MEMORY_STEPS)], exp.device)
    return {
        "side": side,
        "first_steps": first,
        "first_steps_peak_bytes": first_peak,
        "step_peak_bytes": steps_peak,
        "graphs_compiled_during_steps": counters["stats"]["unique_graphs"] - graphs,
        "process_peak_bytes": process_peak_bytes(exp.device),
    }


def split_parts(eager: Trainee, mode: Trainee, clock: timing.Clock) -> dict:
    """Each side's step part by part (median of SPLIT_STEPS steps, alternating), or why the mode's cannot be split."""
    sides = {"eager": eager} if mode.compiled_whole else {"eager": eager, "mode": mode}
    samples: dict[str, list[dict]] = {side: [] for side in sides}
    for _ in range(SPLIT_STEPS):
        for side, trainee in sides.items():
            samples[side].append(trainee.split(clock))
    split = {side: _medians(taken) for side, taken in samples.items()}
    if mode.compiled_whole:
        split["mode"] = None
        split["mode_unsplit"] = "the step is compiled whole (scope: step): forward, backward and optimizer are one"
    return split


def _medians(steps: list[dict[str, float]]) -> dict[str, float]:
    return {part: statistics.median(step[part] for step in steps) for part in SPLIT_PARTS}


@dataclass
class EagerRuns:
    """Eager's side of the check: two copies of the same initial weights stepped k times on the same batch, and a
    float64 copy (or why there is none). The copies go on to be timed: `eager` beside the mode, `twin` alone."""

    batch: Batch
    eager: Trainee
    twin: Trainee
    reference: Trajectory
    repeat: Trajectory
    float64: Trajectory | None
    float64_missing: str | None


def eager_runs(exp: Experiment, built: BuiltModel) -> EagerRuns:
    train = exp.spec.train
    batch = training_batch(built, exp.seed)
    eager = Trainee(training_copy(built.module), train, batch, EAGER)
    twin = Trainee(training_copy(built.module), train, batch, EAGER)
    log.info("%d steps of eager, twice, then in float64", train.steps_checked)
    reference, _ = trajectory(eager, train.steps_checked)
    repeat, _ = trajectory(twin, train.steps_checked)
    float64, missing = float64_trajectory(training_copy(built.module), exp, batch)
    return EagerRuns(batch, eager, twin, reference, repeat, float64, missing)


def mode_run(exp: Experiment, built: BuiltModel, runs: EagerRuns, clock: timing.Clock, wrap_options: dict):
    """The mode's copy of the same initial weights, stepped k times (the first step compiles, timed), and the
    check of what it left against eager's: the copy, the first step's seconds, `train_correctness`."""
    k = exp.spec.train.steps_checked
    mode = Trainee(training_copy(built.module), exp.spec.train, runs.batch, exp.mode_settings, wrap_options)
    log.info("%d steps of the mode (the first compiles)", k)
    compiled, first_ms = trajectory(mode, k, clock)
    log.info("the mode's first step took %.2f s", first_ms / 1e3)
    check = check_steps(compiled, runs.reference, runs.repeat, runs.float64, k, exp.spec.dtype)
    if runs.float64_missing:
        check["float64_missing"] = runs.float64_missing
    return mode, first_ms / 1e3, check


def finite_after_timing(check: dict, eager: Trainee, mode: Trainee) -> dict:
    """`check`, failed where either side's loss or weights are not finite after every step it took (the checked
    steps, warm-up and the timed steps): a step that diverges after the checked steps trains nothing, however fast."""
    for side, trainee in (("the mode", mode), ("eager", eager)):
        if what := trainee.not_finite():
            reason = (
                f"{side}'s {what} is not finite (NaN or infinite) after {trainee.steps} steps, past the "
                f"{check['k']} checked: the training diverged"
            )
            return {**check, "passed": False, "reason": reason, "diverged_after_steps": trainee.steps}
    return check


def summary_check(check: dict) -> dict:
    """The `correctness` every result has, from `train_correctness`."""
    return {
        "passed": check["passed"],
        "rule": "training",
        "criterion": check["rule"],
        **({"reason": check["reason"]} if "reason" in check else {}),
    }
