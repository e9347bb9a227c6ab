"""Eager: the module itself is the call."""

from __future__ import annotations

from collections.abc import Callable

from torch import nn


def wrap(module: nn.Module, settings, inputs: tuple, **_) -> tuple[Callable, dict]:
    return module, {}
