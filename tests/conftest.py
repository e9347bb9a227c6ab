"""Shared fixtures: tiny model entries and configs the tests build on."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ASSETS_MIRROR = ROOT.parent / "shared" / "assets"

# Tests that do not measure compile time share one inductor cache, to keep CI quick.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path.home() / ".cache" / "compilebench-tests-inductor"))

TINY_MODELS = {
    "resnet": {"source": "torchvision", "arch": "resnet18", "image_size": 32, "config": {"num_classes": 10}},
    "vit": {
        "source": "transformers",
        "arch": "vit",
        "config": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64, "image_size": 32, "patch_size": 8, "num_labels": 10},
    },
    "llama": {
        "source": "transformers",
        "arch": "llama",
        "task": "text-generation",
        "config": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 64},
        "seq_len": 8,
        "new_tokens": 4,
    },
    "distilbert": {
        "source": "transformers",
        "arch": "distilbert",
        "task": "text-classification",
        "config": {"dim": 32, "hidden_dim": 64, "n_layers": 2, "n_heads": 2, "vocab_size": 128, "max_position_embeddings": 64},
        "seq_len": 16,
    },
}

FAST_MEASURE = {"warmup": 1, "iterations": 4, "min_time_s": 0, "interleave_block": 2, "bootstrap_resamples": 200, "private_cache": False}


def tiny_config(models: dict | None = None, **overrides) -> dict:
    """A raw (unvalidated) config with tiny models and quick measurement settings."""
    config = {
        "modes": ["eager", "jit", "compile-default", "compile-reduce-overhead", "compile-max-autotune"],
        "measure": dict(FAST_MEASURE),
        "models": copy.deepcopy(models if models is not None else TINY_MODELS),
        "hardware": {"cpu": {"device": "cpu"}},
    }
    config.update(overrides)
    return config


def word_tokenizer(vocab_size: int):
    """A word-level tokenizer for tiny saved models: a few real words, then filler up to `vocab_size`."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "is", "a", "samoyed"]
    vocab = {w: i for i, w in enumerate(words + [f"w{i}" for i in range(vocab_size - len(words))])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]", mask_token="[MASK]")


@pytest.fixture
def config_file(tmp_path):
    """Write a config dict as YAML and return its path."""
    import yaml

    def write(config: dict, name: str = "config.yaml") -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(config))
        return path

    return write
