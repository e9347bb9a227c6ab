"""A mode kind and a model source from outside the package, as a user's plugin adds them: the declarations and
their worker implementations in this one module, registered on import (`COMPILEBENCH_PLUGINS=toy_plugin`).

The kind, `channels-last`, runs the module eager with its weights and inputs in channels-last memory format; the
source, `toy`, builds a two-layer convolutional classifier named by its width."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from compilebench.core import kinds, sources
from compilebench.core.kinds.base import settings_schema


@dataclasses.dataclass(frozen=True)
class ChannelsLastSettings(kinds.ModeSettings):
    kind: ClassVar[str] = "channels-last"
    contiguous_inputs: bool = True


class ChannelsLast(kinds.Kind):
    name = "channels-last"
    settings = ChannelsLastSettings
    defaults = {"contiguous_inputs": True}
    schema = settings_schema(
        "the toy kind's settings",
        contiguous_inputs={"type": "boolean", "description": "inputs made channels-last contiguous, true or false"},
    )
    description = "eager in channels-last memory format"
    implementation = __name__


class Toy(sources.Source):
    name = "toy"
    description = "a toy convolutional classifier: `narrow` or `wide`"
    tasks = ("image-classification",)
    implementation = __name__


WIDTHS = {"narrow": 4, "wide": 16}

for registry, declared in ((kinds, ChannelsLast()), (sources, Toy())):
    if declared.name not in registry.names():
        registry.register(declared)


# The worker's side: torch is imported only when a worker builds or wraps.


def wrap(module, settings, inputs, **_):
    import torch

    module = module.to(memory_format=torch.channels_last)

    def call(*args):
        if settings.contiguous_inputs:
            args = tuple(a.contiguous(memory_format=torch.channels_last) for a in args)
        return module(*args)

    return call, {}


def meta_model(name, spec):
    from torch import nn

    width = WIDTHS[spec.arch]
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10)
    ).eval()


def meta_inputs(model, spec):
    import torch

    return model, (torch.empty(spec.batch_size, 3, spec.image_size, spec.image_size),)


def inputs(built, name, spec, seed):
    from compilebench.worker.sources.base import image_input

    return (image_input(name, spec, spec.image_size, seed),)


def build(name, spec, seed):
    from compilebench.worker.sources.base import BuiltModel

    return BuiltModel(name, spec.task, meta_model(name, spec), inputs(None, name, spec, seed))
