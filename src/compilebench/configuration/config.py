"""A config file made into experiments: loaded, validated (filling the schema's defaults), expanded, and each model x
mode x hardware built once as a typed `Experiment`; what a config plans and prices."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ..core import kinds, modes
from ..core.errors import ConfigError, UserError  # noqa: F401  (UserError: the base callers catch)
from ..core.experiment import Experiment, canonical
from ..core.layout import ASSETS_DIR, COMPILE_TRACE, TRACE, WEIGHTS_DIR
from ..core.records import START_PATHS, SWEEP_KEYS
from . import catalog, plan
from .expand import SWEEP_NAMES, expand_streams, expand_sweeps, expand_training
from .schema import (
    MEASURE_DEFAULTS,
    Validator,
    check_baseline,
    check_cold_processes,
    check_compare_with,
    check_dynamic_axes,
    check_finite,
    check_history,
    check_iterations,
    check_mode_definitions,
    check_mode_names,
    check_model,
    check_narrows,
    check_starts,
    check_torchao,
    check_training,
    check_wildcard_names,
    complete_sources,
    config_name,
    describe,
    load_schema,
    model_modes,
)
from .yaml_files import check_expanded_size, read_yaml

CPU_HARDWARE: dict[str, Any] = {"device": "cpu", "optional": False, "exclusive": True, "env": {}, "resources": {}}


def validate(config: dict) -> dict:
    """Validate in place against the schema (filling defaults), then check what a schema cannot."""
    check_expanded_size(config, "The config")
    check_finite(config, [])
    errors = sorted(Validator(load_schema()).iter_errors(config), key=lambda e: len(list(e.absolute_path)))
    if errors:
        raise ConfigError(describe(errors[0]))
    if not config["models"]:
        raise ConfigError("Config key `models` is empty: expected at least one model entry.")
    if not config["hardware"]:
        raise ConfigError(
            "Config key `hardware` is empty: expected at least one hardware entry, such as `cpu: {device: cpu}`."
        )
    check_baseline(config)
    check_compare_with(config)
    check_history(config)
    for name, model in config["models"].items():
        if "stream" in model and "sweep" in model:
            raise ConfigError(
                f"Config key `models.{name}.stream` and `models.{name}.sweep` are both set: expected one of the two "
                "(a stream varies its axis within one process; a sweep measures each value as its own experiment)."
            )
    complete_sources(config["models"])
    check_training(config)
    config["models"] = expand_training(expand_streams(expand_sweeps(config["models"])))
    check_wildcard_names(config)
    check_mode_definitions(config["mode_definitions"])
    check_torchao(config)
    check_mode_names("modes", config["modes"], config)
    check_iterations("measure", config["measure"])
    check_starts("measure", config["measure"], config)
    plan.check_fits_timeout("measure", {**MEASURE_DEFAULTS, **config["measure"]}, config["measure"])
    for name, model in config["models"].items():
        check_model(name, model, config["assets"]["files"])
        if "modes" in model:
            check_mode_names(f"models.{name}.modes", model["modes"], config)
            if "train" not in model:  # a training experiment's modes need not be among the inference ones
                check_narrows(name, model["modes"], config["modes"])
        check_dynamic_axes(name, model, config)
        check_cold_processes(name, model, measure_settings(config, name))
        key = f"models.{config_name(name, model)}.measure"
        check_starts(key, model.get("measure", {}), config, name)
        if "iterations" in model.get("measure", {}) or "max_iterations" in model.get("measure", {}):
            check_iterations(f"models.{name}.measure", measure_settings(config, name))
        if model.get("stream"):
            plan.check_stream_fits(
                f"models.{model['stream_of']}.stream", model["stream"], measure_settings(config, name)
            )
        else:
            key = f"models.{config_name(name, model)}.measure"
            plan.check_fits_timeout(key, measure_settings(config, name), model.get("measure", {}))
    catalog.check_architectures(config["models"])
    return config


assert tuple(SWEEP_NAMES) == SWEEP_KEYS


def load(path: str | Path) -> dict:
    """Read a YAML config file and validate it."""
    return validate(read_yaml(path))


def measure_settings(config: dict, model: str) -> dict:
    """Measurement settings of one model: defaults, then global `measure`, then the model's own."""
    return {**MEASURE_DEFAULTS, **config["measure"], **config["models"][model].get("measure", {})}


