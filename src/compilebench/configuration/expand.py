"""Sweeps and streams expanded into the experiments they stand for, each point named after its values."""

from __future__ import annotations

import itertools
import re

from ..core.errors import ConfigError, UserError  # noqa: F401  (UserError: the base callers catch)
from ..core.records import CONFIG_SWEEP_KEYS, SWEEP_KEYS
from .schema import check_sweep_axis, config_name, sweep_axis_missing

# Sweep keys in the order a point's name lists them, with the short form the name uses.
SWEEP_NAMES = {
    "batch_size": "bs", "image_size": "img", "seq_len": "seq", "new_tokens": "new", "dtype": "",
    "num_hidden_layers": "L",
}  # fmt: skip


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
            check_sweep_axis(name, entry, key)
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


def expand_training(models: dict) -> dict:
    """Each model with `train` is measured as before, and its training step as the entry `MODEL.train` (a sweep's
    points each have theirs), with the training batch and the training modes; the inference entry keeps no trace
    of it, so its fingerprint stays what it was."""
    expanded = {}
    for name, entry in models.items():
        if "train" not in entry:
            expanded[name] = entry
            continue
        key = f"models.{config_name(name, entry)}.train"
        if entry.get("stream"):
            raise ConfigError(
                f"Config key `{key}` is set on a model with a `stream`: expected training on a model entry without "
                "a stream (a training step runs one batch shape)."
            )
        train_name = f"{name}.train"
        if not NAME_PATTERN.match(train_name):
            raise ConfigError(
                f"Config key `{key}` is measured as {train_name!r}, which is longer than 64 characters: give the "
                "model a shorter name."
            )
        if train_name in models:
            raise ConfigError(
                f"Config key `{key}` is measured as {train_name!r}, which another model entry already names: rename "
                "one of them."
            )
        train = dict(entry["train"])
        inference = {k: v for k, v in entry.items() if k != "train"}
        # A sweep point's training step is its own experiment, not a point of the sweep's scaling.
        training = {k: v for k, v in inference.items() if k not in ("sweep_of", "swept")}
        training["train_of"] = config_name(name, entry)
        if "measure" in entry:  # starts time a first inference output: the training step has none
            training["measure"] = {k: v for k, v in entry["measure"].items() if k not in ("starts", "start_repeats")}
        training["batch_size"] = train.pop("batch_size", entry.get("batch_size", 1))
        if "modes" in train:
            training["modes"] = train.pop("modes")
        training["train"] = train
        expanded[name] = inference
        expanded[train_name] = training
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
    if why := sweep_axis_missing(entry, axis):
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
