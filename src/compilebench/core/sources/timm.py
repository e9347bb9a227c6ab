"""timm: an image model by its timm name (`timm.create_model`), random weights unless `weights` names a state dict,
at the input size the model declares (or `config.img_size`, which timm's ViTs take)."""

from __future__ import annotations

from .base import Source


class Timm(Source):
    name = "timm"
    description = "a timm model name (timm.list_models(); its test_* models are made for small runs)"
    arch_words = "model"
    listing = "import timm; names = timm.list_models()"
    tasks = ("image-classification",)
    image_size_from_config = True
    image_size_key = "config.img_size"
    install = 'pip install -e ".[timm]"'


SOURCE = Timm()
