"""Declarations of one family (mode kinds, model sources) by name, and the plugins that add to them.

A kind or a source from outside the package registers itself from a module named in `COMPILEBENCH_PLUGINS`
(comma-separated module names, importable where the run runs); every process of a run (the workflow, each job,
each worker) imports them before it reads a name, so one module reaches all of them.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Generic, TypeVar

from .errors import UserError

PLUGINS_ENV = "COMPILEBENCH_PLUGINS"

_loaded: set[str] = set()


def load() -> None:
    """Import each module `COMPILEBENCH_PLUGINS` names, once: each registers its kinds and model sources."""
    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))):
        if module in _loaded:
            continue
        _loaded.add(module)
        try:
            importlib.import_module(module)
        except ImportError as exc:
            _loaded.discard(module)
            raise UserError(
                f"{PLUGINS_ENV} names the module {module!r}, which cannot be imported ({exc}): expected an importable "
                f"module that registers compilebench mode kinds or model sources."
            ) from exc


Declared = TypeVar("Declared")


class Registry(Generic[Declared]):
    """One family's declarations by their `name`, the package's own first in the order they were registered."""

    def __init__(self, family: str):
        self.family = family
        self._built_in: dict[str, Declared] = {}
        self._plugged: dict[str, Declared] = {}

    def register(self, declared: Declared, *, built_in: bool = False) -> Declared:
        """Make `declared` known to every module that asks; a second one of the same name is refused."""
        name = declared.name  # type: ignore[attr-defined]
        if name in self._built_in or name in self._plugged:
            raise ValueError(f"a {self.family} named {name!r} is already registered")
        (self._built_in if built_in else self._plugged)[name] = declared
        return declared

    def unregister(self, name: str) -> None:
        """Forget one a plugin registered (tests register their own)."""
        self._plugged.pop(name, None)

    def all(self) -> dict[str, Declared]:
        load()
        return {**self._built_in, **self._plugged}

    def names(self, where: Callable[[Declared], bool] = lambda declared: True) -> tuple[str, ...]:
        """The registered names, those `where` holds for."""
        return tuple(name for name, declared in self.all().items() if where(declared))

    def find(self, name: str | None) -> Declared | None:
        return self.all().get(name)  # type: ignore[arg-type]

    def get(self, name: str) -> Declared:
        known = self.all()
        if name not in known:
            raise ValueError(f"unknown {self.family} {name!r}: expected one of {', '.join(known)}")
        return known[name]


def by_name(*modules: ModuleType) -> dict[str, ModuleType]:
    """The package's own implementations, by their module's last name (the name of what they implement)."""
    return {module.__name__.rpartition(".")[2]: module for module in modules}


def implementation(declared, built_in: dict[str, ModuleType]) -> ModuleType:
    """The module that implements `declared` on the worker's side: the package's own by its name, or the module its
    declaration names (`implementation`, a plugin's)."""
    if declared.implementation is None:
        return built_in[declared.name]
    return importlib.import_module(declared.implementation)
