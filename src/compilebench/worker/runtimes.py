"""What the runtimes a model is deployed in instead of PyTorch share (each runtime's own build, save and load are its
kind's, `worker/kinds/onnxruntime.py` and `openvino.py`): the package found or refused naming its extra, the ONNX
export both can start from, the error behind an exporter's. Each runtime runs on the cores the hardware entry gives
torch, so that both sides of a comparison use the same ones."""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from ..core import kinds, modes
from ..core.errors import Unsupported
from ..core.files import artifact_bytes
from .environment_probe import installed_version

log = logging.getLogger(__name__)

TERMINAL_COLOURS = re.compile(r"\x1b\[[0-9;]*m")


def package(name: str):
    """The runtime's Python package, or `unsupported` naming the extra that installs it."""
    if modes.package_missing(name):
        runtime = kinds.get(name)
        raise Unsupported(f"{runtime.runtime} is not installed in this Python: install it with {runtime.install}")
    return importlib.import_module(name)


def register_compile_backend(backend: str) -> None:
    """Make a torch.compile backend that a runtime's package registers on import known to torch (openvino)."""
    if backend == "openvino":
        package("openvino")
        importlib.import_module("openvino.torch")


def provides_backend(backend: str) -> bool:
    """Whether `backend` is a torch.compile backend a runtime's package registers (openvino)."""
    return backend in kinds.names(lambda kind: kind.runtime is not None)


def note_installed(name: str, record: dict) -> bool:
    """Note the runtime `name`'s version in a mode check's `record` (None where it is missing: each of the mode's
    experiments then says `unsupported`, naming the extra); whether it is installed."""
    missing = modes.package_missing(name)
    record["runtime"] = {"name": name, "version": None if missing else installed_version(name)}
    return record["runtime"]["version"] is not None


def build(save: Callable, load: Callable, module: nn.Module, inputs: tuple, settings, device: str, dtype: str,
          workdir: str) -> tuple[Callable, dict]:  # fmt: skip
    """The callable that runs the model in the runtime (`save`d as it loads it, then `load`ed), and the seconds each
    step of building it took, the artifact's bytes, and what the runtime runs with as read back from it
    (`runtime`)."""
    kind = kinds.of(settings)
    if dtype != "float32":
        raise Unsupported(
            f"{kind.runtime} runs the exported model as exported; compilebench exports float32 models only "
            f"(the model's dtype is {dtype})"
        )
    path = Path(workdir) / kind.package_file
    steps = save(module, inputs, settings, device, dtype, path)
    call, loaded = load(settings, device, path, len(inputs))
    return call, {**steps, **loaded}


def saved(steps: dict, path: Path) -> dict:
    """A runtime's saving steps with the artifact's bytes."""
    return {**steps, "artifact_bytes": artifact_bytes(path)}


def export_onnx(module: nn.Module, inputs: tuple, path: Path, dynamo: bool, opset: int | None) -> float:
    """The model exported to an ONNX file at `path`; the seconds it took. An exporter's failure is `unsupported`
    with its message."""
    begin = time.perf_counter()
    chatter = io.StringIO()  # the exporter prints its progress
    try:
        with torch.no_grad(), contextlib.redirect_stdout(chatter):
            torch.onnx.export(module, inputs, str(path), dynamo=dynamo, opset_version=opset, external_data=False)
    except Exception as exc:  # the exporters raise many types; all mean "cannot export this model"
        raise Unsupported(f"torch.onnx.export failed: {root_cause(exc)}") from exc
    log.debug("%s", chatter.getvalue())
    return time.perf_counter() - begin


def root_cause(exc: BaseException) -> str:
    """The innermost error behind an exporter's or converter's (their outer messages say only which step failed):
    its type and first line, or its last where the first only introduces the rest; terminal colours removed."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    lines = [line.strip() for line in TERMINAL_COLOURS.sub("", str(exc)).splitlines() if line.strip()]
    said = (lines[-1].lstrip("- ") if lines[0].endswith(":") else lines[0]) if lines else ""
    return f"{type(exc).__name__}: {said}"


def device_type(device: str) -> str:
    """The device's type as a runtime names it: rocm for a CUDA device of a ROCm build."""
    name = torch.device(device).type
    return "rocm" if name == "cuda" and torch.version.hip else name


def numpy_dtype(tensor: torch.Tensor):
    return torch.empty(0, dtype=tensor.dtype).numpy().dtype
