"""A module of the user's own: their Python file imported, their factory called, their inputs made; whatever of it
fails is a `ModelError` that names the config key and quotes the error (the experiment's result says `failed`)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import torch
from torch import nn

from .base import BuiltModel, ModelError, tensors_only

INTEGER_HIGH = 100  # integer inputs (`input.dtype: int64`) are drawn from 0 to 99


def build(name: str, spec, seed: int) -> BuiltModel:
    model = _module(name, spec)
    if spec.weights not in ("random", "pretrained"):
        path = Path(spec.weights)
        model.load_state_dict(tensors_only(path / "state_dict.pt" if path.is_dir() else path, name))
    return BuiltModel(name, spec.task, model, inputs(None, name, spec, seed))


def inputs(built: BuiltModel | None, name: str, spec, seed: int) -> tuple[torch.Tensor, ...]:
    """The `inputs` callable's tensors for the batch size (seeded first), or a seeded random input of `input`."""
    if spec.inputs:
        torch.manual_seed(seed)
        made = _called(name, "inputs", getattr(_file(name, spec), spec.inputs), spec.batch_size)
        made = made if isinstance(made, tuple) else (made,)
        if not made or not all(isinstance(t, torch.Tensor) for t in made):
            raise ModelError(
                f"Config key `models.{name}.inputs` ({spec.inputs}) returned {_what(made)}: expected a tensor or a "
                "tuple of tensors."
            )
        return made
    shape = (spec.batch_size, *spec.input["shape"])
    dtype = getattr(torch, spec.input.get("dtype", "float32"))
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=generator, device="cpu").to(dtype),)
    return (torch.randint(0, INTEGER_HIGH, shape, generator=generator, device="cpu", dtype=dtype),)


def meta_model(name: str, spec) -> nn.Module:
    return _module(name, spec)


def meta_inputs(model: nn.Module, spec) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    if spec.input:
        return model, (torch.empty((spec.batch_size, *spec.input["shape"]), dtype=getattr(torch, spec.input["dtype"])),)
    return model, inputs(None, spec.arch, spec, 0)


def _module(name: str, spec) -> nn.Module:
    model = _called(name, "factory", getattr(_file(name, spec), spec.factory))
    if not isinstance(model, nn.Module):
        raise ModelError(
            f"Config key `models.{name}.factory` ({spec.factory}) returned {_what(model)}: expected a torch.nn.Module."
        )
    return model.eval()


def _file(name: str, spec) -> ModuleType:
    """The user's file imported once per process, as a module of its own (its content's hash in its name)."""
    path = Path(spec.file)
    module_name = f"compilebench_model_{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    found = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(found)
    sys.modules[module_name] = module
    try:
        with torch.device("cpu"):  # what the file makes as it is imported is real, whoever imports it first
            found.loader.exec_module(module)
    except Exception as exc:  # the user's code: whatever it raises means "cannot build"
        del sys.modules[module_name]
        raise ModelError(
            f"Config key `models.{name}.file` names {str(path)!r}, which raised {type(exc).__name__} when imported: "
            f"{exc}"
        ) from exc
    return module


def _called(name: str, key: str, function, *args):
    try:
        return function(*args)
    except Exception as exc:  # the user's code: whatever it raises means "cannot build"
        raise ModelError(
            f"Config key `models.{name}.{key}` ({function.__name__}) raised {type(exc).__name__}: {exc}"
        ) from exc


def _what(value) -> str:
    return f"a {type(value).__name__}" if value is not None else "None"
