"""Model sources: each one torch-free declaration here (`NAME.py`) and one worker builder of the same name
(`worker/sources/NAME.py`). Every other module asks a source (`sources.get(name).tasks`) instead of comparing its
name; a new source is two modules, or one plugin (`core.plugins`)."""

from . import python, timm, torchvision, transformers
from .base import REGISTRY, TASKS, Source, get, names, register, unregister

for _declared in (torchvision, transformers, timm, python):
    register(_declared.SOURCE, built_in=True)

__all__ = ["REGISTRY", "TASKS", "Source", "get", "names", "register", "unregister"]
