"""YAML read as compilebench's configs are: duplicate keys refused, errors naming the file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..core.errors import ConfigError, UserError  # noqa: F401  (UserError: the base callers catch)

MERGE_TAG = "tag:yaml.org,2002:merge"


class _UniqueKeys(yaml.SafeLoader):
    """YAML that refuses a key given twice in one mapping, where plain YAML keeps the later value silently."""

    def construct_mapping(self, node, deep=False):
        lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:  # `<<: *defaults`: merged keys may be given again, to override them
                continue
            key = self.construct_object(key_node, deep=True)
            if key in lines and key != "<<":
                raise yaml.constructor.ConstructorError(
                    problem=f"key `{key}` is given twice, at lines {lines[key]} and {key_node.start_mark.line + 1}: "
                    "expected each key once (YAML would keep the later value and drop the other silently)",
                    problem_mark=key_node.start_mark,
                )
            lines[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


# A config expands to far fewer values than this; YAML aliases nested a few levels deep (an "alias bomb") reach
# hundreds of millions, which any walk over the config would take minutes to visit.
MAX_EXPANDED_VALUES = 1_000_000


def check_expanded_size(config: Any, source: str) -> None:
    """Refuse a config whose YAML aliases expand past MAX_EXPANDED_VALUES, counted without expanding them (each
    shared value is counted once and its size reused)."""
    sizes: dict[int, int] = {}

    def size(value: Any) -> int:
        if not isinstance(value, dict | list):
            return 1
        if id(value) not in sizes:
            children = value.values() if isinstance(value, dict) else value
            sizes[id(value)] = min(1 + sum(size(child) for child in children), MAX_EXPANDED_VALUES + 1)
        return sizes[id(value)]

    if size(config) > MAX_EXPANDED_VALUES:
        raise ConfigError(
            f"{source} expands to more than {MAX_EXPANDED_VALUES:,} values through its YAML aliases (& and *): "
            "expected a config whose aliases repeat a few settings, not one that nests them into millions."
        )


def read_yaml(path: str | Path) -> dict:
    """A config file's mapping, or one paragraph naming the file and the line where its YAML breaks."""
    path = Path(path)
    try:
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeys) or {}
    except FileNotFoundError:
        raise ConfigError(f"Config file {path} does not exist.") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"Config file {path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}): "
            "save it as UTF-8, the encoding YAML configs are read in."
        ) from None
    except RecursionError:
        raise ConfigError(
            f"Config file {path} nests its mappings or lists too deeply to read: expected a config a few levels "
            "deep (models, their settings, their values)."
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"Config file {path} is not valid YAML{_yaml_problem(exc)}.") from None
    if not isinstance(config, dict):
        raise ConfigError(f"Config file {path} must hold a mapping of keys, not {type(config).__name__}.")
    check_expanded_size(config, f"Config file {path}")
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
