"""A config entry in, a module and its inputs out, on the device and in the dtype it runs in: each source's builder
(`worker/sources/`) makes the module, and this module sizes it against the device before anything is allocated.

Every model is wrapped so that it maps input tensors to one output tensor
(logits), which is what TorchScript, correctness checks and timing want.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import torch
from torch import nn

from ..core import sources
from ..core.experiment import ModelSpec
from .memory import PeakLiveBytes, device_total_bytes
from .sources import of as builder
from .sources.base import BuiltModel, LogitsOnly, ModelError, load_image

__all__ = ["BuiltModel", "LogitsOnly", "ModelError", "architecture", "build", "inputs_at", "load_image"]

log = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def build(name: str, spec: ModelSpec, seed: int, device: str) -> BuiltModel:
    """Build the model named `name` from its config entry, on `device`, in eval mode."""
    estimate = check_fits(name, spec, device)
    torch.manual_seed(seed)  # seeds the CPU and every GPU
    # Random weights are initialised where they run: a 7B model on the CPU takes minutes and 28 GB.
    with torch.device(device) if spec.weights == "random" else contextlib.nullcontext():
        built = builder(spec).build(name, spec, seed)
    weights_dtype = DTYPES.get(spec.weights_dtype)
    built.module.eval().to(device=device, dtype=weights_dtype)
    if built.causal_lm is not None:
        built.causal_lm.eval().to(device=device, dtype=weights_dtype)
    built.inputs = tuple(_to(t, device, weights_dtype) for t in built.inputs)
    if spec.labels:
        built.labels = Path(spec.labels).read_text().splitlines()
    built.memory_estimate = estimate
    return built


def inputs_at(built: BuiltModel, name: str, spec: ModelSpec, seed: int, device: str) -> tuple[torch.Tensor, ...]:
    """The built model's inputs at another shape: `spec` with another batch_size, seq_len or image_size."""
    inputs = builder(spec).inputs(built, name, spec, seed)
    return tuple(_to(t, device, DTYPES.get(spec.weights_dtype)) for t in inputs)


GIB = 2**30


def check_fits(name: str, spec: ModelSpec, device: str) -> dict:
    """Refuse, before allocating anything, a model whose weights, or whose weights and the tensors of one forward
    pass at its batch size and input shape (a stream's: at its largest value), need more memory than the device
    has. Returns what the guard knew: the activation estimate, or why there is none."""
    if spec.stream is not None:
        spec = spec.replace(**{spec.stream.axis: spec.stream.largest})
    needed, available = estimated_parameter_bytes(name, spec), device_total_bytes(device)
    if needed is None:  # an architecture that computes with tensors while it is built: the job finds out
        return {"estimated_activation_bytes": None, "estimate_unavailable": "not built on the meta device"}
    if available is not None and needed > available:
        raise ModelError(
            f"Config key `models.{name}`: its parameters alone need about {needed / GIB:.0f} GiB "
            f"({spec.weights_dtype or 'float32'}), but the device ({device}) has {available / GIB:.0f} GiB: "
            "expected a smaller config, a reduced-precision weights_dtype, or hardware with more memory."
        )
    activations, unavailable = activation_estimate(name, spec)
    if available is not None and activations is not None and needed + activations > available:
        shape = f"{spec.stream.axis} {spec.stream.largest}" if spec.stream else f"batch_size {spec.batch_size}"
        raise ModelError(
            f"Config key `models.{name}`: one forward pass at {shape} needs about "
            f"{activations / GIB:.1f} GiB of tensors alive at once besides {needed / GIB:.1f} GiB of weights "
            f"(counted on the meta device, which allocates nothing), but the device ({device}) has "
            f"{available / GIB:.0f} GiB: expected a smaller batch_size (or sweep point, or stream value), image_size "
            "or seq_len, or hardware with more memory."
        )
    return {"estimated_activation_bytes": activations, "estimate_unavailable": unavailable}


def estimated_parameter_bytes(name: str, spec: ModelSpec) -> int | None:
    """The weights' bytes, known without allocating them: the checkpoint's size on disk, or for random weights
    the parameters of a build on the meta device (which costs no memory) in the dtype they will be cast to; None
    for an architecture whose constructor reads tensor values (which the meta device does not have)."""
    if spec.weights != "random":
        path = Path(spec.weights)
        files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file() and not f.is_symlink()]
        return sum(f.stat().st_size for f in files)
    try:
        model = _meta_model(name, spec)
    except NotImplementedError as exc:
        log.warning("`models.%s` is not built on the meta device (%s): its size is not checked first", name, exc)
        return None
    return int(parameter_bytes(model) * _dtype_scale(spec))


def estimated_activation_bytes(name: str, spec: ModelSpec, bytes_per_element: int | None = None) -> int | None:
    """The most bytes of tensors alive at once in one eager forward pass at the configured batch size and input
    shape, inputs included and weights not, counted on the meta device, in the weights' dtype or at
    `bytes_per_element`; None where it cannot be counted (`activation_estimate` says why)."""
    return activation_estimate(name, spec, bytes_per_element)[0]


def activation_estimate(
    name: str, spec: ModelSpec, bytes_per_element: int | None = None
) -> tuple[int | None, str | None]:
    """`estimated_activation_bytes`, and why there is none: the architecture cannot be built on the meta device
    without loading its weights (a checkpoint of transformers), or cannot run there."""
    if spec.weights != "random" and not sources.get(spec.source).arch_without_weights:
        return None, f"a {spec.source} checkpoint is not built without loading its weights"
    try:
        model = _meta_model(name, spec)
        with torch.device("meta"):
            module, inputs = builder(spec).meta_inputs(model, spec)
            with torch.no_grad(), PeakLiveBytes(*inputs) as counted:
                module(*inputs)
    except Exception as exc:  # an estimate only: the job itself then finds out
        reason = f"{type(exc).__name__}: {exc}"
        log.warning("no activation estimate for `models.%s` on the meta device: %s", name, reason)
        return None, reason
    scale = bytes_per_element / 4 if bytes_per_element else _dtype_scale(spec)  # counted in float32
    return int(counted.peak * scale), None


def _meta_model(name: str, spec: ModelSpec) -> nn.Module:
    """The model's architecture on the meta device (no memory), without its weights, in eval mode as it runs."""
    with torch.device("meta"):
        return builder(spec).meta_model(name, spec)


def architecture(name: str, spec: ModelSpec) -> nn.Module | None:
    """The model's modules on the meta device, its weights not read: a checkpoint's from its config alone; None
    for pretrained weights not downloaded yet."""
    own = getattr(builder(spec), "architecture", None)
    return own(name, spec) if own is not None else _meta_model(name, spec)


def _dtype_scale(spec: ModelSpec) -> float:
    """Bytes in the weights' dtype per float32 byte."""
    dtype = DTYPES.get(spec.weights_dtype)
    return torch.finfo(dtype).bits / 32 if dtype is not None else 1.0


def _to(tensor: torch.Tensor, device: str, dtype: torch.dtype | None) -> torch.Tensor:
    """Inputs go to the device; float inputs take the weights' dtype when one is set (token ids stay integers)."""
    if dtype is not None and tensor.is_floating_point():
        return tensor.to(device=device, dtype=dtype)
    return tensor.to(device)


def parameter_bytes(module: nn.Module, bytes_per_element: int | None = None) -> int:
    """Bytes of the weights one forward pass reads (parameters and buffers), as stored or at `bytes_per_element`."""
    tensors = list(module.parameters()) + list(module.buffers())
    return sum(t.numel() * (bytes_per_element or t.element_size()) for t in {id(t): t for t in tensors}.values())
