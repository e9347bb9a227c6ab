"""TorchScript: the model traced or scripted, then frozen and optimized for inference (as the Graviton study)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from .base import Kind, ModeSettings, settings_schema


@dataclasses.dataclass(frozen=True)
class JitSettings(ModeSettings):
    kind: ClassVar[str] = "jit"
    method: str = "trace"
    freeze: bool = True
    optimize_for_inference: bool = True


class Jit(Kind):
    name = "jit"
    settings = JitSettings
    defaults = {"method": None, "freeze": True, "optimize_for_inference": True}
    schema = settings_schema(
        "TorchScript settings",
        method={
            "type": "string",
            "enum": ["trace", "script"],
            "description": "trace or script (default the model's `jit`)",
        },
        freeze={"type": "boolean", "description": "torch.jit.freeze the module, true or false (default true)"},
        optimize_for_inference={
            "type": "boolean",
            "description": "torch.jit.optimize_for_inference, true or false (default true)",
        },
    )
    description = "TorchScript (traced or scripted, frozen, optimized for inference)"
    cold_cost_words = "scripting"
    generation_refusal = "TorchScript cannot capture generation with a KV cache; use eager or a compile mode"

    def resolve(self, resolved: dict[str, Any], *, jit_method: str, fullgraph: bool) -> dict[str, Any]:
        return {**resolved, "method": resolved["method"] or jit_method}

    def base_mode(self, settings: Mapping[str, Any]) -> str | None:
        return "jit"


KIND = Jit()
