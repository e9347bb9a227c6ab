"""Each mode kind's worker implementation (`NAME.py`, beside its declaration `core/kinds/NAME.py`; what a module
holds is in `base`). A plugin's kind names its implementation's module in its declaration."""

from __future__ import annotations

from types import ModuleType

from ...core import kinds, plugins
from . import compile, eager, export, jit, onnxruntime, openvino

BUILT_IN = plugins.by_name(eager, jit, compile, export, onnxruntime, openvino)


def of(settings) -> ModuleType:
    """The worker implementation of the settings' kind."""
    return plugins.implementation(kinds.of(settings), BUILT_IN)
