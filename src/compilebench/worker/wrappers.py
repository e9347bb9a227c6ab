"""How a built model is wrapped, with the settings its mode resolves to, before it is timed."""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..core import modes
from ..core.errors import Unsupported, UserError
from ..core.experiment import ModeSettings
from . import quantization, regions
from .environment_probe import installed_version
from .models import DTYPES


def precision(device: str, dtype: str) -> contextlib.AbstractContextManager:
    """Reduced precision through autocast, as the ROCm study ran it; float32 runs as is."""
    if dtype == "float32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device, dtype=DTYPES[dtype])


def inductor_options(settings: ModeSettings) -> dict[str, Any]:
    """The inductor settings a compile runs with: its torch.compile mode's presets, then the definition's own.

    torch.compile refuses `mode` and `options` together; its own table of what each mode sets
    (`torch._inductor.list_mode_options`) lets both hold at once.
    """
    return {**torch._inductor.list_mode_options(settings.mode, settings.dynamic), **settings.options}


def inductor_configuration(settings: ModeSettings) -> dict[str, Any]:
    """The inductor settings that hold as configuration for the mode's whole measuring process: a definition's own
    options, as a practitioner sets them in `torch._inductor.config`. A torch.compile mode's presets are left to
    torch.compile, as `torch.compile(model, mode=...)` applies them (on a CPU, `triton.cudagraphs` set globally
    makes reduce-overhead run at default's speed, which a user of that mode does not get)."""
    if settings.kind == "export" or (settings.kind == "compile" and settings.backend == "inductor"):
        return dict(settings.options)
    return {}


@contextlib.contextmanager
def configured(settings: ModeSettings):
    """Inductor configured as the mode says, for every compile, recompile and call inside.

    Passing options to torch.compile is not enough: Dynamo decides while it traces, before the backend applies
    them, whether parameters become graph constants (`freezing`), so they must hold as configuration too. What
    else changes inductor's configuration inside (torchao, when it quantizes) is undone on the way out as well.
    """
    saved = torch._inductor.config.get_config_copy()
    recompile_limit = getattr(settings, "recompile_limit", None)  # a compile setting
    limit = {"recompile_limit": recompile_limit} if recompile_limit else {}
    try:
        with torch._inductor.config.patch(inductor_configuration(settings)), torch._dynamo.config.patch(limit):
            yield
    finally:
        torch._inductor.config.load_config(saved)


def configuration_in_effect(settings: ModeSettings) -> dict[str, Any]:
    """The mode's inductor settings as inductor's configuration holds them now (inside `configured`)."""
    current = torch._inductor.config.get_config_copy()
    return {key: current.get(key) for key in inductor_configuration(settings)}


def generated_code() -> set[str]:
    """The files of the Python modules inductor has generated and loaded in this process so far."""
    from torch._inductor.codecache import PyCodeCache

    modules = getattr(PyCodeCache, "modules", [])
    return {path for module in modules if (path := getattr(module, "__file__", None))}


def settings_effect(settings: ModeSettings, before: set[str]) -> dict:
    """What the mode's settings did, read from what inductor produced since `before` (`generated_code()`), not
    from a hook having run: the configuration read back, and whether freezing folded the weights into constants."""
    effect: dict[str, Any] = {"configuration": configuration_in_effect(settings), "checks": {}}
    if settings.kind != "compile" or settings.backend != "inductor":
        return effect
    sources = [Path(path).read_text(errors="replace") for path in sorted(generated_code() - before)]
    frozen = sum(source.count("_frozen_param") for source in sources)
    effect.update(generated_modules=len(sources), frozen_constants=frozen)
    if inductor_configuration(settings).get("freezing"):
        effect["checks"]["freezing"] = {
            "took_effect": frozen > 0,
            "evidence": f"{frozen} references to frozen constants in {len(sources)} generated module(s)",
        }
    return effect


def compile_kwargs(settings: ModeSettings) -> dict[str, Any]:
    kwargs = {"backend": settings.backend, "dynamic": settings.dynamic, "fullgraph": settings.fullgraph}
    if settings.options and settings.backend == "inductor":
        kwargs["options"] = inductor_options(settings)
    elif settings.options:
        kwargs.update(mode=settings.mode, options=settings.options)
    else:
        kwargs["mode"] = settings.mode
    return kwargs


