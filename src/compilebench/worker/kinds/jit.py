"""TorchScript: trace or script, then freeze and optimize_for_inference where the settings say so."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch import nn

from ...core.errors import Unsupported
from .base import first_line, precision


def wrap(module: nn.Module, settings, inputs: tuple, *, device: str, dtype: str, **_) -> tuple[Callable, dict]:
    """Trace or script, then freeze and optimize_for_inference where the settings say so (as the Graviton study)."""
    method = settings.method
    begin = time.perf_counter()
    try:
        with torch.no_grad(), precision(device, dtype):
            if method == "script":
                scripted = torch.jit.script(module)
            else:
                scripted = torch.jit.trace(module, inputs, strict=False, check_trace=False)
            scripted = scripted.eval()
            if settings.freeze:
                scripted = torch.jit.freeze(scripted)
            if settings.optimize_for_inference:
                scripted = torch.jit.optimize_for_inference(scripted)
    except Exception as exc:  # TorchScript raises many types; all mean "cannot apply"
        raise Unsupported(f"TorchScript {method} failed: {type(exc).__name__}: {first_line(exc)}") from exc
    return scripted, {"script_s": time.perf_counter() - begin}
