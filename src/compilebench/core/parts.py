"""Frozen records with a JSON form, the pieces an experiment is made of: each field as its JSON, parts as theirs,
unset optional keys left out, dicts with sorted keys. Torch-free."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def optional(part: type | None = None) -> Any:
    """A key the JSON form holds only when it is set."""
    return field(default=None, metadata={"optional": True, "part": part})


def part(part: type) -> Any:
    return field(metadata={"part": part})


class Part:
    """A frozen record with a JSON form: its fields, parts as their own JSON, unset optional keys left out."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]):
        return cls._read(data)

    @classmethod
    def _read(cls, data: Mapping[str, Any]):
        known = {f.name: f for f in dataclasses.fields(cls) if f.init}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"{cls.__name__} has no key {', '.join(unknown)}: expected {', '.join(sorted(known))}")
        values = {}
        for name, value in data.items():
            part = known[name].metadata.get("part")
            values[name] = part.from_json(value) if part is not None and value is not None else copy.deepcopy(value)
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("optional"):
                continue
            out[f.name] = value.to_json() if isinstance(value, Part) else copy.deepcopy(value)
        return canonical(out)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def canonical(value: Any) -> Any:
    """Dicts with sorted keys, all the way down: Snakemake compares params as text, and key order is no change."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


@dataclass(frozen=True)
class Quantize(Part):
    """A quantized mode's torchao settings, `min_cosine` filled in."""

    method: str
    min_cosine: float
    group_size: int | None = optional()
