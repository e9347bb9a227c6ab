"""torch.compile: Dynamo traces the model on its first call and a backend (inductor by default) compiles it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ..parts import optional
from .base import INDUCTOR_OPTIONS, Kind, ModeSettings, choice, flag, settings_schema

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@dataclasses.dataclass(frozen=True)
class CompileSettings(ModeSettings):
    kind: ClassVar[str] = "compile"
    backend: str = "inductor"
    mode: str = "default"
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    dynamic: bool | None = False
    fullgraph: bool = False
    mark_dynamic: list[str] | None = optional()
    recompile_limit: int | None = optional()
    regional: bool | str | None = optional()  # true, a stack's dotted path, or "nested"
    # Training experiments only: what is compiled (the model, or the whole step), the optimizer's step compiled too,
    # the backward traced by compiled autograd.
    scope: str | None = optional()
    optimizer: bool | None = optional()
    autograd: bool | None = optional()


TRAINING_ONLY = "training experiments only: "


class Compile(Kind):
    name = "compile"
    settings = CompileSettings
    defaults = {"backend": "inductor", "mode": "default", "options": {}, "dynamic": False, "fullgraph": None}
    schema = settings_schema(
        "torch.compile settings",
        backend={"type": "string", "minLength": 1, "description": "a torch.compile backend (default inductor)"},
        mode=choice(*COMPILE_MODES, description=f"torch.compile's mode, one of {', '.join(COMPILE_MODES)}"),
        options=INDUCTOR_OPTIONS,
        dynamic={
            "type": ["boolean", "null"],
            "description": "torch.compile(dynamic=...): true, false or null (default false)",
        },
        fullgraph=flag("torch.compile(fullgraph=...), true or false (default measure.fullgraph)"),
        mark_dynamic={
            "type": "array",
            "uniqueItems": True,
            "items": {"type": "string", "enum": ["batch_size", "seq_len", "image_size"]},
            "description": "input axes marked dynamic (torch._dynamo.mark_dynamic) before the first call: "
            "batch_size, seq_len, image_size; used with dynamic: null",
        },
        recompile_limit={
            "type": "integer",
            "minimum": 1,
            "description": "Dynamo's recompile limit (torch._dynamo.config.recompile_limit) while the mode runs, an "
            "integer >= 1 (default torch's)",
        },
        regional={
            "type": ["boolean", "string"],
            "minLength": 1,
            "pattern": "^(?!(.*\\.)?__)[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z0-9_]+)*$",
            "description": "compile the model's repeated stack block by block: true (the longest nn.ModuleList or "
            "nn.Sequential of blocks of one class), the stack's dotted path of submodule names, none starting with a "
            "double underscore (model.layers), or nested (torch.compiler.nested_compile_region on the block, the "
            "whole model compiled); default false, the whole model",
        },
        scope=choice(
            "model",
            "step",
            description=TRAINING_ONLY + "what torch.compile wraps, model (the model; AOTAutograd compiles forward and "
            "backward) or step (the whole step function: zero_grad, forward, loss, backward, optimizer step); default "
            "model",
        ),
        optimizer=flag(
            TRAINING_ONLY + "the optimizer's step compiled too (torch.compile(optimizer.step)), true or false "
            "(default false)"
        ),
        autograd=flag(
            TRAINING_ONLY + "the backward traced by compiled autograd (torch._dynamo.compiled_autograd), true or "
            "false (default false)"
        ),
    )
    description = "torch.compile (compiled on the first call)"
    compiles = True
    compiles_on_first_call = True
    cold_cost = "the first call's compile: Dynamo's trace, the backend's code generation and its C++ build"
    warm_start = "caches"
    quantizable = True
    trains = True
    streams = True

    def resolve(self, resolved: dict[str, Any], *, jit_method: str, fullgraph: bool) -> dict[str, Any]:
        return {**resolved, "fullgraph": fullgraph if resolved["fullgraph"] is None else resolved["fullgraph"]}

    def uses_inductor(self, settings: Any) -> bool:
        return _setting(settings, "backend") == "inductor"

    def base_mode(self, settings: Mapping[str, Any]) -> str | None:
        mode = settings.get("mode") or "default"
        return "compile-" + ("max-autotune" if mode == "max-autotune-no-cudagraphs" else mode)

    def start_obstacle(self, settings: Any, path: str) -> str | None:
        if path == "artifacts":
            if (settings.options or {}).get("freezing"):
                return "inductor does not cache a graph with frozen constants, so there are no cache artifacts to load"
            return None
        if path not in ("package", "precompiled"):
            return None
        if settings.backend != "inductor":
            return f"a {path} is inductor's; this mode compiles with backend {settings.backend}"
        if settings.regional:
            return f"a {path} holds the whole model; this mode compiles its blocks one by one (compile.regional)"
        if settings.dynamic or settings.mark_dynamic:
            return f"a {path} fixes its input shapes; this mode compiles with dynamic shapes"
        return None


def _setting(settings: Any, key: str) -> Any:
    return settings.get(key) if isinstance(settings, Mapping) else getattr(settings, key)


KIND = Compile()
