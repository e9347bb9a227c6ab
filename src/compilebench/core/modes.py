"""Execution modes as definitions: what each mode name means, read by every place that lists modes.

A mode is a `kind` (`core.kinds`: eager, jit, compile, export, or a runtime users deploy instead: onnxruntime,
openvino) and that kind's settings. The built-in modes are presets; a config adds its own under
`mode_definitions`. Torch-free,
so that the config, the workflow and the report know the modes without loading the
engine; `wrappers` turns resolved settings into the callable that is timed.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from . import kinds

# The built-in modes, in the order tables and figures show them.
BUILTIN_MODES: dict[str, dict] = {
    "eager": {"kind": "eager"},
    "jit": {"kind": "jit"},
    "compile-default": {"kind": "compile", "compile": {"mode": "default"}},
    "compile-reduce-overhead": {"kind": "compile", "compile": {"mode": "reduce-overhead"}},
    "compile-max-autotune": {"kind": "compile", "compile": {"mode": "max-autotune"}},
    "onnxruntime": {"kind": "onnxruntime"},
    "openvino": {"kind": "openvino"},
}
MODE_NAMES = tuple(BUILTIN_MODES)
# What each built-in mode is, in a reader's words (page 1).
BUILTIN_WORDS = {
    "eager": "PyTorch as written, no compiler",
    "jit": "TorchScript: the model traced (or scripted) and run by torch.jit",
    "compile-default": "torch.compile with its default settings (inductor)",
    "compile-reduce-overhead": "torch.compile, mode reduce-overhead (CUDA graphs on a GPU)",
    "compile-max-autotune": "torch.compile, mode max-autotune (inductor tries several kernels per operation)",
    "onnxruntime": "the model exported to ONNX and run by ONNX Runtime",
    "openvino": "the model converted to OpenVINO and run by its runtime",
}

# What a quantized mode's output must keep of eager's (quantization changes outputs by design).
QUANTIZE_MIN_COSINE = 0.98
TORCHAO_INSTALL = 'pip install -e ".[quant]"'


def package_missing(name: str) -> bool:
    """Whether this Python lacks the package `name` (torchao, or a runtime kind's own), found without importing it
    (None in sys.modules counts as missing)."""
    try:
        return importlib.util.find_spec(name) is None
    except ValueError:
        return True


def definitions(config: dict) -> dict[str, dict]:
    """Every mode the config can name: the built-ins, then its own `mode_definitions`, in order."""
    return {**BUILTIN_MODES, **config.get("mode_definitions", {})}


def settings(definition: dict, *, jit_method: str = "trace", fullgraph: bool = False) -> dict[str, Any]:
    """A definition with every setting of its kind filled in: exactly what the mode runs with."""
    kind = kinds.get(definition["kind"])
    resolved = kind.resolve(kind.settings_of(definition), jit_method=jit_method, fullgraph=fullgraph)
    if definition.get("quantize"):
        resolved["quantize"] = {"min_cosine": QUANTIZE_MIN_COSINE, **definition["quantize"]}
    return {"kind": kind.name, **resolved}


# The settings a defined mode is set against the same definition without, the first it has deciding.
OWN_SETTINGS = ("quantize", "regional")


def unquantized(settings: dict) -> dict:
    """A mode's resolved settings without its quantization: those of the mode a quantized one is set against."""
    return {key: value for key, value in settings.items() if key != "quantize"}


def without_own_setting(settings: dict) -> dict | None:
    """The resolved settings of the mode a quantized or regional one is set against: the same without quantizing,
    or compiled whole; None for a mode that has neither."""
    own = next((key for key in OWN_SETTINGS if settings.get(key)), None)
    return None if own is None else {key: value for key, value in settings.items() if key != own}


def base_mode(settings: dict) -> str | None:
    """The built-in mode a defined one is set against: the same torch.compile mode without the definition's
    own settings; compile-default for an AOTInductor package; jit for TorchScript settings."""
    return kinds.of(settings).base_mode(settings)


def ordered(names) -> list[str]:
    """Mode names in display order: built-ins in their order, then the others as they first appear."""
    names = list(dict.fromkeys(names))
    return [m for m in MODE_NAMES if m in names] + [m for m in names if m not in BUILTIN_MODES]


def label(name: str) -> str:
    """A short axis label."""
    return name.replace("compile-", "c-")
