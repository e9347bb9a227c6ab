"""What a config must satisfy: the schema (its errors name the key, its defaults filled in) and every rule a schema
cannot state."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ..core import kinds, modes, sources
from ..core.errors import ConfigError, UserError  # noqa: F401  (UserError: the base callers catch)
from ..core.files import run_result_paths
from ..core.records import CONFIG_SWEEP_KEYS, SWEEP_KEYS

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


def config_name(name: str, entry: dict) -> str:
    """The model entry's name as the config file spells it: a sweep point's, stream's or training experiment's own."""
    return entry.get("sweep_of") or entry.get("stream_of") or entry.get("train_of") or name


def model_modes(config: dict, model: str) -> list[str]:
    return config["models"][model].get("modes", config["modes"])


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


Validator = jsonschema.validators.extend(
    _extend_with_defaults(jsonschema.Draft7Validator),
    type_checker=jsonschema.Draft7Validator.TYPE_CHECKER.redefine("integer", _whole_number),
)


def load_schema() -> dict:
    """The config's schema: the file's, with each registered mode kind's settings block and model source's keys
    from their declarations."""
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    definition = schema["properties"]["mode_definitions"]["additionalProperties"]["properties"]
    definition["kind"]["enum"] = list(kinds.names())
    described = "; ".join(f"{name}: {kinds.get(name).description}" for name in kinds.names())
    definition["kind"]["description"] = f"{described} (the runtimes need `{kinds.base.RUNTIMES_INSTALL}`)"
    for name in kinds.names():
        if (block := kinds.get(name).schema) is not None:
            definition[name] = block
    entry = schema["properties"]["models"]["additionalProperties"]["properties"]
    for name in sources.names():
        entry.update(sources.get(name).schema)
    source = entry["source"]
    source["enum"] = list(sources.names())
    source["description"] = "; ".join(f"{name}: {sources.get(name).description}" for name in sources.names())
    return schema


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def describe(error: jsonschema.ValidationError) -> str:
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


def check_finite(value: Any, path: list) -> None:
    """YAML reads `.nan` and `.inf` as numbers, and a schema's bounds let NaN through: refuse them everywhere."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"Config key `{_key(path)}` is {value!r}: expected a finite number.")
    if isinstance(value, dict):
        for name, item in value.items():
            check_finite(item, [*path, name])
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_finite(item, [*path, i])


def check_compare_with(config: dict) -> None:
    previous = config["report"].get("compare_with")
    if previous is not None and not run_result_paths(previous):
        raise ConfigError(
            f"Config key `report.compare_with` is {previous!r}, which holds no results: expected a project folder "
            "with results/runs/HARDWARE/MODEL/MODE.json files from an earlier run, or its results/ folder."
        )


SQLITE_HEADER = b"SQLite format 3\x00"


def check_history(config: dict) -> None:
    """The `history` store, where it exists already, must be an SQLite file (or empty): the run appends to it after
    the paper, and a folder or another kind of file there would fail only then."""
    store = config.get("history")
    if not store or not Path(store).exists():
        return
    path = Path(store)
    problem = "is a folder" if path.is_dir() else None
    if problem is None:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
        problem = None if head in (b"", SQLITE_HEADER) else "is not an SQLite file"
    if problem:
        raise ConfigError(
            f"Config key `history` is {store!r}, which {problem}: expected the SQLite store `compilebench history add` "
            "makes (or a path where none exists yet, where the run makes one)."
        )


def check_baseline(config: dict) -> None:
    baseline = config["report"].get("baseline_hardware")
    if baseline is not None and baseline not in config["hardware"]:
        raise ConfigError(
            f"Config key `report.baseline_hardware` is {baseline!r}, which is not a hardware entry: expected one of "
            f"{', '.join(config['hardware'])}."
        )


def check_iterations(key: str, measure: dict) -> None:
    settings = {**MEASURE_DEFAULTS, **measure}
    if settings["iterations"] > settings["max_iterations"]:
        raise ConfigError(
            f"Config key `{key}.iterations` is {settings['iterations']}, above `max_iterations` "
            f"({settings['max_iterations']}), which caps the timed iterations: expected at most "
            f"{settings['max_iterations']}, or a larger max_iterations."
        )


