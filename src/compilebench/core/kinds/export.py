"""torch.export, then an AOTInductor package built and loaded: a model deployed without a Python compile."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from .base import INDUCTOR_OPTIONS, Kind, ModeSettings, flag, settings_schema


@dataclasses.dataclass(frozen=True)
class ExportSettings(ModeSettings):
    kind: ClassVar[str] = "export"
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    strict: bool = False


class Export(Kind):
    name = "export"
    settings = ExportSettings
    defaults = {"options": {}, "strict": False}
    schema = settings_schema(
        "torch.export and AOTInductor settings",
        options=INDUCTOR_OPTIONS,
        strict=flag("torch.export(strict=...), true or false (default false)"),
    )
    description = "torch.export and an AOTInductor package"
    compiles = True
    cold_cost = "torch.export, the AOTInductor package's build, its load and the first call"
    warm_start = "package"
    cold_cost_words = "export and ahead-of-time compile"
    generation_refusal = "compilebench does not export a generation loop with a KV cache; use eager or a compile mode"

    def uses_inductor(self, settings: Any) -> bool:
        return True

    def base_mode(self, settings: Mapping[str, Any]) -> str | None:
        return "compile-default"

    def start_obstacle(self, settings: Any, path: str) -> str | None:
        if path == "precompiled":
            return "an export mode's ahead-of-time artifact is its package; a precompiled function is torch.compile's"
        return super().start_obstacle(settings, path)


KIND = Export()
