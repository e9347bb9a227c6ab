"""torchvision: its classification models by name, random, pretrained (torchvision's own file) or a state dict."""

from __future__ import annotations

from .base import Source


class Torchvision(Source):
    name = "torchvision"
    description = "a torchvision model name"
    arch_words = "classification model"
    listing = "import torchvision.models as m; names = m.list_models(module=m)"
    tasks = ("image-classification",)


SOURCE = Torchvision()
