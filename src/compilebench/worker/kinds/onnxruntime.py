"""ONNX Runtime: the model exported to ONNX (torch.onnx.export), then loaded into an InferenceSession on torch's
threads, as a deployment loads it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from ...core.errors import Unsupported
from .. import runtimes

LEVELS = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
          "all": "ORT_ENABLE_ALL"}  # fmt: skip
PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider", "rocm": "ROCMExecutionProvider"}


def wrap(module: nn.Module, settings, inputs: tuple, *, device: str, dtype: str, workdir: str, **_):
    return runtimes.build(save_package, load_package, module, inputs, settings, device, dtype, workdir)


def save_package(module: nn.Module, inputs: tuple, settings, device: str, dtype: str, path: Path) -> dict:
    """The model exported to an ONNX file at `path`; the seconds it took and the file's bytes."""
    runtimes.package("onnxruntime")
    seconds = runtimes.export_onnx(module, inputs, path, settings.dynamo, settings.opset)
    return runtimes.saved({"onnx_export_s": seconds}, path)


def check(name: str, settings, record: dict) -> bool:
    return runtimes.note_installed("onnxruntime", record)


def load_package(settings, device: str, path: Path, inputs: int) -> tuple[Callable, dict]:
    ort = runtimes.package("onnxruntime")
    provider = PROVIDERS.get(runtimes.device_type(device))
    if provider not in ort.get_available_providers():
        raise Unsupported(
            f"this onnxruntime ({ort.__version__}) has no {provider} for device {device!r}: it has "
            f"{', '.join(ort.get_available_providers())} (a GPU needs the onnxruntime-gpu package)"
        )
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    level = LEVELS[settings.graph_optimization_level]
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
        "opset": onnx_opset(path),
    }
    if settings.opset is not None and runtime["opset"] != settings.opset:  # the exporter chose another
        runtime["not_as_asked"] = [f"opset {settings.opset} asked, {runtime['opset']} exported"]
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
            binding.bind_input(name, "cuda", index, runtimes.numpy_dtype(tensor), list(tensor.shape), tensor.data_ptr())
        binding.bind_output(output, "cuda", index)
        session.run_with_iobinding(binding)
        return torch.from_dlpack(binding.get_outputs()[0].to_dlpack())

    return run


def onnx_opset(path: Path) -> int | None:
    try:
        import onnx
    except ImportError:
        return None
    model = onnx.load(str(path), load_external_data=False)
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
