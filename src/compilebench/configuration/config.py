"""Load and validate a pipeline config; derive one experiment's settings from it.

The same functions serve the command line and the Snakemake workflow, so a
config that one accepts the other accepts too. Nothing here imports torch:
hardware env vars must be set before torch loads.
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ..core import modes
from ..core.errors import ConfigError, UserError  # noqa: F401  (UserError: the base callers catch)
from ..core.experiment import Experiment, canonical
from ..core.files import run_result_paths
from ..core.layout import ASSETS_DIR, COMPILE_TRACE, TRACE, WEIGHTS_DIR
from ..core.records import CONFIG_SWEEP_KEYS, START_PATHS, SWEEP_KEYS
from . import catalog, plan

SCHEMA_PATH = Path(__file__).parent / "schemas" / "config.schema.yaml"

MEASURE_DEFAULTS: dict[str, Any] = {
    "warmup": 10,
    "iterations": 20,
    "min_time_s": 1.0,
    "max_iterations": 1000,
    "interleave_block": None,
    "processes": 1,
    "interleave_block_s": 0.2,
    "block_warmup": 3,
    "min_blocks": 10,
    "steady_state_s": 0.5,
    "timeout_s": 3600.0,
    "fullgraph": False,
    "bootstrap_resamples": 2000,
    "private_cache": True,
    "warm_start": True,
    "bundle_start": True,
    "profile": False,
    "profile_iterations": 5,
}

CPU_HARDWARE: dict[str, Any] = {"device": "cpu", "optional": False, "exclusive": True, "env": {}, "resources": {}}


def _extend_with_defaults(validator_class):
    """A validator that also fills in the schema's `default` values (as Snakemake does)."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if "default" in subschema and name not in instance:
                    instance[name] = copy.deepcopy(subschema["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


def _whole_number(checker, instance) -> bool:
    """An integer in the YAML itself: JSON Schema takes 2.0 for an integer, and torch refuses a float size."""
    return isinstance(instance, int) and not isinstance(instance, bool)


_Validator = jsonschema.validators.extend(
    _extend_with_defaults(jsonschema.Draft7Validator),
    type_checker=jsonschema.Draft7Validator.TYPE_CHECKER.redefine("integer", _whole_number),
)


def _schema() -> dict:
    return yaml.safe_load(SCHEMA_PATH.read_text())


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _describe(error: jsonschema.ValidationError) -> str:
    """One paragraph: the key, what was found, what was expected."""
    key = _key(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        where = "" if key == "(top level)" else f" under `{key}`"
        return (
            f"Unknown config key{'s' if len(extra) > 1 else ''} {', '.join(f'`{e}`' for e in extra)}{where}; "
            f"expected one of: {', '.join(allowed)}."
        )
    if error.validator == "propertyNames":
        return (
            f"Invalid name {error.instance!r} under config key `{key}`: expected "
            f"{error.schema.get('description', 'a plain name')}."
        )
    if error.validator == "required":
        return f"Config key `{key}` is incomplete: {error.message}."
    expected = error.schema.get("description")
    found = f"got {error.instance!r}" if not isinstance(error.instance, dict) else error.message
    hint = f"expected {expected}" if expected else error.message
    return f"Config key `{key}` is invalid: {found}; {hint}."


def validate(config: dict) -> dict:
    """Validate in place against the schema (filling defaults), then check what a schema cannot."""
    _check_finite(config, [])
    errors = sorted(_Validator(_schema()).iter_errors(config), key=lambda e: len(list(e.absolute_path)))
    if errors:
        raise ConfigError(_describe(errors[0]))
    if not config["models"]:
        raise ConfigError("Config key `models` is empty: expected at least one model entry.")
    if not config["hardware"]:
        raise ConfigError(
            "Config key `hardware` is empty: expected at least one hardware entry, such as `cpu: {device: cpu}`."
        )
    _check_baseline(config)
    _check_compare_with(config)
    for name, model in config["models"].items():
        if "stream" in model and "sweep" in model:
            raise ConfigError(
                f"Config key `models.{name}.stream` and `models.{name}.sweep` are both set: expected one of the two "
                "(a stream varies its axis within one process; a sweep measures each value as its own experiment)."
            )
    config["models"] = expand_streams(expand_sweeps(config["models"]))
    _check_wildcard_names(config)
    _check_mode_definitions(config["mode_definitions"])
    _check_torchao(config)
    _check_mode_names("modes", config["modes"], config)
    _check_iterations("measure", config["measure"])
    _check_starts("measure", config["measure"], config)
    plan.check_fits_timeout("measure", {**MEASURE_DEFAULTS, **config["measure"]}, config["measure"])
    for name, model in config["models"].items():
        _check_model(name, model, config["assets"]["files"])
        if "modes" in model:
            _check_mode_names(f"models.{name}.modes", model["modes"], config)
            _check_narrows(name, model["modes"], config["modes"])
        _check_dynamic_axes(name, model, config)
        _check_cold_processes(name, model, measure_settings(config, name))
        key = f"models.{model.get('sweep_of') or model.get('stream_of') or name}.measure"
        _check_starts(key, model.get("measure", {}), config, name)
        if "iterations" in model.get("measure", {}) or "max_iterations" in model.get("measure", {}):
            _check_iterations(f"models.{name}.measure", measure_settings(config, name))
        if model.get("stream"):
            plan.check_stream_fits(
                f"models.{model['stream_of']}.stream", model["stream"], measure_settings(config, name)
            )
        else:
            key = f"models.{model.get('sweep_of') or name}.measure"
            plan.check_fits_timeout(key, measure_settings(config, name), model.get("measure", {}))
    catalog.check_architectures(config["models"])
    return config


def _check_finite(value: Any, path: list) -> None:
    """YAML reads `.nan` and `.inf` as numbers, and a schema's bounds let NaN through: refuse them everywhere."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"Config key `{_key(path)}` is {value!r}: expected a finite number.")
    if isinstance(value, dict):
        for name, item in value.items():
            _check_finite(item, [*path, name])
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_finite(item, [*path, i])


def _check_compare_with(config: dict) -> None:
    previous = config["report"].get("compare_with")
    if previous is not None and not run_result_paths(previous):
        raise ConfigError(
            f"Config key `report.compare_with` is {previous!r}, which holds no results: expected a project folder "
            "with results/runs/HARDWARE/MODEL/MODE.json files from an earlier run, or its results/ folder."
        )


def _check_baseline(config: dict) -> None:
    baseline = config["report"].get("baseline_hardware")
    if baseline is not None and baseline not in config["hardware"]:
        raise ConfigError(
            f"Config key `report.baseline_hardware` is {baseline!r}, which is not a hardware entry: expected one of "
            f"{', '.join(config['hardware'])}."
        )


def _check_iterations(key: str, measure: dict) -> None:
    settings = {**MEASURE_DEFAULTS, **measure}
    if settings["iterations"] > settings["max_iterations"]:
        raise ConfigError(
            f"Config key `{key}.iterations` is {settings['iterations']}, above `max_iterations` "
            f"({settings['max_iterations']}), which caps the timed iterations: expected at most "
            f"{settings['max_iterations']}, or a larger max_iterations."
        )


def _check_cold_processes(name: str, model: dict, measure: dict) -> None:
    if measure.get("cold_processes") and not measure["private_cache"]:
        own = "cold_processes" in model.get("measure", {}) or "private_cache" in model.get("measure", {})
        key = f"models.{model.get('sweep_of') or name}.measure" if own else "measure"
        raise ConfigError(
            f"Config key `{key}.cold_processes` makes every process compile in empty caches of its own, but "
            "`private_cache` is false, so they would share torch's cache and all but the first start warm: expected "
            "private_cache true (its default) beside it."
        )


def _check_narrows(model: str, names: list[str], global_modes: list[str]) -> None:
    for i, name in enumerate(names):
        if name not in global_modes:
            raise ConfigError(
                f"Config key `models.{model}.modes.{i}` is {name!r}, which the global `modes` list "
                f"({', '.join(global_modes)}) does not name: expected modes from that list, which a model's "
                "`modes` narrows (add it there to run it)."
            )


# Sweep keys in the order a point's name lists them, with the short form the name uses.
SWEEP_NAMES = {
    "batch_size": "bs", "image_size": "img", "seq_len": "seq", "new_tokens": "new", "dtype": "",
    "num_hidden_layers": "L",
}  # fmt: skip
assert tuple(SWEEP_NAMES) == SWEEP_KEYS
DTYPE_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def sweep_point_name(model: str, values: dict) -> str:
    """`resnet50` at batch 8 and 224 px is `resnet50.bs8.img224`; a dtype adds `.bf16`, `.fp16` or `.fp32`."""
    parts = [
        DTYPE_NAMES[values[k]] if k == "dtype" else f"{short}{values[k]}"
        for k, short in SWEEP_NAMES.items()
        if k in values
    ]
    return ".".join([model, *parts])


def expand_sweeps(models: dict) -> dict:
    """Each model with a `sweep` becomes one entry per point of the cartesian product, in the order given."""
    expanded = {}
    for name, entry in models.items():
        if "sweep" not in entry:
            expanded[name] = entry
            continue
        keys = [k for k in SWEEP_KEYS if k in entry["sweep"]]
        for key in keys:
            _check_sweep_axis(name, entry, key)
        for point in itertools.product(*(entry["sweep"][k] for k in keys)):
            values = dict(zip(keys, point))
            point_name = sweep_point_name(name, values)
            if not NAME_PATTERN.match(point_name):
                raise ConfigError(
                    f"Config key `models.{name}.sweep` gives the point name {point_name!r}, which is longer than 64 "
                    "characters: give the model a shorter name."
                )
            if point_name in models or point_name in expanded:
                raise ConfigError(
                    f"Config key `models.{name}.sweep` gives the point {point_name!r}, which another model entry "
                    "already names: rename one of them."
                )
            base = {k: v for k, v in entry.items() if k != "sweep"}
            shape = {k: v for k, v in values.items() if k not in CONFIG_SWEEP_KEYS}
            architecture = {k: v for k, v in values.items() if k in CONFIG_SWEEP_KEYS}
            if architecture:
                base["config"] = {**base.get("config", {}), **architecture}
            expanded[point_name] = {**base, **shape, "sweep_of": name, "swept": values}
    return expanded


STREAM_AXES = ("batch_size", "seq_len", "image_size")


def expand_streams(models: dict) -> dict:
    """Each model with a `stream` is measured as its stream: the entry `MODEL.stream`, in one process (its passes
    alternate eager and the mode)."""
    expanded = {}
    for name, entry in models.items():
        if "stream" not in entry:
            expanded[name] = entry
            continue
        _check_stream(name, entry)
        stream_name = f"{name}.stream"
        if stream_name in models:
            raise ConfigError(
                f"Config key `models.{name}.stream` is measured as {stream_name!r}, which another model entry "
                "already names: rename one of them."
            )
        measure = {**entry.get("measure", {}), "processes": 1}
        expanded[stream_name] = {**entry, "measure": measure, "stream_of": name}
    return expanded


def _check_stream(name: str, entry: dict) -> None:
    key = f"models.{name}.stream"
    stream = entry["stream"]
    axes = [axis for axis in STREAM_AXES if axis in stream]
    if len(axes) != 1:
        raise ConfigError(
            f"Config key `{key}` varies {', '.join(axes) or 'no axis'}: expected exactly one of "
            f"{', '.join(STREAM_AXES)}, with the list of values to call in order or a {{low, high}} range."
        )
    if entry.get("task") == "text-generation":
        raise ConfigError(
            f"Config key `{key}` is set on a text-generation model, whose decode loop keeps one static cache shape: "
            "expected a stream on an image or text classification model."
        )
    axis = axes[0]
    if why := _sweep_axis_missing(entry, axis):
        raise ConfigError(f"Config key `{key}.{axis}` varies a setting that changes nothing for this model ({why}).")
    values = stream[axis]
    if isinstance(values, dict):
        if values["low"] > values["high"]:
            raise ConfigError(f"Config key `{key}.{axis}` has low {values['low']} above high {values['high']}.")
        if "calls" not in stream or "repeat" in stream:
            raise ConfigError(
                f"Config key `{key}` draws {axis} at random: expected `calls` (how many draws) and no `repeat`."
            )
    elif "calls" in stream or "seed" in stream:
        raise ConfigError(
            f"Config key `{key}.{'calls' if 'calls' in stream else 'seed'}` applies to a random stream only: "
            f"expected `repeat` with a list of {axis} values, or a {{low, high}} range with `calls`."
        )


# Snakemake refuses a wildcard value that ends in one substring repeated 20 times or more (it takes it for a
# rule matching its own output without end): a model, mode or hardware name is such a value.
PERIODIC_NAME = re.compile(r"(?P<unit>.+?)(?P=unit){19,}$")


def _check_wildcard_names(config: dict) -> None:
    names = [
        *((f"hardware.{name}", name) for name in config["hardware"]),
        *(
            (f"models.{entry.get('sweep_of') or entry.get('stream_of') or name}", name)
            for name, entry in config["models"].items()
        ),
        *((f"mode_definitions.{name}", name) for name in config["mode_definitions"]),
        *((f"modes.{i}", name) for i, name in enumerate(config["modes"])),
    ]
    for key, name in names:
        if periodic := PERIODIC_NAME.search(name):
            raise ConfigError(
                f"Config key `{key}` names {name!r}, which ends in {periodic['unit']!r} repeated "
                f"{len(periodic[0]) // len(periodic['unit'])} times: Snakemake refuses such a name in a file path (it "
                "reads it as a rule feeding on its own output), so expected a name without a long repetition."
            )


TEXT_TASKS = ("text-classification", "fill-mask", "text-generation")


def input_axes(entry: dict) -> tuple[str, ...]:
    """The axes a model's input has: a batch, and an image's size or a text's sequence."""
    return ("batch_size", "seq_len") if entry.get("task") in TEXT_TASKS else ("batch_size", "image_size")


def _check_dynamic_axes(name: str, entry: dict, config: dict) -> None:
    """A mode's `mark_dynamic` names axes the model's input has: on another model it would mark another dimension."""
    defined = config["mode_definitions"]
    for mode in model_modes(config, name):
        axes = ((defined.get(mode) or {}).get("compile") or {}).get("mark_dynamic") or []
        for axis in axes:
            if axis not in input_axes(entry):
                model = entry.get("sweep_of") or entry.get("stream_of") or name
                raise ConfigError(
                    f"Config key `mode_definitions.{mode}.compile.mark_dynamic` names {axis!r}, which the input of "
                    f"`models.{model}` (a {entry.get('task', 'image-classification')} model, which runs {mode}) does "
                    f"not have: expected axes of its input ({', '.join(input_axes(entry))}), or a `modes` list for "
                    "the model without that mode."
                )


def _sweep_axis_missing(entry: dict, key: str) -> str | None:
    """Why model `entry` has no input axis that sweep key `key` would change, or None when it has one."""
    task = entry.get("task", "image-classification")
    if key == "seq_len" and task not in TEXT_TASKS:
        return f"a {task} model has no sequence axis"
    if key == "seq_len" and entry.get("prompt"):
        return "its `prompt` sets the sequence, whatever seq_len says"
    if key == "image_size" and task != "image-classification":
        return f"a {task} model takes no image"
    if key == "image_size" and entry.get("source") == "transformers":
        return "a transformers vision model takes its image size from `config.image_size`"
    if key == "new_tokens" and task != "text-generation":
        return f"a {task} model generates no tokens"
    random_transformers = entry.get("source") == "transformers" and entry.get("weights", "random") == "random"
    if key in CONFIG_SWEEP_KEYS and not random_transformers:
        return f"`{key}` is set in a transformers model's `config`, which only a model with random weights builds from"
    return None


def _check_sweep_axis(name: str, entry: dict, key: str) -> None:
    if why := _sweep_axis_missing(entry, key):
        allowed = [k for k in SWEEP_KEYS if _sweep_axis_missing(entry, k) is None]
        raise ConfigError(
            f"Config key `models.{name}.sweep.{key}` sweeps a setting that changes nothing for this model ({why}), "
            f"so its points would be identical experiments: expected a sweep over {', '.join(allowed)}."
        )


def _check_mode_definitions(defined: dict) -> None:
    for name, definition in defined.items():
        key = f"mode_definitions.{name}"
        if name in modes.BUILTIN_MODES:
            raise ConfigError(
                f"Config key `{key}` redefines the built-in mode {name!r}: give your definition another name "
                f"(built-in modes: {', '.join(modes.MODE_NAMES)})."
            )
        quantize = definition.get("quantize")
        if quantize and definition["kind"] not in modes.QUANTIZE_KINDS:
            raise ConfigError(
                f"Config key `{key}.quantize` applies to a mode of kind {definition['kind']!r}: expected quantization "
                f"on a mode of kind {' or '.join(modes.QUANTIZE_KINDS)} (torchao quantizes the module they run)."
            )
        if quantize and "group_size" in quantize and quantize["method"] != "int4_weight_only":
            raise ConfigError(
                f"Config key `{key}.quantize.group_size` does not apply to method {quantize['method']!r}: expected "
                "group_size with int4_weight_only only."
            )
        compile_settings = definition.get("compile") or {}
        if compile_settings.get("mark_dynamic") and compile_settings.get("dynamic", False) is False:
            raise ConfigError(
                f"Config key `{key}.compile.mark_dynamic` marks axes dynamic, but `dynamic` is false (unset means "
                "false here), which makes every shape static: expected `dynamic: null` beside it."
            )
        others = [k for k in modes.KINDS if k in definition and k != definition["kind"]]
        if others:
            raise ConfigError(
                f"Config key `{key}.{others[0]}` does not apply to a mode of kind {definition['kind']!r}: "
                f"expected settings under `{key}.{definition['kind']}` only."
            )


def _check_torchao(config: dict) -> None:
    """A quantized mode needs torchao where it runs: checked here for this Python; a platform with its own Python
    environment is checked in that interpreter by its mode check."""
    defined = config["mode_definitions"]
    used = {*config["modes"], *(m for model in config["models"].values() for m in model.get("modes", []))}
    quantized = sorted(name for name in used if (defined.get(name) or {}).get("quantize"))
    here = [name for name, entry in config["hardware"].items() if not entry.get("python_env")]
    if quantized and here and modes.torchao_missing():
        raise ConfigError(
            f"Config key `mode_definitions.{quantized[0]}.quantize` asks for torchao quantization, but torchao is not "
            f"installed in this Python, which runs hardware {', '.join(here)}: expected torchao, installed with "
            f"`{modes.TORCHAO_INSTALL}` (or `pip install torchao`)."
        )


def _check_mode_names(key: str, names: list[str], config: dict) -> None:
    known = modes.definitions(config)
    for i, name in enumerate(names):
        if name not in known:
            defined = ", ".join(config["mode_definitions"]) or "none"
            raise ConfigError(
                f"Config key `{key}.{i}` is {name!r}, which is neither a built-in mode ({', '.join(modes.MODE_NAMES)}) "
                f"nor defined under `mode_definitions` ({defined})."
            )


def _check_model(name: str, model: dict, assets: dict) -> None:
    key = f"models.{name}"
    for field in ("image", "labels"):
        value = model.get(field)
        if value and value not in assets and not Path(value).is_file():
            raise ConfigError(
                f"Config key `{key}.{field}` is {value!r}, which is neither an asset under `assets.files` "
                f"({', '.join(assets) or 'none defined'}) nor an existing file."
            )
    if model.get("image") and model["image"] not in assets:
        _check_image(f"{key}.image", model["image"])
    _check_context(key, model)
    if model["source"] == "torchvision" and model["task"] != "image-classification":
        raise ConfigError(
            f"Config key `{key}.task` is {model['task']!r}, but torchvision models here are "
            "classifiers: expected image-classification."
        )
    weights = model["weights"]
    if weights not in ("random", "pretrained"):
        catalog.check_weights(f"{key}.weights", model["source"], weights)
    if weights == "pretrained" and model["source"] == "transformers":
        for field in ("hub_id", "revision"):
            if field not in model:
                raise ConfigError(
                    f"Config key `{key}.{field}` is missing: pretrained transformers weights need "
                    "`hub_id` and a pinned `revision` so that a rerun loads the same weights."
                )


def _check_image(key: str, path: str) -> None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            image.verify()
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise ConfigError(f"Config key `{key}` names {path!r}, which is not a readable image: {exc}.") from None


def _check_context(key: str, model: dict) -> None:
    """Synthetic token ids plus new tokens must fit the context the architecture's config gives."""
    context = model.get("config", {}).get("max_position_embeddings")
    synthetic = model["weights"] == "random" and not model.get("prompt")
    if model["source"] != "transformers" or model["task"] == "image-classification" or context is None or not synthetic:
        return
    needed = model["seq_len"] + (model["new_tokens"] if model["task"] == "text-generation" else 0)
    if needed > context:
        raise ConfigError(
            f"Config key `{key}.seq_len` is {model['seq_len']}, which with new_tokens needs {needed} positions, but "
            f"`{key}.config.max_position_embeddings` is {context}: expected at most {context} positions in all."
        )


class _UniqueKeys(yaml.SafeLoader):
    """YAML that refuses a key given twice in one mapping, where plain YAML keeps the later value silently."""

    def construct_mapping(self, node, deep=False):
        lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in lines and key != "<<":
                raise yaml.constructor.ConstructorError(
                    problem=f"key `{key}` is given twice, at lines {lines[key]} and {key_node.start_mark.line + 1}: "
                    "expected each key once (YAML would keep the later value and drop the other silently)",
                    problem_mark=key_node.start_mark,
                )
            lines[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def read_yaml(path: str | Path) -> dict:
    """A config file's mapping, or one paragraph naming the file and the line where its YAML breaks."""
    path = Path(path)
    try:
        config = yaml.load(path.read_text(), Loader=_UniqueKeys) or {}
    except FileNotFoundError:
        raise ConfigError(f"Config file {path} does not exist.") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"Config file {path} is not valid YAML{_yaml_problem(exc)}.") from None
    if not isinstance(config, dict):
        raise ConfigError(f"Config file {path} must hold a mapping of keys, not {type(config).__name__}.")
    return config


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = " ".join(filter(None, [getattr(exc, "context", None), getattr(exc, "problem", None)]))
    return f"{where}: {problem}" if problem else where


def yaml_problem(path: str | Path) -> str | None:
    """Why a config file cannot be read as YAML (the file and line named), or None when it can."""
    try:
        read_yaml(path)
    except ConfigError as error:
        return str(error)
    return None


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
    set for a compiling mode's experiments, not for streams."""
    measure = measure_settings(config, model)
    paths = plan.paths_asked(measure, mode)
    if not paths or config["models"][model].get("stream"):
        return None
    if modes.definitions(config)[mode]["kind"] not in modes.COMPILING_KINDS:
        return None
    order = [path for path in START_PATHS if path in paths]
    return {"paths": order, "repeats": measure.get("start_repeats", plan.DEFAULT_START_REPEATS)}


def _check_starts(key: str, measure: dict, config: dict, model: str | None = None) -> None:
    """A mapping of modes under `measure.starts` names compiling modes (of the model, where it is the model's)."""
    starts = measure.get("starts")
    if not isinstance(starts, dict):
        return
    definitions = modes.definitions(config)
    known = model_modes(config, model) if model else config["modes"]
    compiling = [m for m in known if definitions[m]["kind"] in modes.COMPILING_KINDS]
    for mode in starts:
        if mode not in compiling:
            what = "a mode that does not compile" if mode in known else f"no mode {'of the model' if model else 'run'}"
            raise ConfigError(
                f"Config key `{key}.starts.{mode}` names {what}: expected one of the compiling modes "
                f"{', '.join(compiling) or '(none)'}, each with a list of start paths."
            )


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


def model_modes(config: dict, model: str) -> list[str]:
    return config["models"][model].get("modes", config["modes"])


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
    """The folder a model's pretrained weights download to: the points of a sweep share their model's."""
    return config["models"][model].get("sweep_of", model)


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
