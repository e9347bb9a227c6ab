"""Summary statistics and bootstrap intervals of timed samples."""

from __future__ import annotations

import numpy as np
from scipy import stats

# A mode whose interleaved median is further than this from its median timed alone is flagged.
STEADY_STATE_TOLERANCE = 0.05


def _median(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(x, axis=axis)


def _ratio_of_medians(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(a, axis=axis) / np.median(b, axis=axis)


def _bootstrap(samples: tuple[np.ndarray, ...], statistic, resamples: int, seed: int) -> list[float]:
    if min(len(s) for s in samples) < 2:
        value = float(statistic(*samples))
        return [value, value]
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


Block = int | tuple[int, int]  # calls per interleaved block: one length for both sides, or (first's, second's)


def speedup(
    eager_ms: list[float], mode_ms: list[float], *, resamples: int = 2000, seed: int = 0, block: Block = 1
) -> dict:
    """Median eager over median mode, with a 95% interval of that ratio: from whole interleaved blocks when
    a block holds more than one call (`paired_block_bootstrap`), else from single samples."""
    a, b = np.asarray(eager_ms, dtype=float), np.asarray(mode_ms, dtype=float)
    return {
        "value": float(np.median(a) / np.median(b)),
        "ci95": _interval((a, b), _ratio_of_medians, resamples, seed, block),
        "eager_median_ms": float(np.median(a)),
        "n": int(min(len(a), len(b))),
        "interval": _method(a, b, block),
    }


def _interval(
    samples: tuple[np.ndarray, np.ndarray], statistic, resamples: int, seed: int, block: Block
) -> list[float]:
    if _blocks(*samples, block) >= 2:
        return paired_block_bootstrap(*samples, statistic, block=block, resamples=resamples, seed=seed)
    return _bootstrap(samples, statistic, resamples, seed)


def _sizes(block: Block) -> tuple[int, int]:
    return (block, block) if isinstance(block, int) else (int(block[0]), int(block[1]))


def _blocks(a: np.ndarray, b: np.ndarray, block: Block) -> int:
    size_a, size_b = _sizes(block)
    return min(len(a) // size_a, len(b) // size_b) if max(size_a, size_b) > 1 else 0


def _method(a: np.ndarray, b: np.ndarray, block: Block) -> str:
    blocks, (size_a, size_b) = _blocks(a, b, block), _sizes(block)
    sizes = f"{size_a}" if size_a == size_b else f"{size_a} and {size_b}"
    return f"paired block bootstrap, {blocks} blocks of {sizes}" if blocks >= 2 else "bootstrap of single samples"


def paired_block_bootstrap(
    a: np.ndarray, b: np.ndarray, statistic, *, block: Block, resamples: int = 2000, seed: int = 0
) -> list[float]:
    """A percentile 95% interval of statistic(a, b) from resampling whole blocks of consecutive samples, block i
    of `a` together with block i of `b` (timed side by side; each side's blocks may hold a different number of
    calls): a slow stretch of the machine stays in one resampled unit, where a bootstrap of single samples would
    take its correlated samples as independent."""
    count, (size_a, size_b) = _blocks(a, b, block), _sizes(block)
    blocks_a = a[: count * size_a].reshape(count, size_a)
    blocks_b = b[: count * size_b].reshape(count, size_b)
    picks = np.random.default_rng(seed).integers(0, count, size=(resamples, count))
    values = statistic(blocks_a[picks].reshape(resamples, -1), blocks_b[picks].reshape(resamples, -1), axis=-1)
    low, high = np.percentile(values, [2.5, 97.5])
    return [float(low), float(high)]


def _difference_of_medians(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(a, axis=axis) - np.median(b, axis=axis)


def saving(
    eager_ms: list[float], mode_ms: list[float], *, resamples: int = 2000, seed: int = 0, block: Block = 1
) -> dict:
    """What one call saves: median eager less median mode (ms), with a 95% interval (blocks as in `speedup`)."""
    a, b = np.asarray(eager_ms, dtype=float), np.asarray(mode_ms, dtype=float)
    return {
        "value_ms": float(np.median(a) - np.median(b)),
        "ci95_ms": _interval((a, b), _difference_of_medians, resamples, seed, block),
    }


def calls_to_pay_off(cost_s: float, saving_ms: float) -> float:
    """Calls after which a one-off `cost_s` is earned back at `saving_ms` a call: infinite (never) when
    nothing is saved, none when nothing is spent."""
    if cost_s <= 0:
        return 0.0
    if saving_ms <= 0:
        return float("inf")
    return cost_s / (saving_ms / 1e3)


def break_even(
    cost_s: float,
    eager_ms: list[float],
    mode_ms: list[float],
    *,
    resamples: int = 2000,
    seed: int = 0,
    block: Block = 1,
):
    """Calls to pay off `cost_s`, with the 95% interval that the saving's bootstrap interval gives (the count
    falls as the saving grows, so the interval's ends swap)."""
    saved = saving(eager_ms, mode_ms, resamples=resamples, seed=seed, block=block)
    low_ms, high_ms = saved["ci95_ms"]
    return calls_to_pay_off(cost_s, saved["value_ms"]), [
        calls_to_pay_off(cost_s, high_ms),
        calls_to_pay_off(cost_s, low_ms),
    ]


def steady_state(interleaved_ms: list[float], alone_ms: list[float], *, resamples: int = 2000, seed: int = 0) -> dict:
    """The mode's interleaved median against its median timed alone, with a 95% interval of that ratio; `flagged`
    when the interval excludes 1 and the ratio is more than `STEADY_STATE_TOLERANCE` from it: interleaving with
    eager then changed what it measured."""
    ratio = speedup(interleaved_ms, alone_ms, resamples=resamples, seed=seed)
    low, high = ratio["ci95"]
    excluded = low > 1 or high < 1
    return {
        "median_ms": float(np.median(alone_ms)),
        "n": len(alone_ms),
        "ratio": ratio["value"],
        "ci95": ratio["ci95"],
        "flagged": bool(excluded and abs(ratio["value"] - 1) > STEADY_STATE_TOLERANCE),
    }
