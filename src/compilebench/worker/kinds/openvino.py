"""OpenVINO: the model converted by openvino.convert_model (from the torch model, or from its ONNX export), saved as
IR, then compiled for the device with the mode's hints, on torch's threads."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ...core.errors import Unsupported
from .. import runtimes


def wrap(module: nn.Module, settings, inputs: tuple, *, device: str, dtype: str, workdir: str, **_):
    return runtimes.build(save_package, load_package, module, inputs, settings, device, dtype, workdir)


def save_package(module: nn.Module, inputs: tuple, settings, device: str, dtype: str, path: Path) -> dict:
    """The model converted by OpenVINO and saved as IR at `path`, weights as they are; the seconds it took and the
    artifact's bytes."""
    runtimes.package("openvino")
    return runtimes.saved(_convert(module, inputs, settings, device, path), path)


def check(name: str, settings, record: dict) -> bool:
    return runtimes.note_installed("openvino", record)


def _convert(module: nn.Module, inputs: tuple, settings, device: str, path: Path) -> dict:
    ov = runtimes.package("openvino")
    _openvino_device(device)
    steps: dict[str, Any] = {}
    begin = time.perf_counter()
    try:
        if settings.source == "onnx":
            onnx_path = path.with_suffix(".onnx")
            steps["onnx_export_s"] = runtimes.export_onnx(module, inputs, onnx_path, True, None)
            begin = time.perf_counter()
            model = ov.convert_model(str(onnx_path))
        else:
            with torch.no_grad():
                model = ov.convert_model(module, example_input=inputs[0] if len(inputs) == 1 else inputs)
    except Unsupported:
        raise
    except Exception as exc:  # the converters raise many types; all mean "cannot convert this model"
        raise Unsupported(f"openvino.convert_model failed: {runtimes.root_cause(exc)}") from exc
    ov.save_model(model, str(path), compress_to_fp16=False)  # the IR a deployment ships, weights as they are
    return {**steps, "convert_s": time.perf_counter() - begin}


def load_package(settings, device: str, path: Path, inputs: int) -> tuple[Callable, dict]:
    ov = runtimes.package("openvino")
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
    if runtime["streams"] != settings.streams:  # OpenVINO caps streams at what the machine runs
        runtime["not_as_asked"] = [f"{settings.streams} streams asked, {runtime['streams']} ran"]

    def run(*args: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(request.infer([a.numpy() for a in args])[0])

    return run, {"compile_model_s": compile_model_s, "runtime": runtime}


def _openvino_device(device: str) -> str:
    if runtimes.device_type(device) != "cpu":
        raise Unsupported(
            f"OpenVINO runs models on CPUs and Intel GPUs, not on {device!r} ({runtimes.device_type(device)})"
        )
    return "CPU"


def _type_name(value) -> str:
    """An OpenVINO element type as the config spells it (f32, bf16)."""
    return value.to_string() if hasattr(value, "to_string") else str(value)