def wrap(
    module: nn.Module,
    settings: ModeSettings,
    inputs: tuple,
    *,
    device: str,
    dtype: str,
    workdir: str,
    names: tuple[str, str] = ("", ""),
) -> tuple[Callable, dict]:
    """The callable that runs `module` as `settings` say, and the seconds each step of preparing it took (a
    regional compile: the regions it compiled, under `regions`). `names`: the mode's and the model's, for errors.

    Lazy modes (compile) compile on their first call; jit and export do their work here.
    """
    kind = settings.kind
    if kind == "eager":
        return module, {}
    if kind == "jit":
        return _torchscript(module, inputs, settings, device, dtype)
    if kind == "compile" and settings.regional:
        key, model_key = f"mode_definitions.{names[0]}.compile.regional", f"models.{names[1]}"
        compiled, record = regions.compile_regions(module, settings.regional, compile_kwargs(settings), key, model_key)
        return _cuda_graph_steps(compiled) if _cudagraphs(settings, device) else compiled, {"regions": record}
    if kind == "compile":
        from . import runtimes

        runtimes.register_compile_backend(settings.backend)
        compiled = torch.compile(module, **compile_kwargs(settings))
        return _cuda_graph_steps(compiled) if _cudagraphs(settings, device) else compiled, {}
    if kind == "export":
        return _aot_inductor(module, inputs, settings, device, dtype, workdir)
    if kind in modes.RUNTIME_KINDS:
        from . import runtimes

        return runtimes.build(module, inputs, settings, device, dtype, workdir)
    raise Unsupported(f"unknown mode kind {kind!r}")


def _cudagraphs(settings: ModeSettings, device: str) -> bool:
    cudagraphs = settings.backend == "inductor" and inductor_options(settings).get("triton.cudagraphs")
    return bool(cudagraphs) and device.startswith("cuda")


def _cuda_graph_steps(compiled: Callable) -> Callable:
    """Mark each call a new CUDA-graph step, so that replays may reuse the previous output buffers."""

    def step(*args, **kwargs):
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(*args, **kwargs)

    return step


def _torchscript(
    module: nn.Module, inputs: tuple, settings: ModeSettings, device: str, dtype: str
) -> tuple[Callable, dict]:
    """Trace or script, then freeze and optimize_for_inference where the settings say so (as the Graviton study)."""
    method = settings.method
    begin = time.perf_counter()
    try:
        with torch.no_grad(), precision(device, dtype):
            if method == "script":
                scripted = torch.jit.script(module)
            else:
                scripted = torch.jit.trace(module, inputs, strict=False, check_trace=False)
            scripted = scripted.eval()
            if settings.freeze:
                scripted = torch.jit.freeze(scripted)
            if settings.optimize_for_inference:
                scripted = torch.jit.optimize_for_inference(scripted)
    except Exception as exc:  # TorchScript raises many types; all mean "cannot apply"
        raise Unsupported(f"TorchScript {method} failed: {type(exc).__name__}: {_first_line(exc)}") from exc
    return scripted, {"script_s": time.perf_counter() - begin}


def _aot_inductor(
    module: nn.Module, inputs: tuple, settings: ModeSettings, device: str, dtype: str, workdir: str
) -> tuple[Callable, dict]:
    """torch.export, then an AOTInductor package built and loaded, as a model is deployed without a Python compile."""
    steps = build_package(module, inputs, settings, device, dtype, str(Path(workdir) / "model.pt2"))
    begin = time.perf_counter()
    loaded = torch._inductor.aoti_load_package(steps.pop("path"))
    return loaded, {**steps, "load_s": time.perf_counter() - begin}


def build_package(module: nn.Module, inputs: tuple, settings: ModeSettings, device: str, dtype: str, path: str) -> dict:
    """The model exported and compiled by AOTInductor into a package at `path`, with the inductor options the mode
    sets (an export mode's, or a compile mode's definition); the seconds each step took, and the package's bytes."""
    begin = time.perf_counter()
    try:
        with torch.no_grad(), precision(device, dtype):
            exported = torch.export.export(module, inputs, strict=getattr(settings, "strict", False))
    except Exception as exc:  # export reports an unexportable model through many exception types
        raise Unsupported(f"torch.export failed: {type(exc).__name__}: {_first_line(exc)}") from exc
    exported_at = time.perf_counter()
    with precision(device, dtype):
        path = torch._inductor.aoti_compile_and_package(
            exported, package_path=path, inductor_configs=dict(settings.options)
        )
    return {
        "export_s": exported_at - begin,
        "package_s": time.perf_counter() - exported_at,
        "package_bytes": os.path.getsize(path),
        "path": path,
    }


