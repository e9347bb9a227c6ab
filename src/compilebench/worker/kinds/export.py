"""torch.export, then an AOTInductor package built and loaded, as a model is deployed without a Python compile."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from ...core.errors import Unsupported
from .base import first_line, precision


def wrap(
    module: nn.Module, settings, inputs: tuple, *, device: str, dtype: str, workdir: str, **_
) -> tuple[Callable, dict]:
    steps = save_package(module, inputs, settings, device, dtype, str(Path(workdir) / "model.pt2"))
    begin = time.perf_counter()
    loaded = torch._inductor.aoti_load_package(steps.pop("path"))
    return loaded, {**steps, "load_s": time.perf_counter() - begin}


def save_package(module: nn.Module, inputs: tuple, settings, device: str, dtype: str, path: str | Path) -> dict:
    """The model exported and compiled by AOTInductor into a package at `path`, with the inductor options the mode
    sets (an export mode's, or a compile mode's definition); the seconds each step took, and the package's bytes."""
    begin = time.perf_counter()
    try:
        with torch.no_grad(), precision(device, dtype):
            exported = torch.export.export(module, inputs, strict=getattr(settings, "strict", False))
    except Exception as exc:  # export reports an unexportable model through many exception types
        raise Unsupported(f"torch.export failed: {type(exc).__name__}: {first_line(exc)}") from exc
    exported_at = time.perf_counter()
    with precision(device, dtype):
        path = torch._inductor.aoti_compile_and_package(
            exported, package_path=str(path), inductor_configs=dict(settings.options)
        )
    return {
        "export_s": exported_at - begin,
        "package_s": time.perf_counter() - exported_at,
        "package_bytes": os.path.getsize(path),
        "path": path,
    }


def load_package(settings, device: str, path: Path, inputs: int) -> tuple[Callable, dict]:
    return torch._inductor.aoti_load_package(str(path)), {}
