"""The runtimes a model is deployed in instead of PyTorch, built from the model as a mode: ONNX Runtime (an ONNX file
from torch.onnx.export, run by an InferenceSession) and OpenVINO (openvino.convert_model, then compile_model). Each
runs on the cores the hardware entry gives torch, so that both sides of a comparison use the same ones."""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..core import modes
from ..core.errors import Unsupported
from ..core.experiment import ModeSettings
from ..core.files import artifact_bytes

log = logging.getLogger(__name__)

NAMES = {"onnxruntime": "ONNX Runtime", "openvino": "OpenVINO"}
ORT_LEVELS = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
              "all": "ORT_ENABLE_ALL"}  # fmt: skip
TERMINAL_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
ORT_PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider", "rocm": "ROCMExecutionProvider"}


def package(kind: str):
    """The runtime's Python package, or `unsupported` naming the extra that installs it."""
    if modes.package_missing(kind):
        raise Unsupported(f"{NAMES[kind]} is not installed in this Python: install it with {modes.RUNTIMES_INSTALL}")
    return importlib.import_module(kind)


def register_compile_backend(backend: str) -> None:
    """Make a torch.compile backend that a runtime's package registers on import known to torch (openvino)."""
    if backend == "openvino":
        package("openvino")
        importlib.import_module("openvino.torch")


def build(
    module: nn.Module, inputs: tuple, settings: ModeSettings, device: str, dtype: str, workdir: str
) -> tuple[Callable, dict]:
    """The callable that runs the model in the runtime, and the seconds each step of building it took, the artifact's
    bytes, and what the runtime runs with as read back from it (`runtime`)."""
    if dtype != "float32":
        raise Unsupported(
            f"{NAMES[settings.kind]} runs the exported model as exported; compilebench exports float32 models only "
            f"(the model's dtype is {dtype})"
        )
    path = Path(workdir) / modes.RUNTIME_ARTIFACTS[settings.kind]
    steps = save(module, inputs, settings, device, path)
    call, loaded = load(settings, device, path, len(inputs))
    return call, {**steps, **loaded}


def save(module: nn.Module, inputs: tuple, settings: ModeSettings, device: str, path: Path) -> dict:
    """The model as the runtime loads it, saved at `path` (`ARTIFACTS`): exported to ONNX, or converted by OpenVINO
    and saved as IR, weights as they are; the seconds it took and the artifact's bytes."""
    package(settings.kind)
    if settings.kind == "onnxruntime":
        steps = {"onnx_export_s": export_onnx(module, inputs, path, settings.dynamo, settings.opset)}
    else:
        steps = _convert(module, inputs, settings, device, path)
    return {**steps, "artifact_bytes": artifact_bytes(path)}


def load(settings: ModeSettings, device: str, path: Path, inputs: int) -> tuple[Callable, dict]:
    """The saved model loaded into the runtime on `device`, on torch's threads, as a deployment loads it: the call
    (torch tensors in, a torch tensor out), the seconds the session or compile took, and what the runtime runs
    with as read back from it (`runtime`)."""
    if settings.kind == "onnxruntime":
        return _session(settings, device, path, inputs)
    return _compiled(settings, device, path)


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


def _session(settings: ModeSettings, device: str, path: Path, inputs: int) -> tuple[Callable, dict]:
    ort = package("onnxruntime")
    provider = ORT_PROVIDERS.get(_device_type(device))
    if provider not in ort.get_available_providers():
        raise Unsupported(
            f"this onnxruntime ({ort.__version__}) has no {provider} for device {device!r}: it has "
            f"{', '.join(ort.get_available_providers())} (a GPU needs the onnxruntime-gpu package)"
        )
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    level = ORT_LEVELS[settings.graph_optimization_level]
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    begin = time.perf_counter()
    session = ort.InferenceSession(str(path), options, providers=[provider])
    session_s = time.perf_counter() - begin
    names = [i.name for i in session.get_inputs()]
    if len(names) != inputs:
        raise Unsupported(f"the exported ONNX graph takes {len(names)} inputs, the model {inputs}")
    runtime = {
        "name": "onnxruntime",
        "version": ort.__version__,
        "threads": session.get_session_options().intra_op_num_threads,
        "providers": session.get_providers(),
        "graph_optimization_level": settings.graph_optimization_level,
        "opset": _onnx_opset(path),
    }
    call = _ort_on_cpu(session, names) if provider == "CPUExecutionProvider" else _ort_on_gpu(session, names, device)
    return call, {"session_s": session_s, "runtime": runtime}


