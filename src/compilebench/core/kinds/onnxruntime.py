"""ONNX Runtime: the model exported to ONNX (torch.onnx.export) and run by an InferenceSession."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from ..parts import optional
from .base import ModeSettings, Runtime, choice, flag, settings_schema


@dataclasses.dataclass(frozen=True)
class OnnxRuntimeSettings(ModeSettings):
    """The model exported to ONNX (torch.onnx.export) and run by an ONNX Runtime InferenceSession."""

    kind: ClassVar[str] = "onnxruntime"
    dynamo: bool = True
    graph_optimization_level: str = "all"
    opset: int | None = optional()


class OnnxRuntime(Runtime):
    name = "onnxruntime"
    settings = OnnxRuntimeSettings
    defaults = {"opset": None, "dynamo": True, "graph_optimization_level": "all"}
    schema = settings_schema(
        "ONNX export and ONNX Runtime settings",
        dynamo=flag(
            "torch.onnx.export(dynamo=...): the exporter built on torch.export (true, the default) or the TorchScript "
            "one (false)"
        ),
        opset={
            "type": "integer",
            "minimum": 7,
            "description": "the ONNX opset to export to, an integer >= 7 (default the exporter's)",
        },
        graph_optimization_level=choice(
            "disable",
            "basic",
            "extended",
            "all",
            description="the session's graph optimizations (SessionOptions.graph_optimization_level): disable, basic, "
            "extended or all (default all)",
        ),
    )
    description = "ONNX Runtime (the model exported to ONNX)"
    runtime = "ONNX Runtime"
    package_file = "model.onnx"
    cold_cost_words = "export to ONNX and session"


KIND = OnnxRuntime()
