"""transformers: an architecture with its task's head, random from its `config`, pretrained from the hub at a pinned
revision, or a save_pretrained folder; its logits returned as a plain tensor."""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from torch import nn

from ...core.layout import WEIGHTS_DIR
from ...core.sources.transformers import AUTO_CLASSES
from .base import BuiltModel, LogitsOnly, ModelError, image_input

log = logging.getLogger(__name__)


def build(name: str, spec, seed: int) -> BuiltModel:
    model, tokenizer = _model(name, spec)
    task = spec.task
    if task == "image-classification":
        return BuiltModel(name, task, LogitsOnly(model, "pixel_values"), inputs_of(model, name, spec, tokenizer, seed))
    built = BuiltModel(name, task, LogitsOnly(model, "input_ids"), inputs_of(model, name, spec, tokenizer, seed))
    if task == "text-generation":
        built.causal_lm = model
        built.extra["tokenizer"] = tokenizer
    return built


def inputs(built: BuiltModel, name: str, spec, seed: int) -> tuple[torch.Tensor, ...]:
    return inputs_of(built.module.model, name, spec, None, seed)


def inputs_of(model: nn.Module, name: str, spec, tokenizer, seed: int) -> tuple[torch.Tensor, ...]:
    if spec.task == "image-classification":
        return (image_input(name, spec, _image_side(model, spec), seed),)
    return (_token_ids(name, spec, model.config, tokenizer, seed),)


def meta_model(name: str, spec) -> nn.Module:
    return _model(name, spec)[0].eval()


def meta_inputs(model: nn.Module, spec) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    batch = spec.batch_size
    if spec.task == "image-classification":
        size = _image_side(model, spec)
        return LogitsOnly(model, "pixel_values"), (torch.empty(batch, 3, size, size),)
    return LogitsOnly(model, "input_ids"), (torch.zeros(batch, spec.seq_len, dtype=torch.long),)


def architecture(name: str, spec) -> nn.Module | None:
    """A checkpoint's modules from its config alone; None for pretrained weights not downloaded yet."""
    import transformers

    if spec.weights == "random":
        with torch.device("meta"):
            return meta_model(name, spec)
    if not Path(spec.weights).exists():
        return None
    auto = getattr(transformers, AUTO_CLASSES[spec.task])
    with torch.device("meta"):
        return auto.from_config(transformers.AutoConfig.from_pretrained(spec.weights)).eval()


def _image_side(model: nn.Module, spec) -> int:
    """A transformers vision model's input side: its own config's, which `image_size` cannot override."""
    return getattr(model.config, "image_size", spec.image_size)


def _model(name: str, spec):
    import transformers

    auto = getattr(transformers, AUTO_CLASSES[spec.task])
    weights = spec.weights
    if weights == "random":
        try:
            config = transformers.AutoConfig.for_model(spec.arch, **(spec.config or {}))
        except ValueError as exc:
            raise ModelError(
                f"Config key `models.{name}.arch` is {spec.arch!r}, which transformers does not "
                f"know as a model_type ({exc})."
            ) from None
        return auto.from_config(config), None
    source, kwargs = weights, {}
    if weights == "pretrained":
        source = spec.hub_id
        kwargs = {"revision": spec.revision, "cache_dir": str(WEIGHTS_DIR / "huggingface")}
    model = auto.from_pretrained(source, trust_remote_code=False, **kwargs)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, trust_remote_code=False, **kwargs)
    except (OSError, ValueError):
        tokenizer = None
    log.info("loaded %s from %s", spec.arch, source)
    return model, tokenizer


def _token_ids(name: str, spec, config, tokenizer, seed: int) -> torch.Tensor:
    batch = spec.batch_size
    context = getattr(config, "max_position_embeddings", None)
    if spec.prompt:
        if tokenizer is None:
            raise ModelError(
                f"Config key `models.{name}.prompt` needs a tokenizer, but the model's weights "
                f"({spec.weights}) come without one: use pretrained or saved weights, or drop the prompt."
            )
        ids = tokenizer(spec.prompt, return_tensors="pt")["input_ids"]
    else:
        generator = torch.Generator().manual_seed(seed)
        vocab = config.vocab_size
        low = min(5, vocab - 1)  # keep clear of special tokens at the start of small vocabularies
        ids = torch.randint(low, vocab, (1, spec.seq_len), generator=generator, device="cpu")
    needed = ids.shape[1] + (spec.new_tokens if spec.task == "text-generation" else 0)
    if context is not None and needed > context:
        raise ModelError(
            f"Config key `models.{name}`: the input needs {needed} positions (prompt or seq_len plus "
            f"new_tokens) but the model's context is {context}: expected a shorter input."
        )
    return ids.expand(batch, -1).contiguous()