def _ort_on_cpu(session, names: list[str]) -> Callable:
    def run(*args: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(session.run(None, dict(zip(names, (a.numpy() for a in args))))[0])

    return run


def _ort_on_gpu(session, names: list[str], device: str) -> Callable:
    """Inputs and output bound in the GPU's memory (I/O binding), as a GPU deployment runs a session: no copy
    through the host inside the timed call."""
    index = torch.device(device).index or 0
    output = session.get_outputs()[0].name

    def run(*args: torch.Tensor) -> torch.Tensor:
        binding = session.io_binding()
        for name, tensor in zip(names, args):
            tensor = tensor.contiguous()
            binding.bind_input(name, "cuda", index, _numpy_dtype(tensor), list(tensor.shape), tensor.data_ptr())
        binding.bind_output(output, "cuda", index)
        session.run_with_iobinding(binding)
        return torch.from_dlpack(binding.get_outputs()[0].to_dlpack())

    return run


def _convert(module: nn.Module, inputs: tuple, settings: ModeSettings, device: str, path: Path) -> dict:
    ov = package("openvino")
    _openvino_device(device)
    steps: dict[str, Any] = {}
    begin = time.perf_counter()
    try:
        if settings.source == "onnx":
            onnx_path = path.with_suffix(".onnx")
            steps["onnx_export_s"] = export_onnx(module, inputs, onnx_path, True, None)
            begin = time.perf_counter()
            model = ov.convert_model(str(onnx_path))
        else:
            with torch.no_grad():
                model = ov.convert_model(module, example_input=inputs[0] if len(inputs) == 1 else inputs)
    except Unsupported:
        raise
    except Exception as exc:  # the converters raise many types; all mean "cannot convert this model"
        raise Unsupported(f"openvino.convert_model failed: {root_cause(exc)}") from exc
    ov.save_model(model, str(path), compress_to_fp16=False)  # the IR a deployment ships, weights as they are
    return {**steps, "convert_s": time.perf_counter() - begin}


def _compiled(settings: ModeSettings, device: str, path: Path) -> tuple[Callable, dict]:
    ov = package("openvino")
    target = _openvino_device(device)
    config = {
        "PERFORMANCE_HINT": settings.hint,
        "NUM_STREAMS": str(settings.streams),
        "INFERENCE_NUM_THREADS": torch.get_num_threads(),
        "INFERENCE_PRECISION_HINT": settings.precision,
    }
    begin = time.perf_counter()
    compiled = ov.Core().compile_model(str(path), target, config)
    compile_model_s = time.perf_counter() - begin
    request = compiled.create_infer_request()
    runtime = {
        "name": "openvino",
        "version": ov.__version__.split("-")[0],
        "threads": int(compiled.get_property("INFERENCE_NUM_THREADS")),
        "device": target,
        "hint": str(compiled.get_property("PERFORMANCE_HINT")),
        "streams": int(compiled.get_property("NUM_STREAMS")),
        "precision": _type_name(compiled.get_property("INFERENCE_PRECISION_HINT")),
        "source": settings.source,
    }

    def run(*args: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(request.infer([a.numpy() for a in args])[0])

    return run, {"compile_model_s": compile_model_s, "runtime": runtime}


def _openvino_device(device: str) -> str:
    if _device_type(device) != "cpu":
        raise Unsupported(f"OpenVINO runs models on CPUs and Intel GPUs, not on {device!r} ({_device_type(device)})")
    return "CPU"


def root_cause(exc: BaseException) -> str:
    """The innermost error behind an exporter's or converter's (their outer messages say only which step failed):
    its type and first line, or its last where the first only introduces the rest; terminal colours removed."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    lines = [line.strip() for line in TERMINAL_COLOURS.sub("", str(exc)).splitlines() if line.strip()]
    said = (lines[-1].lstrip("- ") if lines[0].endswith(":") else lines[0]) if lines else ""
    return f"{type(exc).__name__}: {said}"


def _onnx_opset(path: Path) -> int | None:
    try:
        import onnx
    except ImportError:
        return None
    model = onnx.load(str(path), load_external_data=False)
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def _type_name(value) -> str:
    """An OpenVINO element type as the config spells it (f32, bf16)."""
    return value.to_string() if hasattr(value, "to_string") else str(value)


def _device_type(device: str) -> str:
    kind = torch.device(device).type
    return "rocm" if kind == "cuda" and torch.version.hip else kind


def _numpy_dtype(tensor: torch.Tensor):
    return torch.empty(0, dtype=tensor.dtype).numpy().dtype
