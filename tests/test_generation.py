"""The engine's greedy generator produces what transformers' own generate produces."""

import torch
from helpers import TINY_MODELS

from compilebench.worker.generation import GreedyGenerator
from compilebench.worker.timing import Clock


def test_greedy_tokens_match_transformers_generate():
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model("llama", **TINY_MODELS["llama"]["config"])).eval()
    prompt = torch.randint(5, 256, (2, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        generation = GreedyGenerator(model, model, prompt, 12, Clock("cpu"))()
        expected = model.generate(prompt, do_sample=False, max_new_tokens=12, min_new_tokens=12)[:, 8:]
    assert torch.equal(generation.tokens, expected)
    assert len(generation.token_ms) == 12 and all(ms > 0 for ms in generation.token_ms)