# Settings of the starts job alone (`starts_plan`), not of the experiment's measuring processes: adding starts to
# an experiment measures nothing of it again.
START_KEYS = ("starts", "start_repeats")


def starts_plan(config: dict, model: str, mode: str, hardware: str) -> dict | None:
    """The paths and repeats of an experiment's starts job (`measure.starts`), or None where it has none: starts are
    set for a compiling mode's experiments, not for streams or training steps."""
    measure = measure_settings(config, model)
    paths = plan.paths_asked(measure, mode)
    entry = config["models"][model]
    if not paths or entry.get("stream") or entry.get("train"):
        return None
    if not kinds.get(modes.definitions(config)[mode]["kind"]).starts:
        return None
    order = [path for path in START_PATHS if path in paths]
    return {"paths": order, "repeats": measure.get("start_repeats", plan.DEFAULT_START_REPEATS)}


# Hardware settings that only the report or the cluster reads: changing one reruns no measurement.
REPORT_ONLY_HARDWARE_KEYS = ("price_per_hour", "resources", "peak", "optional", "exclusive")


def measured_hardware(entry: dict) -> dict:
    """What of a hardware entry changes a measurement (device, env vars, threads, software), in canonical order."""
    return canonical({k: v for k, v in entry.items() if k not in REPORT_ONLY_HARDWARE_KEYS})


def check_devices_here(config: dict, gpu_visible) -> None:
    """A run on this machine stops before any job when a non-optional GPU entry has no GPU to run on."""
    for name, entry in config["hardware"].items():
        if entry["device"] == "cuda" and not entry["optional"] and not gpu_visible():
            raise ConfigError(
                f"Config key `hardware.{name}.device` is cuda, but torch sees no CUDA or ROCm GPU on this machine: "
                f"run on a machine with one, mark the entry `optional: true` (skipped where there is no GPU), "
                "or remove it."
            )


def planned(config: dict, done: set[tuple[str, str, str]] = frozenset(), hardware: list[str] | None = None):
    """What a validated config plans on `hardware` (default: every entry), less the experiments in `done`."""
    hardware = list(config["hardware"]) if hardware is None else hardware
    definitions = modes.definitions(config)
    jobs = [(h, m, mode) for h in hardware for m in config["models"] for mode in model_modes(config, m)]
    shares = [
        plan.experiment_plan(measure_settings(config, m), config["models"][m], mode, definitions[mode])
        for h, m, mode in jobs
        if (h, m, mode) not in done
    ]
    optional = sum(1 for h in hardware if config["hardware"][h].get("optional"))
    return plan.totals(shares, experiments=len(jobs), hardware=len(hardware), optional=optional,
                       done=sum(1 for job in jobs if job in done))  # fmt: skip


def results_done(config: dict, result_path: str) -> set[tuple[str, str, str]]:
    """The experiments whose result file (`result_path`, formatted with hardware, model and mode) is on disk."""
    return {
        (h, m, mode)
        for h in config["hardware"]
        for m in config["models"]
        for mode in model_modes(config, m)
        if Path(result_path.format(hardware=h, model=m, mode=mode)).is_file()
    }


def hardware_prices(config: dict) -> dict[str, float]:
    """Hourly prices of the hardware entries that have one, for cost per inference."""
    return {name: e["price_per_hour"] for name, e in config["hardware"].items() if e.get("price_per_hour") is not None}


def peak_overrides(config: dict) -> dict[str, dict | None]:
    """Each hardware entry's `peak`, which overrides the table of known devices."""
    return {name: entry.get("peak") for name, entry in config["hardware"].items()}


