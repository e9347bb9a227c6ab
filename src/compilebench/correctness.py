"""Compare a mode's output with the eager float32 reference of the same model and input."""

from __future__ import annotations

import torch

from .thresholds import COSINE_MIN, FLOAT32_REL_TOL


def compare(reference: torch.Tensor, output: torch.Tensor, dtype: str) -> dict:
    """Pass: cosine >= 0.99; in float32 also max |error| <= 1e-3 x max(1, max |reference|)."""
    ref = reference.detach().float().cpu()
    out = output.detach().float().cpu()
    if ref.shape != out.shape:
        return {"passed": False, "reason": f"shape {tuple(out.shape)} differs from reference {tuple(ref.shape)}"}
    max_abs_err = float((ref - out).abs().max())
    cosine = float(torch.nn.functional.cosine_similarity(ref.flatten(), out.flatten(), dim=0, eps=1e-12))
    tolerance = FLOAT32_REL_TOL * max(1.0, float(ref.abs().max())) if dtype == "float32" else None
    passed = cosine >= COSINE_MIN and (tolerance is None or max_abs_err <= tolerance)
    top1 = float((ref.argmax(-1) == out.argmax(-1)).float().mean())
    return {
        "passed": bool(passed),
        "max_abs_err": max_abs_err,
        "cosine": cosine,
        "top1_agreement": top1,
        "criterion": f"cosine >= {COSINE_MIN}" + (f" and max_abs_err <= {tolerance:.3g}" if tolerance else ""),
    }


def compare_tokens(reference_ids: torch.Tensor, generated_ids: torch.Tensor) -> dict:
    ref, gen = reference_ids.cpu(), generated_ids.cpu()
    agreement = float((ref == gen).float().mean()) if ref.shape == gen.shape else 0.0
    return {"tokens_match": bool(torch.equal(ref, gen)), "token_agreement": agreement}


def top5(logits: torch.Tensor, labels: list[str]) -> list[dict]:
    """Top-5 classes of the first batch item."""
    probs = torch.softmax(logits.detach().float()[0], dim=-1)
    values, indices = probs.topk(min(5, probs.numel()))
    names = [labels[i] if i < len(labels) else str(i) for i in indices.tolist()]
    return [{"label": n, "index": i, "prob": float(v)} for n, i, v in zip(names, indices.tolist(), values)]
