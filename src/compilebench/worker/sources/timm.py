"""timm's image models, built offline: random weights, or a state dict; the input at the size the model declares."""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from torch import nn

from ...core.errors import Unsupported
from ...core.sources.timm import SOURCE
from .base import BuiltModel, ModelError, image_input, tensors_only

log = logging.getLogger(__name__)


def build(name: str, spec, seed: int) -> BuiltModel:
    model = module(name, spec)
    return BuiltModel(name, spec.task, model, inputs_of(model, name, spec, seed))


def inputs(built: BuiltModel, name: str, spec, seed: int) -> tuple[torch.Tensor, ...]:
    return inputs_of(built.module, name, spec, seed)


def inputs_of(model: nn.Module, name: str, spec, seed: int) -> tuple[torch.Tensor, ...]:
    return (image_input(name, spec, image_side(model, spec), seed),)


def meta_model(name: str, spec) -> nn.Module:
    return module(name, spec.replace(weights="random"))


def meta_inputs(model: nn.Module, spec) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    side = image_side(model, spec)
    return model, (torch.empty(spec.batch_size, 3, side, side),)


def image_side(model: nn.Module, spec) -> int:
    """The side the model is built for: `config.img_size`, else what its pretrained config declares, else
    `image_size`."""
    config = spec.config or {}
    if "img_size" in config:
        return int(config["img_size"])
    declared = (getattr(model, "pretrained_cfg", None) or {}).get("input_size")
    return int(declared[-1]) if declared else spec.image_size


def module(name: str, spec) -> nn.Module:
    try:
        import timm
    except ImportError:
        raise Unsupported(f"timm is not installed in this Python: install it with {SOURCE.install}") from None
    if not timm.is_model(spec.arch):
        raise ModelError(
            f"Config key `models.{name}.arch` is {spec.arch!r}, which timm {timm.__version__} cannot build: expected "
            "a name timm.list_models() lists, such as test_vit or resnet18."
        )
    model = timm.create_model(spec.arch, pretrained=False, **(spec.config or {}))
    if spec.weights not in ("random", "pretrained"):
        path = Path(spec.weights)
        model.load_state_dict(tensors_only(path / "state_dict.pt" if path.is_dir() else path, name))
        log.info("loaded %s weights from %s", spec.arch, spec.weights)
    return model.eval()