def hardware_entry(config: dict, hardware: str) -> dict:
    """A hardware entry; `cpu` exists even where the config names none."""
    if hardware == "cpu" and hardware not in config["hardware"]:
        return copy.deepcopy(CPU_HARDWARE)
    if hardware not in config["hardware"]:
        raise ConfigError(
            f"Hardware {hardware!r} is not under config key `hardware`: "
            f"expected one of {', '.join(config['hardware'])}."
        )
    return config["hardware"][hardware]


def model_assets(config: dict, model: str) -> list[str]:
    """Names of the downloaded assets a model reads (its image, its label file)."""
    files = config["assets"]["files"]
    return [config["models"][model][f] for f in ("image", "labels") if config["models"][model].get(f) in files]


def pretrained_download(config: dict, model: str) -> bool:
    return config["models"][model]["weights"] == "pretrained"


def weights_name(config: dict, model: str) -> str:
    """The folder a model's pretrained weights download to: the points of a sweep and a training step share their
    model's."""
    entry = config["models"][model]
    return entry.get("sweep_of") or entry.get("train_of") or model


def weights_entry(config: dict, name: str) -> dict:
    """The model entry whose pretrained weights `weights_name` names (any of a sweep's points will do)."""
    return next(entry for model, entry in config["models"].items() if weights_name(config, model) == name)


def reference_experiment(config: dict, model: str, hardware: str) -> Experiment:
    """What the eager float32 reference depends on: the model, its input, the hardware; not the measurement."""
    return experiment(config, model, "eager", hardware, any_mode=True).reference()


def experiment(config: dict, model: str, mode: str, hardware: str, *, any_mode: bool = False) -> Experiment:
    """Everything one benchmark job depends on, and nothing else.

    Asset names become their paths under resources/assets/, and pretrained
    weights their folder under resources/weights/, where the workflow puts them.
    """
    if model not in config["models"]:
        raise ConfigError(
            f"Model {model!r} is not under config key `models`: expected one of {', '.join(config['models'])}."
        )
    entry = hardware_entry(config, hardware)
    if not any_mode and mode not in model_modes(config, model):
        raise ConfigError(
            f"Mode {mode!r} is not among the modes of `models.{model}`: expected one of "
            f"{', '.join(model_modes(config, model))}."
        )
    spec = {k: v for k, v in config["models"][model].items() if k not in ("measure", "modes")}
    for asset in model_assets(config, model):
        for field in ("image", "labels"):
            if spec.get(field) == asset:
                spec[field] = str(ASSETS_DIR / asset)
    if pretrained_download(config, model):
        spec["weights"] = str(WEIGHTS_DIR / weights_name(config, model))
    measure = {k: v for k, v in measure_settings(config, model).items() if k not in START_KEYS}
    if mode not in modes.definitions(config):
        raise ConfigError(f"Mode {mode!r} is neither a built-in mode nor defined under config key `mode_definitions`.")
    settings = modes.settings(modes.definitions(config)[mode], jit_method=spec["jit"], fullgraph=measure["fullgraph"])
    if measure["profile"]:
        measure["trace"] = TRACE.format(hardware=hardware, model=model, mode=mode)
    if measure.get("compile_trace"):
        measure["compile_trace_dir"] = COMPILE_TRACE.format(hardware=hardware, model=model, mode=mode)
    return Experiment.from_json(
        {
            "model": model,
            "mode": mode,
            "mode_settings": settings,
            "hardware": hardware,
            "seed": config["seed"],
            "spec": spec,
            "measure": measure,
            "device": entry["device"],
            "hardware_env": {k: str(v) for k, v in entry.get("env", {}).items()},
            "threads": entry.get("threads"),
            # only where set, so that the identity of every other experiment stays what it was
            **({"python_env": entry["python_env"]} if entry.get("python_env") else {}),
        }
    )
