"""OpenVINO: the model converted by OpenVINO (from the torch model, or from its ONNX export) and compiled for a
device."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from .base import ModeSettings, Runtime, choice, settings_schema


@dataclasses.dataclass(frozen=True)
class OpenVinoSettings(ModeSettings):
    """The model converted by OpenVINO (from the torch model, or from its ONNX export) and compiled for a device."""

    kind: ClassVar[str] = "openvino"
    source: str = "torch"
    precision: str = "f32"
    hint: str = "LATENCY"
    streams: int = 1


class OpenVino(Runtime):
    name = "openvino"
    settings = OpenVinoSettings
    defaults = {"source": "torch", "precision": "f32", "hint": "LATENCY", "streams": 1}
    schema = settings_schema(
        "OpenVINO conversion and compile settings",
        source=choice(
            "torch",
            "onnx",
            description="what openvino.convert_model converts: the torch model (default) or its ONNX export",
        ),
        precision=choice(
            "f32", "bf16", description="the inference precision hint (INFERENCE_PRECISION_HINT): f32 (default) or bf16"
        ),
        hint=choice(
            "LATENCY",
            "THROUGHPUT",
            description="the performance hint (PERFORMANCE_HINT): LATENCY (default) or THROUGHPUT",
        ),
        streams={
            "type": "integer",
            "minimum": 1,
            "description": "inference streams (NUM_STREAMS), an integer >= 1 (default 1)",
        },
    )
    description = "OpenVINO (the model converted to its IR)"
    runtime = "OpenVINO"
    cold_cost_words = "conversion and compile"
    package_file = "model.xml"  # its IR's XML, the weights beside it

    def compute_precision(self, settings) -> str | None:
        """The precision it computes in where it is not the model's own: `precision: bf16`."""
        return "bfloat16" if settings.precision == "bf16" else None


KIND = OpenVino()