def check_cold_processes(name: str, model: dict, measure: dict) -> None:
    if measure.get("cold_processes") and not measure["private_cache"]:
        own = "cold_processes" in model.get("measure", {}) or "private_cache" in model.get("measure", {})
        key = f"models.{config_name(name, model)}.measure" if own else "measure"
        raise ConfigError(
            f"Config key `{key}.cold_processes` makes every process compile in empty caches of its own, but "
            "`private_cache` is false, so they would share torch's cache and all but the first start warm: expected "
            "private_cache true (its default) beside it."
        )


def check_narrows(model: str, names: list[str], global_modes: list[str]) -> None:
    for i, name in enumerate(names):
        if name not in global_modes:
            raise ConfigError(
                f"Config key `models.{model}.modes.{i}` is {name!r}, which the global `modes` list "
                f"({', '.join(global_modes)}) does not name: expected modes from that list, which a model's "
                "`modes` narrows (add it there to run it)."
            )


# Snakemake refuses a wildcard value that ends in one substring repeated 20 times or more (it takes it for a
# rule matching its own output without end): a model, mode or hardware name is such a value.
PERIODIC_NAME = re.compile(r"(?P<unit>.+?)(?P=unit){19,}$")


def check_wildcard_names(config: dict) -> None:
    names = [
        *((f"hardware.{name}", name) for name in config["hardware"]),
        *((f"models.{config_name(name, entry)}", name) for name, entry in config["models"].items()),
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
INPUT_AXES = ("batch_size", "seq_len", "image_size")


def input_axes(entry: dict) -> tuple[str, ...]:
    """The axes a model's input has: its source's, else a batch, and an image's size or a text's sequence."""
    source = sources.REGISTRY.find(entry.get("source"))
    if source is not None and source.input_axes is not None:
        return source.input_axes
    return ("batch_size", "seq_len") if entry.get("task") in TEXT_TASKS else ("batch_size", "image_size")


def check_dynamic_axes(name: str, entry: dict, config: dict) -> None:
    """A mode's `mark_dynamic` names axes the model's input has: on another model it would mark another dimension."""
    defined = config["mode_definitions"]
    for mode in model_modes(config, name):
        axes = ((defined.get(mode) or {}).get("compile") or {}).get("mark_dynamic") or []
        for axis in axes:
            if axis not in input_axes(entry):
                model = config_name(name, entry)
                raise ConfigError(
                    f"Config key `mode_definitions.{mode}.compile.mark_dynamic` names {axis!r}, which the input of "
                    f"`models.{model}` (a {entry.get('task', 'image-classification')} model, which runs {mode}) does "
                    f"not have: expected axes of its input ({', '.join(input_axes(entry))}), or a `modes` list for "
                    "the model without that mode."
                )


def sweep_axis_missing(entry: dict, key: str) -> str | None:
    """Why model `entry` has no input axis that sweep key `key` would change, or None when it has one."""
    task = entry.get("task", "image-classification")
    source = sources.REGISTRY.find(entry.get("source"))
    if key in INPUT_AXES and key not in input_axes(entry) and source is not None and source.input_axes is not None:
        reached = ", ".join(source.input_axes)
        return f"a {source.name} model's input is its own; of the input axes only {reached} reaches it"
    if key == "seq_len" and task not in TEXT_TASKS:
        return f"a {task} model has no sequence axis"
    if key == "seq_len" and entry.get("prompt"):
        return "its `prompt` sets the sequence, whatever seq_len says"
    if key == "image_size" and task != "image-classification":
        return f"a {task} model takes no image"
    if key == "image_size" and source is not None and source.image_size_from_config:
        return f"a {source.name} vision model takes its image size from `{source.image_size_key}`"
    if key == "new_tokens" and task != "text-generation":
        return f"a {task} model generates no tokens"
    from_config = source is not None and source.built_from_config and entry.get("weights", "random") == "random"
    if key in CONFIG_SWEEP_KEYS and not from_config:
        return f"`{key}` is set in a transformers model's `config`, which only a model with random weights builds from"
    return None


def check_sweep_axis(name: str, entry: dict, key: str) -> None:
    if why := sweep_axis_missing(entry, key):
        allowed = [k for k in SWEEP_KEYS if sweep_axis_missing(entry, k) is None]
        raise ConfigError(
            f"Config key `models.{name}.sweep.{key}` sweeps a setting that changes nothing for this model ({why}), "
            f"so its points would be identical experiments: expected a sweep over {', '.join(allowed)}."
        )


def check_mode_definitions(defined: dict) -> None:
    for name, definition in defined.items():
        key = f"mode_definitions.{name}"
        if name in modes.BUILTIN_MODES:
            raise ConfigError(
                f"Config key `{key}` redefines the built-in mode {name!r}: give your definition another name "
                f"(built-in modes: {', '.join(modes.MODE_NAMES)})."
            )
        quantize = definition.get("quantize")
        quantizable = kinds.names(lambda kind: kind.quantizable)
        if quantize and definition["kind"] not in quantizable:
            raise ConfigError(
                f"Config key `{key}.quantize` applies to a mode of kind {definition['kind']!r}: expected quantization "
                f"on a mode of kind {' or '.join(quantizable)} (torchao quantizes the module they run)."
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
        others = [k for k in kinds.names() if k in definition and k != definition["kind"]]
        if others:
            raise ConfigError(
                f"Config key `{key}.{others[0]}` does not apply to a mode of kind {definition['kind']!r}: "
                f"expected settings under `{key}.{definition['kind']}` only."
            )


TRAINING_ONLY_SETTINGS = ("scope", "optimizer", "autograd")


def check_training(config: dict) -> None:
    """Before expansion: a model's training step runs eager and compile modes without quantization; a mode that sets
    how a step is compiled runs training steps only."""
    defined = modes.definitions(config)
    for name, entry in config["models"].items():
        for mode in model_modes(config, name):
            step_settings = [k for k in TRAINING_ONLY_SETTINGS if k in (defined.get(mode, {}).get("compile") or {})]
            if step_settings:
                raise ConfigError(
                    f"Config key `mode_definitions.{mode}.compile.{step_settings[0]}` sets how a training step is "
                    f"compiled, but `models.{name}` runs {mode!r} for inference: expected the mode in a model's "
                    "`train.modes` only."
                )
        if "train" not in entry:
            continue
        given = "modes" in entry["train"]
        names = entry["train"]["modes"] if given else model_modes(config, name)
        for i, mode in enumerate(names):
            definition = defined.get(mode)
            if definition is None:
                continue  # an unknown name is reported by check_mode_names
            if not kinds.get(definition["kind"]).trains or definition.get("quantize"):
                what = "quantized" if definition.get("quantize") else f"of kind {definition['kind']}"
                key = f"models.{name}.train.modes.{i}" if given else f"models.{name}.modes.{i}"
                raise ConfigError(
                    f"Config key `{key}` gives the training step the mode {mode!r}, which is {what}: a training step "
                    "runs eager and torch.compile modes (TorchScript, AOTInductor packages, ONNX Runtime and OpenVINO "
                    "serve inference, and "
                    f"quantized weights do not train); expected `models.{name}.train.modes` listing eager and compile "
                    "modes only."
                )


def check_torchao(config: dict) -> None:
    """A quantized mode needs torchao where it runs: checked here for this Python; a platform with its own Python
    environment is checked in that interpreter by its mode check."""
    defined = config["mode_definitions"]
    used = {*config["modes"], *(m for model in config["models"].values() for m in model.get("modes", []))}
    quantized = sorted(name for name in used if (defined.get(name) or {}).get("quantize"))
    here = [name for name, entry in config["hardware"].items() if not entry.get("python_env")]
    if quantized and here and modes.package_missing("torchao"):
        raise ConfigError(
            f"Config key `mode_definitions.{quantized[0]}.quantize` asks for torchao quantization, but torchao is not "
            f"installed in this Python, which runs hardware {', '.join(here)}: expected torchao, installed with "
            f"`{modes.TORCHAO_INSTALL}` (or `pip install torchao`)."
        )


def check_mode_names(key: str, names: list[str], config: dict) -> None:
    known = modes.definitions(config)
    for i, name in enumerate(names):
        if name not in known:
            defined = ", ".join(config["mode_definitions"]) or "none"
            raise ConfigError(
                f"Config key `{key}.{i}` is {name!r}, which is neither a built-in mode ({', '.join(modes.MODE_NAMES)}) "
                f"nor defined under `mode_definitions` ({defined})."
            )


def check_model(name: str, model: dict, assets: dict) -> None:
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
    source = sources.get(model["source"])
    foreign = [k for k in model if k not in source.schema and any(k in other.schema for other in _sources())]
    if foreign:
        raise ConfigError(
            f"Config key `{key}.{foreign[0]}` does not apply to a model of source {source.name}: expected it only "
            f"with the source that reads it ({', '.join(s.name for s in _sources() if foreign[0] in s.schema)})."
        )
    if model["task"] not in source.tasks:
        raise ConfigError(
            f"Config key `{key}.task` is {model['task']!r}, but {source.name} models here are "
            f"{' or '.join(source.tasks)} models: expected {' or '.join(source.tasks)}."
        )
    weights = model["weights"]
    if weights not in ("random", "pretrained"):
        source.check_weights(f"{key}.weights", weights)
    if weights == "pretrained" and source.pretrained_from_hub:
        for field in ("hub_id", "revision"):
            if field not in model:
                raise ConfigError(
                    f"Config key `{key}.{field}` is missing: pretrained transformers weights need "
                    "`hub_id` and a pinned `revision` so that a rerun loads the same weights."
                )


def _sources() -> list:
    return [sources.get(name) for name in sources.names()]


def complete_sources(models: dict) -> None:
    """Each model entry checked and completed by its source (`Source.complete`); every entry then names its
    `arch`, and sets no input its task does not read."""
    for name, entry in models.items():
        sources.get(entry["source"]).complete(name, entry)
        if "arch" not in entry:
            raise ConfigError(
                f"Config key `models.{name}.arch` is missing: expected {sources.get(entry['source']).description}."
            )
        task = entry.get("task", "image-classification")
        if entry.get("prompt") is not None and task not in TEXT_TASKS:
            raise ConfigError(
                f"Config key `models.{name}.prompt` is set, but a model with task {task} reads no text: expected "
                f"`prompt` only on a model whose task is one of {', '.join(TEXT_TASKS)}; remove it."
            )


def _check_image(key: str, path: str) -> None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            image.verify()
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise ConfigError(f"Config key `{key}` names {path!r}, which is not a readable image: {exc}.") from None


def _compiling_anywhere(config: dict) -> list[str]:
    """The compiling modes some model that is not a stream runs."""
    definitions = modes.definitions(config)
    return [
        mode
        for name, model in config["models"].items()
        if not model.get("stream")
        for mode in model_modes(config, name)
        if mode in definitions and kinds.get(definitions[mode]["kind"]).starts
    ]


def _check_context(key: str, model: dict) -> None:
    """Synthetic token ids plus new tokens must fit the context the architecture's config gives."""
    context = model.get("config", {}).get("max_position_embeddings")
    synthetic = model["weights"] == "random" and not model.get("prompt")
    from_config = sources.get(model["source"]).built_from_config
    if not from_config or model["task"] == "image-classification" or context is None or not synthetic:
        return
    needed = model["seq_len"] + (model["new_tokens"] if model["task"] == "text-generation" else 0)
    if needed > context:
        raise ConfigError(
            f"Config key `{key}.seq_len` is {model['seq_len']}, which with new_tokens needs {needed} positions, but "
            f"`{key}.config.max_position_embeddings` is {context}: expected at most {context} positions in all."
        )


def check_starts(key: str, measure: dict, config: dict, model: str | None = None) -> None:
    """`measure.starts` asks starts that will run: a mapping names compiling modes (of the model, where it is the
    model's), and a list reaches at least one compiling mode of a model that is not a stream."""
    starts = measure.get("starts")
    if not starts:
        return
    definitions = modes.definitions(config)
    known = model_modes(config, model) if model else config["modes"]
    compiling = [m for m in known if kinds.get(definitions[m]["kind"]).starts]
    if model and config["models"][model].get("stream"):
        raise ConfigError(
            f"Config key `{key}.starts` asks starts of a model with a `stream`, whose calls are a sequence of shapes "
            "with no one first output to time: expected no starts on this model (measure them on a model entry "
            "without a stream)."
        )
    if not isinstance(starts, dict):
        reached = compiling if model else _compiling_anywhere(config)
        if not reached:
            where = "the model's modes" if model else "any model's modes (streams take no starts)"
            raise ConfigError(
                f"Config key `{key}.starts` asks {', '.join(starts)} starts, but no mode among {where} compiles, so "
                f"no start would run: expected a compiling mode ({', '.join(kinds.names(lambda kind: kind.starts))} "
                "kind) beside it, or no starts."
            )
        return
    for mode in starts:
        if mode not in compiling:
            what = "a mode that does not compile" if mode in known else f"no mode {'of the model' if model else 'run'}"
            raise ConfigError(
                f"Config key `{key}.starts.{mode}` names {what}: expected one of the compiling modes "
                f"{', '.join(compiling) or '(none)'}, each with a list of start paths."
            )
