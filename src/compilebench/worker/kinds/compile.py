"""torch.compile: the model wrapped lazily (it compiles on its first call), whole or block by block; its package
and precompiled starts build ahead of time what the first call would."""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ...core.errors import Unsupported, UserError
from .. import regions, runtimes
from .base import first_line, precision
from .export import load_package, save_package


def inductor_options(settings) -> dict[str, Any]:
    """The inductor settings a compile runs with: its torch.compile mode's presets, then the definition's own.

    torch.compile refuses `mode` and `options` together; its own table of what each mode sets
    (`torch._inductor.list_mode_options`) lets both hold at once.
    """
    return {**torch._inductor.list_mode_options(settings.mode, settings.dynamic), **settings.options}


def explain_failure(settings, message: str) -> str:
    """A failure of a compile through another backend than inductor, said for a user before torch's own words: that
    backend could not compile this model here (with dynamic shapes where torch's message is about a shape symbol)."""
    if settings.backend == "inductor":
        return message
    shapes = " with dynamic shapes" if re.search(r"\bsymbol s\d+|SymInt|symbolic", message) else ""
    return (f"the {settings.backend} torch.compile backend could not compile this model{shapes} on torch "
            f"{torch.__version__}; torch said: {message}")  # fmt: skip


def compile_kwargs(settings) -> dict[str, Any]:
    kwargs = {"backend": settings.backend, "dynamic": settings.dynamic, "fullgraph": settings.fullgraph}
    if settings.options and settings.backend == "inductor":
        kwargs["options"] = inductor_options(settings)
    elif settings.options:
        kwargs.update(mode=settings.mode, options=settings.options)
    else:
        kwargs["mode"] = settings.mode
    return kwargs


def wrap(
    module: nn.Module, settings, inputs: tuple, *, device: str, names: tuple[str, str] = ("", ""), **_
) -> tuple[Callable, dict]:
    """Lazy: the model compiles on its first call. A regional compile records the regions it compiled."""
    if settings.regional:
        key, model_key = f"mode_definitions.{names[0]}.compile.regional", f"models.{names[1]}"
        compiled, record = regions.compile_regions(module, settings.regional, compile_kwargs(settings), key, model_key)
        return _cuda_graph_steps(compiled) if _cudagraphs(settings, device) else compiled, {"regions": record}
    runtimes.register_compile_backend(settings.backend)
    compiled = torch.compile(module, **compile_kwargs(settings))
    return _cuda_graph_steps(compiled) if _cudagraphs(settings, device) else compiled, {}


def check(name: str, settings, record: dict) -> bool:
    """Refuse, naming the config key, a backend the installed torch does not know; a runtime's own backend
    (openvino) where its package is missing leaves the mode's experiments to say `unsupported`."""
    if runtimes.provides_backend(settings.backend):
        if not runtimes.note_installed(settings.backend, record):
            return False
        runtimes.register_compile_backend(settings.backend)
    backends = torch._dynamo.list_backends(exclude_tags=())
    if settings.backend not in backends:
        raise UserError(
            f"Config key `mode_definitions.{name}.compile.backend` is {settings.backend!r}, which torch "
            f"{torch.__version__} does not know: expected one of {', '.join(backends)}."
        )
    if settings.backend == "inductor":
        record["inductor_options"] = inductor_options(settings)
    return True


def _cudagraphs(settings, device: str) -> bool:
    cudagraphs = settings.backend == "inductor" and inductor_options(settings).get("triton.cudagraphs")
    return bool(cudagraphs) and device.startswith("cuda")


def _cuda_graph_steps(compiled: Callable) -> Callable:
    """Mark each call a new CUDA-graph step, so that replays may reuse the previous output buffers."""

    def step(*args, **kwargs):
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(*args, **kwargs)

    return step


__all__ = ["check", "compile_kwargs", "inductor_options", "load_package", "save_package", "wrap"]  # package: AOTI's


def save_precompiled(module: nn.Module, inputs: tuple, settings, device: str, dtype: str, path: str | Path) -> dict:
    """The model's forward compiled ahead of time as one graph (`aot_compile`) with the mode's settings, and saved to
    `path` with the module itself left out (it is the caller's: `load_precompiled` takes it back); the seconds it
    took, and the file's bytes. A model that breaks into several graphs cannot be precompiled."""
    begin = time.perf_counter()
    kwargs = {**compile_kwargs(settings), "fullgraph": True}
    try:
        with torch.no_grad(), precision(device, dtype):
            compiled = torch.compile(module.forward, **kwargs).aot_compile((inputs, {}))
    except (torch._dynamo.exc.Unsupported, torch._dynamo.exc.UserError) as exc:
        raise Unsupported(f"aot_compile needs the model as one graph: {first_line(exc)}") from exc
    compiled.save_compiled_function(str(path), external_data={"module": module})
    return {"precompile_s": time.perf_counter() - begin, "precompiled_bytes": os.path.getsize(path)}


def load_precompiled(module: nn.Module, path: str | Path) -> Callable:
    """A function `save_precompiled` saved, bound to `module` (the same architecture, with its weights)."""
    with open(path, "rb") as handle:
        forward = torch.compiler.load_compiled_function(handle, external_data={"module": module})
    return functools.partial(forward, module)  # saved from the unbound forward: its `self` comes first
