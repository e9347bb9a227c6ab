"""torchvision's classification models: random weights, torchvision's pretrained file, or a state dict."""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from torch import nn

from ...core.layout import WEIGHTS_DIR
from .base import BuiltModel, ModelError, image_input, tensors_only

log = logging.getLogger(__name__)


def build(name: str, spec, seed: int) -> BuiltModel:
    return BuiltModel(name, spec.task, module(name, spec), inputs(None, name, spec, seed))


def inputs(built: BuiltModel | None, name: str, spec, seed: int) -> tuple[torch.Tensor, ...]:
    return (image_input(name, spec, spec.image_size, seed),)


def meta_model(name: str, spec) -> nn.Module:
    return module(name, spec.replace(weights="random")).eval()


def meta_inputs(model: nn.Module, spec) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    return model, (torch.empty(spec.batch_size, 3, spec.image_size, spec.image_size),)


def module(name: str, spec) -> nn.Module:
    import torchvision

    arch, weights = spec.arch, spec.weights
    if arch not in torchvision.models.list_models(module=torchvision.models):
        raise ModelError(
            f"Config key `models.{name}.arch` is {arch!r}, which torchvision cannot build: expected a "
            "classification model name such as resnet18, resnet50, resnet152 or vit_b_16."
        )
    if weights == "random":
        return torchvision.models.get_model(arch, weights=None, **(spec.config or {}))
    if weights == "pretrained":
        torch.hub.set_dir(str(WEIGHTS_DIR / "torchvision"))
        return torchvision.models.get_model(arch, weights="DEFAULT")
    model = torchvision.models.get_model(arch, weights=None, **(spec.config or {}))
    path = Path(weights)
    model.load_state_dict(tensors_only(path / "state_dict.pt" if path.is_dir() else path, name))
    log.info("loaded %s weights from %s", arch, weights)
    return model
