"""Compare a mode's output with the eager float32 reference of the same model and input."""

from __future__ import annotations

import torch

from ..core.thresholds import COSINE_MIN, FLOAT32_REL_TOL, FLOAT64_MULTIPLIER, FLOAT64_TOL


def compare(
    reference: torch.Tensor,
    output: torch.Tensor,
    dtype: str,
    *,
    float64: torch.Tensor | None = None,
    eager: torch.Tensor | None = None,
    float64_missing: str | None = None,
    min_cosine: float | None = None,
) -> dict:
    """Pass: cosine >= 0.99 against the eager float32 reference, and, where the model's float64 output is there,
    the mode's RMSE against it at most k x eager's own (eager in the same precision) + a small tolerance, k = 2 in
    float32 and 3 in reduced precision. Without a float64 output, in float32 max |error| <= 1e-3 x max(1, max
    |reference|) instead; `float64_missing` says why there is none. A quantized mode (`min_cosine` given) passes on
    cosine >= min_cosine alone, its errors recorded as always: quantization changes outputs by design."""
    ref = reference.detach().float().cpu()
    out = output.detach().float().cpu()
    if ref.shape != out.shape:
        return {"passed": False, "reason": f"shape {tuple(out.shape)} differs from reference {tuple(ref.shape)}"}
    max_abs_err = float((ref - out).abs().max())
    cosine = float(torch.nn.functional.cosine_similarity(ref.flatten(), out.flatten(), dim=0, eps=1e-12))
    check = {
        "max_abs_err": max_abs_err,
        "cosine": cosine,
        "top1_agreement": float((ref.argmax(-1) == out.argmax(-1)).float().mean()),
    }
    cosine_rule = f"cosine >= {COSINE_MIN}"
    if float64 is not None and eager is not None and float64.shape == out.shape:
        truth = float64.detach().double().cpu()
        multiplier = FLOAT64_MULTIPLIER["float32" if dtype == "float32" else "reduced"]
        error, eager_error = rmse(truth, out), rmse(truth, eager)
        allowed = multiplier * eager_error + FLOAT64_TOL
        passed = cosine >= COSINE_MIN and error <= allowed
        check.update(float64_rmse=error, eager_float64_rmse=eager_error, float64_multiplier=multiplier, rule="float64")
        criterion = (
            f"{cosine_rule} and RMSE against float64 <= {multiplier:g} x eager's {eager_error:.3g} + {FLOAT64_TOL:g}"
        )
    else:
        tolerance = FLOAT32_REL_TOL * max(1.0, float(ref.abs().max())) if dtype == "float32" else None
        passed = cosine >= COSINE_MIN and (tolerance is None or max_abs_err <= tolerance)
        check.update(rule="float32 reference", float64_missing=float64_missing or "no float64 output")
        criterion = cosine_rule + (f" and max_abs_err <= {tolerance:.3g}" if tolerance else "")
    if min_cosine is not None:
        passed, criterion = cosine >= min_cosine, f"quantized: cosine >= {min_cosine:g} against the float eager output"
        check["rule"] = "quantized"
    return {"passed": bool(passed), **check, "criterion": criterion}


def rmse(truth: torch.Tensor, output: torch.Tensor) -> float:
    """Root mean squared error of `output` against `truth`, in float64."""
    return float((truth.double() - output.detach().double().cpu()).square().mean().sqrt())


def compare_tokens(reference_ids: torch.Tensor, generated_ids: torch.Tensor) -> dict:
    """Whether the generated ids match eager's, the fraction that agree, and the first position that does not."""
    ref, gen = reference_ids.cpu(), generated_ids.cpu()
    if ref.shape != gen.shape:
        return {"tokens_match": False, "token_agreement": 0.0, "first_disagreement": 0}
    differs = (ref != gen).any(dim=0).nonzero()
    return {
        "tokens_match": bool(torch.equal(ref, gen)),
        "token_agreement": float((ref == gen).float().mean()),
        "first_disagreement": int(differs[0]) if len(differs) else None,
    }


def top5(logits: torch.Tensor, labels: list[str]) -> list[dict]:
    """Top-5 classes of the first batch item."""
    probs = torch.softmax(logits.detach().float()[0], dim=-1)
    values, indices = probs.topk(min(5, probs.numel()))
    names = [labels[i] if i < len(labels) else str(i) for i in indices.tolist()]
    return [{"label": n, "index": i, "prob": float(v)} for n, i, v in zip(names, indices.tolist(), values)]
