"""YAML read as compilebench's configs are: duplicate keys refused, errors naming the file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..core.errors import ConfigError, UserError  # noqa: F401  (UserError: the base callers catch)


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
