"""Greedy text generation with a static KV cache, timed per token."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from .timing import Clock


@dataclass
class Generation:
    tokens: torch.Tensor  # (batch, new_tokens)
    prefill_logits: torch.Tensor  # logits of the last prompt position
    token_ms: list[float]  # per new token; the first includes the prefill (time to first token)


class GreedyGenerator:
    """A fixed number of new tokens (min = max), one `step` call per token.

    `step` is the model's forward, eager or compiled; the cache is static so
    that a compiled decode step keeps one shape and never recompiles.
    """

    def __init__(self, model: nn.Module, step: Callable, prompt: torch.Tensor, new_tokens: int, clock: Clock):
        from transformers import StaticCache

        self.step, self.prompt, self.new_tokens, self.clock = step, prompt, new_tokens, clock
        self.cache_keyword = _cache_keyword(model)
        self.cache = StaticCache(config=model.config, max_cache_len=prompt.shape[1] + new_tokens)
        self.cache_position = torch.arange(prompt.shape[1] + new_tokens, device=prompt.device)
        self.history: list[Generation] = []
        # The cache allocates lazily on its first update; allocate it now, eagerly, so that a
        # compiled step never sees two cache states (which would cost a recompile).
        model(
            input_ids=prompt[:, :1],
            **{self.cache_keyword: self.cache},
            cache_position=self.cache_position[:1],
            use_cache=True,
        )

    def __call__(self) -> Generation:
        self.cache.reset()
        prompt_len = self.prompt.shape[1]
        token_ms: list[float] = []
        begin = time.perf_counter_ns()
        logits = self._logits(self.prompt, self.cache_position[:prompt_len])
        prefill_logits = logits[:, -1].clone()
        token = logits[:, -1].argmax(-1, keepdim=True)
        tokens = [token]
        begin = self._lap(begin, token_ms)
        for i in range(1, self.new_tokens):
            position = self.cache_position[prompt_len + i - 1 : prompt_len + i]
            token = self._logits(token, position)[:, -1].argmax(-1, keepdim=True)
            tokens.append(token)
            begin = self._lap(begin, token_ms)
        generation = Generation(torch.cat(tokens, dim=1), prefill_logits, token_ms)
        self.history.append(generation)
        return generation

    def _logits(self, ids: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        out = self.step(input_ids=ids, **{self.cache_keyword: self.cache}, cache_position=position, use_cache=True)
        return out.logits

    def _lap(self, begin: int, token_ms: list[float]) -> int:
        self.clock.sync()
        now = time.perf_counter_ns()
        token_ms.append((now - begin) / 1e6)
        return now


def _cache_keyword(model: nn.Module) -> str:
    """transformers 5 names the KV cache argument `cache`; earlier releases `past_key_values`."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
