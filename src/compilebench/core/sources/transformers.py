"""transformers: an architecture by its model_type with a task's head, random from a small `config`, pretrained from
the hub at a pinned revision, or a save_pretrained folder."""

from __future__ import annotations

from ..errors import ConfigError
from .base import Source, existing_weights

# What `save_pretrained` writes beside config.json, one file or the index of a sharded checkpoint.
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
# The head each task loads.
AUTO_CLASSES = {
    "image-classification": "AutoModelForImageClassification",
    "text-classification": "AutoModelForSequenceClassification",
    "fill-mask": "AutoModelForMaskedLM",
    "text-generation": "AutoModelForCausalLM",
}


class Transformers(Source):
    name = "transformers"
    description = "a transformers model_type"
    arch_words = "model_type"
    listing = "from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES as names"
    arch_without_weights = False
    image_size_from_config = True
    built_from_config = True
    pretrained_from_hub = True

    def check_weights(self, key: str, weights: str) -> None:
        """A save_pretrained folder: config.json and the weights beside it."""
        path = existing_weights(key, weights)
        found = [name for name in WEIGHT_FILES if (path / name).is_file()]
        if not path.is_dir() or not (path / "config.json").is_file() or not found:
            raise ConfigError(
                f"Config key `{key}` names {weights!r}, which is not a save_pretrained folder: expected a directory "
                f"with config.json and one of {', '.join(WEIGHT_FILES)}."
            )


SOURCE = Transformers()
