"""What every model source's builder shares, and what a builder module holds.

A source's builder (`worker/sources/NAME.py`, beside its declaration `core/sources/NAME.py`) is a module with:

- `build(name, spec, seed) -> BuiltModel`: the module and its inputs at the spec's shapes (random weights are made
  on the device the caller has entered);
- `inputs(built, name, spec, seed) -> tuple`: the built model's inputs at another shape (a stream's);
- `meta_model(name, spec) -> nn.Module`: its architecture with random weights, built inside the meta device;
- `meta_inputs(model, spec) -> (module, inputs)`: what one forward pass of `meta_model`'s calls, on the meta device;
- `architecture(name, spec) -> nn.Module | None`: its modules on the meta device, a checkpoint's weights not read
  (optional: `meta_model` where the source's architecture needs no checkpoint).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ...core.errors import UserError


class ModelError(UserError):
    """A model entry that cannot be built; the message names the key."""


class LogitsOnly(nn.Module):
    """Return a Hugging Face model's logits as a plain tensor."""

    def __init__(self, model: nn.Module, input_name: str):
        super().__init__()
        self.model = model
        self.input_name = input_name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(**{self.input_name: x}).logits


@dataclass
class BuiltModel:
    """A built model: the module to time, its inputs, and what correctness needs."""

    name: str
    task: str
    module: nn.Module
    inputs: tuple[torch.Tensor, ...]
    labels: list[str] | None = None
    causal_lm: nn.Module | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    memory_estimate: dict[str, Any] = field(default_factory=dict)  # check_fits: what the memory guard knew


def image_input(name: str, spec, size: int, seed: int) -> torch.Tensor:
    """The model's image batch: its `image` preprocessed, or seeded noise."""
    batch = spec.batch_size
    if spec.image:
        image = load_image(name, spec.image, size)
        return image.unsqueeze(0).expand(batch, -1, -1, -1).contiguous()
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 3, size, size, generator=generator, device="cpu")


def load_image(name: str, path: str, size: int = 224) -> torch.Tensor:
    """The standard ImageNet preprocessing: resize 256, center crop 224, normalize."""
    from PIL import Image, UnidentifiedImageError
    from torchvision import transforms

    try:
        with Image.open(path) as image:
            rgb = image.convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise ModelError(
            f"Config key `models.{name}.image` names {path!r}, which is not a readable image: {exc}"
        ) from None
    resize = round(size * 256 / 224)
    preprocess = transforms.Compose(
        [
            transforms.Resize(resize),
            transforms.CenterCrop(size),
            transforms.ToTensor(),
            transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
        ]
    )
    return preprocess(rgb)


def tensors_only(path: Path, name: str) -> dict:
    """A state dict loaded as data: a checkpoint whose pickle would build other objects (and so run code) is refused."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise ModelError(
            f"Config key `models.{name}.weights` names {path}, which was refused: loading it would run code (its "
            "pickle holds objects other than tensors), and compilebench loads weights as data only. Expected a "
            "state dict of tensors, as torch.save(model.state_dict(), PATH) writes one."
        ) from None
