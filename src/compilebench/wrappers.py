"""How a built model is wrapped, in the mode a definition names, before it is timed."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch
from torch import nn

from .errors import Unsupported

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def precision(device: str, dtype: str) -> contextlib.AbstractContextManager:
    """Reduced precision through autocast, as the ROCm study ran it; float32 runs as is."""
    if dtype == "float32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device, dtype=DTYPES[dtype])


def compile_options(mode: str, fullgraph: bool) -> dict:
    return {"backend": "inductor", "mode": mode.removeprefix("compile-"), "fullgraph": fullgraph, "dynamic": False}


def wrap(
    module: nn.Module, mode: str, inputs: tuple, *, fullgraph: bool, jit: str, device: str, dtype: str
) -> Callable:
    """The callable that runs `module` in `mode`; lazy modes compile on their first call."""
    if mode == "eager":
        return module
    if mode == "jit":
        return _torchscript(module, inputs, jit, device, dtype)
    if mode.startswith("compile-"):
        compiled = torch.compile(module, **compile_options(mode, fullgraph))
        if mode == "compile-reduce-overhead" and device.startswith("cuda"):
            return _cuda_graph_steps(compiled)
        return compiled
    raise Unsupported(f"unknown mode {mode!r}")


def _cuda_graph_steps(compiled: Callable) -> Callable:
    """Mark each call a new CUDA-graph step, so that replays may reuse the previous output buffers."""

    def step(*args, **kwargs):
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(*args, **kwargs)

    return step


def _torchscript(module: nn.Module, inputs: tuple, method: str, device: str, dtype: str) -> Callable:
    """Trace or script, freeze, and optimize_for_inference, as the Graviton study did."""
    try:
        with torch.no_grad(), precision(device, dtype):
            if method == "script":
                scripted = torch.jit.script(module)
            else:
                scripted = torch.jit.trace(module, inputs, strict=False, check_trace=False)
            return torch.jit.optimize_for_inference(torch.jit.freeze(scripted.eval()))
    except Exception as exc:  # TorchScript raises many types; all mean "cannot apply"
        raise Unsupported(f"TorchScript {method} failed: {type(exc).__name__}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
