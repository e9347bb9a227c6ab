"""Eager: the model as PyTorch runs it, the yardstick every other kind is set against."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from .base import Kind, ModeSettings


@dataclasses.dataclass(frozen=True)
class EagerSettings(ModeSettings):
    kind: ClassVar[str] = "eager"


class Eager(Kind):
    name = "eager"
    settings = EagerSettings
    description = "the model as PyTorch runs it"
    quantizable = True
    trains = True
    streams = True


KIND = Eager()
