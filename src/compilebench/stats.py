"""Summary statistics and bootstrap intervals of timed samples."""

from __future__ import annotations

import numpy as np

from .comparisons import Timed, paired

# A mode whose interleaved median is further than this from its median timed alone is flagged.
STEADY_STATE_TOLERANCE = 0.05


def _median(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(x, axis=axis)


def _bootstrap(samples: tuple[np.ndarray, ...], statistic, resamples: int, seed: int) -> list[float]:
    if min(len(s) for s in samples) < 2:
        value = float(statistic(*samples))
        return [value, value]
    from scipy import stats  # here, not at the top: every snakemake invocation imports this module to plan

    result = stats.bootstrap(
        samples,
        statistic,
        n_resamples=resamples,
        confidence_level=0.95,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    interval = result.confidence_interval
    return [float(interval.low), float(interval.high)]


def summarize(samples_ms: list[float], *, resamples: int = 2000, seed: int = 0) -> dict:
    """mean, median, p90, p99, std, CV, min, max and a bootstrap 95% interval of the median."""
    x = np.asarray(samples_ms, dtype=float)
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    low, high = _bootstrap((x,), _median, resamples, seed)
    return {
        "n": int(len(x)),
        "median_ms": float(np.median(x)),
        "mean_ms": mean,
        "p90_ms": float(np.percentile(x, 90)),
        "p99_ms": float(np.percentile(x, 99)),
        "std_ms": std,
        "cv": std / mean if mean > 0 else 0.0,
        "min_ms": float(x.min()),
        "max_ms": float(x.max()),
        # A resampled median lies within the samples; clipping undoes the percentile's rounding.
        "ci95_ms": [max(low, float(x.min())), min(high, float(x.max()))],
    }


def calls_to_pay_off(cost_s: float, saving_ms: float) -> float:
    """Calls after which a one-off `cost_s` is earned back at `saving_ms` a call: infinite (never) when
    nothing is saved, none when nothing is spent."""
    if cost_s <= 0:
        return 0.0
    if saving_ms <= 0:
        return float("inf")
    return cost_s / (saving_ms / 1e3)


def break_even(cost_s: float, saving_ms: float, saving_ci95_ms: list[float]) -> tuple[float, list[float]]:
    """Calls to pay off `cost_s`, with the 95% interval that the saving's interval gives (the count falls as the
    saving grows, so the interval's ends swap)."""
    low_ms, high_ms = saving_ci95_ms
    return calls_to_pay_off(cost_s, saving_ms), [calls_to_pay_off(cost_s, high_ms), calls_to_pay_off(cost_s, low_ms)]


def steady_state(interleaved: list[list[float]], alone: list[list[float]], *, resamples: int = 2000, seed: int = 0):
    """The mode's interleaved median against its median timed alone, process by process, with a 95% interval of
    that ratio; `flagged` when the interval excludes 1 and the ratio is more than `STEADY_STATE_TOLERANCE` from it:
    interleaving with eager then changed what it measured."""
    pairs = [(Timed(np.asarray(a, float)), Timed(np.asarray(b, float))) for a, b in zip(interleaved, alone)]
    ratio = paired(pairs, resamples=resamples, seed=seed)
    low, high = ratio.ci95
    excluded = low > 1 or high < 1
    return {
        "median_ms": float(np.median(np.concatenate([np.asarray(b, float) for b in alone]))),
        "n": sum(len(b) for b in alone),
        "ratio": ratio.value,
        "ci95": ratio.ci95,
        "flagged": bool(excluded and abs(ratio.value - 1) > STEADY_STATE_TOLERANCE),
    }
