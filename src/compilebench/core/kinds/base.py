"""What a mode kind declares, and the registry every other module asks instead of branching on a kind's name.

A kind is one torch-free declaration here (`core/kinds/NAME.py`: its settings, their schema, what it supports,
the words the paper uses) and one worker implementation of the same name (`worker/kinds/NAME.py`: build, call,
save, load). A kind from outside the package registers itself from a plugin (`core.plugins`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ..parts import Part, Quantize, canonical, optional
from ..plugins import Registry


@dataclasses.dataclass(frozen=True)
class ModeSettings(Part):
    """What a mode runs with, every setting of its kind filled in (`modes.settings`)."""

    kind: ClassVar[str]
    quantize: Quantize | None = optional(Quantize)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModeSettings:
        """The settings of the kind `data` names: read as that kind's own class."""
        declared = REGISTRY.find(data.get("kind"))
        if declared is None or cls not in (ModeSettings, declared.settings):
            raise ValueError(f"mode settings of kind {data.get('kind')!r}: expected one of {', '.join(names())}")
        return declared.settings._read({k: v for k, v in data.items() if k != "kind"})

    def to_json(self) -> dict[str, Any]:
        return canonical({"kind": self.kind, **super().to_json()})


class Kind:
    """A mode kind's declaration. Each attribute answers one question a module outside the kind would otherwise
    answer by comparing the kind's name."""

    name: ClassVar[str]
    settings: ClassVar[type[ModeSettings]]
    # Each setting and its default; None means "from the model or the measure settings" (`resolve` fills it in).
    defaults: ClassVar[dict[str, Any]] = {}
    # The JSON schema of `mode_definitions.NAME.<kind name>`; None for a kind without settings of its own.
    schema: ClassVar[dict | None] = None
    # What the kind is, in the words of the configuration reference.
    description: ClassVar[str] = ""
    # The worker module that builds, calls, saves and loads it; None: `compilebench.worker.kinds.<name>`.
    implementation: ClassVar[str | None] = None
    compiles: ClassVar[bool] = False  # compiles the model (torch.compile, or an AOTInductor package)
    compiles_on_first_call: ClassVar[bool] = False  # torch.compile: its settings are torch.compile's, applied lazily
    runtime: ClassVar[str | None] = None  # a runtime a model is deployed in instead of torch: its name in words
    runs_in_torch: ClassVar[bool] = True  # its calls run torch's kernels (inductor's CPU probe applies)
    # What it pays before its first output that eager does not (its starts are timed); None for nothing.
    cold_cost: ClassVar[str | None] = None
    # Where a warm start comes from: "caches" (a later process reads the caches the first wrote), "package" (every
    # process loads the package it built), or None.
    warm_start: ClassVar[str | None] = None
    package_file: ClassVar[str] = "model.pt2"  # what its package start loads, as compilebench saves it
    cold_cost_words: ClassVar[str] = "cold compile"  # the paper's name for its one-off cost, in a sentence
    trains: ClassVar[bool] = False  # it measures a training step
    quantizable: ClassVar[bool] = False  # torchao may quantize the module it runs
    streams: ClassVar[bool] = False  # it runs a shape stream (one compile across shapes)
    generation_refusal: ClassVar[str | None] = None  # why it cannot run a generation loop with a KV cache
    install: ClassVar[str | None] = None  # how to install the Python package it needs beside torch

    @property
    def starts(self) -> bool:
        """Whether `measure.starts` times it: it pays something before its first output."""
        return self.cold_cost is not None

    def resolve(self, resolved: dict[str, Any], *, jit_method: str, fullgraph: bool) -> dict[str, Any]:
        """Its settings with what the model or the measure settings decide filled in."""
        return resolved

    def uses_inductor(self, settings: Any) -> bool:
        """Whether inductor compiles the mode, so that inductor settings (`options`) apply to it."""
        return False

    def base_mode(self, settings: Mapping[str, Any]) -> str | None:
        """The built-in mode a defined one of this kind is set against; None for none."""
        return None

    def start_obstacle(self, settings: Any, path: str) -> str | None:
        """Why a mode of this kind cannot start on `path` (cold, warm, artifacts, package, precompiled) for a reason
        of its kind; None where its kind allows it."""
        if path == "artifacts":
            return "cache artifacts are torch.compile's; an export mode deploys its package"
        return None

    def compute_precision(self, settings: Any) -> str | None:
        """The precision the mode computes in where it is not the model's own; None where it is."""
        return None

    def settings_of(self, definition: Mapping[str, Any]) -> dict[str, Any]:
        """A definition's own block of this kind's settings over the defaults."""
        return {**self.defaults, **definition.get(self.name, {})}


REGISTRY: Registry[Kind] = Registry("mode kind")
register, unregister, names, get = REGISTRY.register, REGISTRY.unregister, REGISTRY.names, REGISTRY.get


def of(settings: ModeSettings | Mapping[str, Any]) -> Kind:
    """The kind of resolved settings, as an object or as their JSON form."""
    return get(settings["kind"] if isinstance(settings, Mapping) else settings.kind)


def settings_schema(description: str, **properties: dict) -> dict:
    """The JSON schema of a kind's settings block: an object of exactly these keys."""
    return {"type": "object", "additionalProperties": False, "description": description, "properties": properties}


def choice(*values: str, description: str) -> dict:
    """A setting that takes one of `values`."""
    return {"type": "string", "enum": list(values), "description": description}


def flag(description: str) -> dict:
    """A setting that is true or false."""
    return {"type": "boolean", "description": description}


INDUCTOR_OPTIONS = {"$ref": "#/definitions/inductor_options"}

RUNTIMES_INSTALL = 'pip install -e ".[runtimes]"'


class Runtime(Kind):
    """A runtime a model is deployed in instead of PyTorch: converted ahead of time, then run outside torch, from
    the file it loads (`package_file`)."""

    runs_in_torch = False
    cold_cost = "the export or conversion to the runtime's format, and the session's or compile's creation"
    install = RUNTIMES_INSTALL
    generation_refusal = "compilebench does not export a generation loop with a KV cache; use eager or a compile mode"

    def start_obstacle(self, settings: Any, path: str) -> str | None:
        if path in ("warm", "artifacts", "precompiled"):
            return (
                f"this {self.name} mode starts cold (export, then load) or from its saved model (package); "
                f"{path} is torch's"
            )
        return None
