"""Execution modes as definitions: what each mode name means, read by every place that lists modes.

Torch-free, so that the config, the workflow and the report know the modes without
loading the engine; `wrappers` turns a definition into the callable that is timed.
"""

from __future__ import annotations

# The built-in modes, in the order tables and figures show them.
BUILTIN_MODES: dict[str, dict] = {
    "eager": {"kind": "eager"},
    "jit": {"kind": "jit"},
    "compile-default": {"kind": "compile", "compile": {"mode": "default"}},
    "compile-reduce-overhead": {"kind": "compile", "compile": {"mode": "reduce-overhead"}},
    "compile-max-autotune": {"kind": "compile", "compile": {"mode": "max-autotune"}},
}
MODE_NAMES = tuple(BUILTIN_MODES)
