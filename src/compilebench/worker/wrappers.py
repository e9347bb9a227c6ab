"""How a built model is wrapped, with the settings its mode resolves to, before it is timed: its kind's worker
implementation (`worker/kinds/`) builds the call; inductor's configuration and the checks of a defined mode's
settings hold for every kind."""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..core import kinds
from ..core.errors import UserError
from ..core.experiment import ModeSettings
from . import quantization, regions
from .kinds import of as implementation
from .kinds.base import precision
from .kinds.compile import compile_kwargs, inductor_options

__all__ = ["compile_kwargs", "configured", "implementation", "inductor_options", "precision", "wrap"]


def inductor_configuration(settings: ModeSettings) -> dict[str, Any]:
    """The inductor settings that hold as configuration for the mode's whole measuring process: a definition's own
    options, as a practitioner sets them in `torch._inductor.config`. A torch.compile mode's presets are left to
    torch.compile, as `torch.compile(model, mode=...)` applies them (on a CPU, `triton.cudagraphs` set globally
    makes reduce-overhead run at default's speed, which a user of that mode does not get)."""
    return dict(settings.options) if kinds.of(settings).uses_inductor(settings) else {}


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
    kind = kinds.of(settings)
    if not (kind.compiles_on_first_call and kind.uses_inductor(settings)):
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
    options = {"device": device, "dtype": dtype, "workdir": workdir, "names": names}
    return implementation(settings).wrap(module, settings, inputs, **options)


def check(name: str, settings: ModeSettings) -> dict:
    """Refuse, naming the config key, a backend or inductor setting that the installed torch does not know."""
    kind = kinds.of(settings)
    key = f"mode_definitions.{name}.{kind.name}"
    record = {"mode": name, "settings": settings.to_json(), "torch": torch.__version__}
    own_check = getattr(implementation(settings), "check", None)
    if own_check is not None and not own_check(name, settings, record):
        return record
    known = torch._inductor.config.get_config_copy()
    if kind.uses_inductor(settings):
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
    with configured(settings):
        record["configuration"] = configuration_in_effect(settings)
    return record


def check_regions(name: str, settings: ModeSettings, models: dict[str, dict]) -> dict[str, dict | None]:
    """For a regional mode, each model that runs it (`models`: name to ModelSpec JSON, built on the meta device)
    and the stack it would compile; a model without one is refused, naming the mode's key and the model's. None
    for a model whose architecture is not known before its weights are downloaded: its benchmark checks it."""
    from ..core.experiment import ModelSpec
    from .models import architecture

    if not getattr(settings, "regional", None):  # a compile setting
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