def precompile(module: nn.Module, inputs: tuple, settings: ModeSettings, device: str, dtype: str, path: str) -> dict:
    """The model's forward compiled ahead of time as one graph (`aot_compile`) with the mode's settings, and saved to
    `path` with the module itself left out (it is the caller's: `load_precompiled` takes it back); the seconds it
    took, and the file's bytes. A model that breaks into several graphs cannot be precompiled."""
    begin = time.perf_counter()
    kwargs = {**compile_kwargs(settings), "fullgraph": True}
    try:
        with torch.no_grad(), precision(device, dtype):
            compiled = torch.compile(module.forward, **kwargs).aot_compile((inputs, {}))
    except (torch._dynamo.exc.Unsupported, torch._dynamo.exc.UserError) as exc:
        raise Unsupported(f"aot_compile needs the model as one graph: {_first_line(exc)}") from exc
    compiled.save_compiled_function(path, external_data={"module": module})
    return {"precompile_s": time.perf_counter() - begin, "precompiled_bytes": os.path.getsize(path)}


def load_precompiled(module: nn.Module, path: str) -> Callable:
    """A function `precompile` saved, bound to `module` (the same architecture, with its weights)."""
    with open(path, "rb") as handle:
        forward = torch.compiler.load_compiled_function(handle, external_data={"module": module})
    return functools.partial(forward, module)  # saved from the unbound forward: its `self` comes first


def check(name: str, settings: ModeSettings) -> dict:
    """Refuse, naming the config key, a backend or inductor setting that the installed torch does not know."""
    from . import runtimes

    kind = settings.kind
    key = f"mode_definitions.{name}.{kind}"
    record = {"mode": name, "settings": settings.to_json(), "torch": torch.__version__}
    package = kind if kind in modes.RUNTIME_KINDS else getattr(settings, "backend", None)
    if package in modes.RUNTIME_KINDS:  # absent, each of the mode's experiments is unsupported, naming the extra
        missing = modes.package_missing(package)
        record["runtime"] = {"name": package, "version": None if missing else installed_version(package)}
        if record["runtime"]["version"] is None:
            return record
        runtimes.register_compile_backend(package if kind == "compile" else "")
    if kind == "compile":
        backends = torch._dynamo.list_backends(exclude_tags=())
        if settings.backend not in backends:
            raise UserError(
                f"Config key `{key}.backend` is {settings.backend!r}, which torch {torch.__version__} does not "
                f"know: expected one of {', '.join(backends)}."
            )
    known = torch._inductor.config.get_config_copy()
    if kind in modes.COMPILING_KINDS and (kind == "export" or settings.backend == "inductor"):
        for option in settings.options:
            if option not in known:
                close = difflib.get_close_matches(option, list(known), n=3)
                hint = f" (did you mean {' or '.join(close)}?)" if close else ""
                raise UserError(
                    f"Config key `{key}.options.{option}` is not an inductor setting that torch {torch.__version__} "
                    f"knows{hint}: expected a name from torch._inductor.config, such as freezing or cpp_wrapper."
                )
            value, default = settings.options[option], known[option]
            if not _same_kind(value, default):
                raise UserError(
                    f"Config key `{key}.options.{option}` is {value!r}, but inductor's `{option}` in torch "
                    f"{torch.__version__} takes a {type(default).__name__} (its default is {default!r}): expected a "
                    f"{type(default).__name__}, such as {default!r}."
                )
    if settings.quantize:
        record["quantization"] = quantization.check(f"mode_definitions.{name}.quantize", settings.quantize)
    if kind == "compile" and settings.backend == "inductor":
        record["inductor_options"] = inductor_options(settings)
    with configured(settings):
        record["configuration"] = configuration_in_effect(settings)
    return record


def check_regions(name: str, settings: ModeSettings, models: dict[str, dict]) -> dict[str, dict | None]:
    """For a regional mode, each model that runs it (`models`: name to ModelSpec JSON, built on the meta device)
    and the stack it would compile; a model without one is refused, naming the mode's key and the model's. None
    for a model whose architecture is not known before its weights are downloaded: its benchmark checks it."""
    from ..core.experiment import ModelSpec
    from .models import architecture

    if settings.kind != "compile" or not settings.regional:
        return {}
    key, found = f"mode_definitions.{name}.compile.regional", {}
    for model, spec in models.items():  # where this torch has no nested regions, each benchmark says so
        built = architecture(model, ModelSpec.from_json(spec))
        stack = None if built is None else regions.find(built, settings.regional, key, f"models.{model}")
        found[model] = stack and stack.record(regions.how(settings.regional))
    return found


def _same_kind(value: Any, default: Any) -> bool:
    """Whether `value` has the type of an inductor setting whose default is `default` (inductor does not check)."""
    if default is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and (isinstance(default, float) or isinstance(value, int))
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple))
    return isinstance(value, type(default)) if isinstance(default, (str, dict)) else True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
