"""Each model source's worker builder (`NAME.py`, beside its declaration `core/sources/NAME.py`; what a builder
holds is in `base`). A plugin's source names its builder's module in its declaration."""

from __future__ import annotations

from types import ModuleType

from ...core import plugins, sources
from . import python, timm, torchvision, transformers

BUILT_IN = plugins.by_name(torchvision, transformers, timm, python)


def of(spec) -> ModuleType:
    """The builder of the spec's source."""
    return plugins.implementation(sources.get(spec.source), BUILT_IN)
