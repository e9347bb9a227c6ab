"""Mode kinds: each one torch-free declaration here (`NAME.py`) and one worker implementation of the same name
(`worker/kinds/NAME.py`). Every other module asks a kind (`kinds.of(settings).compiles`, `.start_obstacle(...)`)
instead of comparing its name; a new kind is two modules, or one plugin (`core.plugins`)."""

from . import compile, eager, export, jit, onnxruntime, openvino
from .base import REGISTRY, Kind, ModeSettings, Runtime, get, names, of, register, unregister

for _declared in (eager, jit, compile, export, onnxruntime, openvino):  # the order tables list them in
    register(_declared.KIND, built_in=True)

__all__ = ["REGISTRY", "Kind", "ModeSettings", "Runtime", "get", "names", "of", "register", "unregister"]
