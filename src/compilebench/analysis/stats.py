"""The estimators every number compilebench states rests on, torch-free: summaries of timed samples, ratios of
medians with their bootstrap intervals, and the one rule that reads an interval: faster, slower, same or unclear.

A ratio of medians (`Ratio`) is read as a speedup: base over new, so that above 1 the new side is faster. Its
sides are processes' samples, each process timed in interleaved blocks. Within a process, whole blocks are
resampled (a slow stretch of the machine stays in one unit); across processes (each fresh process lands in its own
state, and between processes the variance is larger), the mean of the processes' values is drawn from Student's t
with the processes' own spread: the two-level interval (two sides measured in different processes, each with
several, by Welch's t). With one process a side, it is that process's block bootstrap.

Samples are read from a record of processes (`timed`): a result, or a process record as a worker wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.thresholds import DEFAULT_THRESHOLD, STEADY_STATE_TOLERANCE

VERDICTS = ("faster", "slower", "same", "unclear")

TWO_LEVEL = "two-level"


def verdict(low: float, high: float, threshold: float, floor: tuple[float, float] | None = None) -> str:
    """`faster`/`slower` when the whole interval lies beyond the band of `same`, `same` when within it, else
    `unclear`. The band is 1 ± threshold, widened to the half-width of the noise `floor` (eager against itself)
    where that is wider."""
    band = max(threshold, (floor[1] - floor[0]) / 2) if floor and not missing(floor[0]) else threshold
    if low > 1 + band:
        return "faster"
    if high < 1 - band:
        return "slower"
    if low >= 1 - band and high <= 1 + band:
        return "same"
    return "unclear"


def against_noise(low, high, noise_low, noise_high, threshold: float = DEFAULT_THRESHOLD) -> str | None:
    """A speedup's verdict over eager, with the band of `same` widened to the model's noise floor (eager timed
    against itself) where the floor is wider than the threshold."""
    if missing(low) or missing(high):
        return None
    floor = None if missing(noise_low) or missing(noise_high) else (noise_low, noise_high)
    return verdict(low, high, threshold, floor)


def unsteady_floor(noise_low, noise_high, threshold: float) -> bool:
    """A noise floor that is itself a verdict: eager against eager came out faster or slower beyond the band."""
    return not (missing(noise_low) or missing(noise_high)) and verdict(noise_low, noise_high, threshold) in (
        "faster",
        "slower",
    )


def detectable_change(low: float, high: float, threshold: float) -> float:
    """The smallest change, in percent, that an interval as wide as this one would have called faster or slower:
    its half-width on the log scale plus the threshold."""
    return 100 * ((np.log(high) - np.log(low)) / 2 + threshold)


@dataclass(frozen=True)
class Timed:
    """One process's samples of one side, and the calls each of its interleaved blocks kept."""

    samples: np.ndarray
    block: int = 1


@dataclass(frozen=True)
class Ratio:
    """A ratio of medians with the bootstrap replicates of its logarithm, from which its 95% interval comes."""

    value: float
    replicates: np.ndarray = field(repr=False)
    processes: tuple[int, int]  # processes on the base side and on the new side
    interval: str  # how the replicates were drawn

    @property
    def ci95(self) -> list[float]:
        low, high = np.exp(np.percentile(self.replicates, [2.5, 97.5]))
        return [float(min(low, self.value)), float(max(high, self.value))]

    def __truediv__(self, other: Ratio) -> Ratio:
        """This ratio over another measured independently (their replicates are drawn apart)."""
        return Ratio(
            self.value / other.value,
            self.replicates - other.replicates,
            (min(self.processes[0], other.processes[0]), min(self.processes[1], other.processes[1])),
            self.interval if self.interval == other.interval else f"{self.interval}; {other.interval}",
        )

    def record(self) -> dict:
        """As a result file keeps it."""
        return {"value": self.value, "ci95": self.ci95, "processes": self.processes[1], "interval": self.interval}

    def row(self, threshold: float, floor: tuple[float, float] | None = None) -> dict:
        """As a table holds it: the ratio, its interval, the verdict it supports and what it could have detected."""
        low, high = self.ci95
        return {
            "ratio": self.value,
            "ratio_ci95_low": low,
            "ratio_ci95_high": high,
            "verdict": verdict(low, high, threshold, floor),
            "detectable_change": detectable_change(low, high, threshold),
            "base_processes": self.processes[0],
            "processes": self.processes[1],
            "interval": self.interval,
        }


def geometric_mean(ratios: list[Ratio]) -> Ratio:
    """The geometric mean of several experiments' ratios; each experiment's replicates drawn apart."""
    return Ratio(
        float(np.exp(np.mean([np.log(r.value) for r in ratios]))),
        np.mean([r.replicates for r in ratios], axis=0),
        (min(r.processes[0] for r in ratios), min(r.processes[1] for r in ratios)),
        ratios[0].interval,
    )


def paired(pairs: list[tuple[Timed, Timed]], *, resamples: int = 2000, seed: int = 0) -> Ratio:
    """Median of the first side over median of the second, both timed in the same processes (eager and a mode
    interleaved): per process the block bootstrap resamples block i of one side with block i of the other, and
    across processes their mean is drawn from Student's t over their spread (two-level)."""
    rng = np.random.default_rng(seed)
    points, replicates, methods = [], [], []
    for a, b in pairs:
        points.append(np.log(np.median(a.samples) / np.median(b.samples)))
        logs, method = _paired_replicates(a, b, resamples, rng)
        replicates.append(logs)
        methods.append(method)
    value, logs = _two_level(points, replicates, rng)
    return Ratio(float(np.exp(value)), logs, (len(pairs), len(pairs)), _method(methods))


def unpaired(base: list[Timed], new: list[Timed], *, resamples: int = 2000, seed: int = 0) -> Ratio:
    """Median of the base side over median of the new side, timed in different processes: each side's median is
    the geometric mean of its processes' medians. Where both sides hold several processes, their difference is
    drawn from Welch's t; else each side is drawn apart, at both levels."""
    rng = np.random.default_rng(seed)
    (base_points, base_logs, base_method), (new_points, new_logs, new_method) = (
        _side(side, resamples, rng) for side in (base, new)
    )
    method = base_method if base_method == new_method else f"{base_method}; {new_method}"
    value = float(np.mean(base_points) - np.mean(new_points))
    if len(base) > 1 and len(new) > 1:
        spreads = [_variance_of_mean(base_points, base_logs), _variance_of_mean(new_points, new_logs)]
        counts = (len(base), len(new))
        welch = sum(spreads) ** 2 / sum(v**2 / (k - 1) for v, k in zip(spreads, counts))
        logs = value + np.sqrt(sum(spreads)) * rng.standard_t(welch, resamples)
    else:
        logs = _two_level(base_points, base_logs, rng)[1] - _two_level(new_points, new_logs, rng)[1]
    return Ratio(float(np.exp(value)), logs, (len(base), len(new)), method)


def location_ms(side: list[Timed]) -> float:
    """A side's median: the geometric mean of its processes' medians (with one process, its median)."""
    return float(np.exp(np.mean([np.log(np.median(p.samples)) for p in side])))


def paired_replicates(
    a: np.ndarray, b: np.ndarray, statistic, sizes: tuple[int, int], resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, str]:
    """Bootstrap replicates of statistic(a, b) within one process: block i of `a` with block i of `b` where
    both hold whole blocks of `sizes` calls (at least two), else single samples, each side drawn apart."""
    count = min(len(a) // sizes[0], len(b) // sizes[1]) if max(sizes) > 1 else 0
    if count >= 2:
        blocks_a = a[: count * sizes[0]].reshape(count, sizes[0])
        blocks_b = b[: count * sizes[1]].reshape(count, sizes[1])
        picks = rng.integers(0, count, size=(resamples, count))
        values = statistic(blocks_a[picks].reshape(resamples, -1), blocks_b[picks].reshape(resamples, -1))
        described = f"{sizes[0]}" if sizes[0] == sizes[1] else f"{sizes[0]} and {sizes[1]}"
        return values, f"paired block bootstrap, {count} blocks of {described}"
    values = statistic(a[rng.integers(0, len(a), (resamples, len(a)))], b[rng.integers(0, len(b), (resamples, len(b)))])
    return values, "bootstrap of single samples"


def _log_ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.log(np.median(a, axis=-1) / np.median(b, axis=-1))


def _paired_replicates(a: Timed, b: Timed, resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    return paired_replicates(a.samples, b.samples, _log_ratio, (a.block, b.block), resamples, rng)


def _blocks(process: Timed) -> np.ndarray | None:
    """A process's samples as its interleaved blocks (a row each), or None where it holds fewer than two."""
    count = len(process.samples) // process.block if process.block > 1 else 0
    return process.samples[: count * process.block].reshape(count, process.block) if count >= 2 else None


def _side(side: list[Timed], resamples: int, rng: np.random.Generator) -> tuple[list[float], list[np.ndarray], str]:
    """Each of a side's processes: its log median, with that median's block bootstrap replicates."""
    points, replicates, methods = [], [], []
    for process in side:
        x, blocks = process.samples, _blocks(process)
        if blocks is not None:
            count = len(blocks)
            drawn = blocks[rng.integers(0, count, (resamples, count))].reshape(resamples, -1)
            methods.append(f"block bootstrap, {count} blocks of {process.block}")
        else:
            drawn = x[rng.integers(0, len(x), (resamples, len(x)))]
            methods.append("bootstrap of single samples")
        points.append(float(np.log(np.median(x))))
        replicates.append(np.log(np.median(drawn, axis=-1)))
    return points, replicates, _method(methods)


def _two_level(points: list[float], replicates: list[np.ndarray], rng: np.random.Generator):
    """The mean of the processes' values, with replicates of it. With one process, its own replicates. With k of
    them, Student's t with k - 1 degrees of freedom, scaled by the mean's standard error: resampling two or three
    processes would only span the range between them, and cover the truth about half the time."""
    if len(points) == 1:
        return points[0], replicates[0]
    value = float(np.mean(points))
    draws = rng.standard_t(len(points) - 1, len(replicates[0]))
    return value, value + np.sqrt(_variance_of_mean(points, replicates)) * draws


def _variance_of_mean(points: list[float], replicates: list[np.ndarray]) -> float:
    """The squared standard error of the processes' mean value: from their spread, and never below what their own
    replicates give (two processes can agree by chance)."""
    variance = max(float(np.var(points, ddof=1)), float(np.mean([np.var(r) for r in replicates])))
    return variance / len(points)


def _method(methods: list[str]) -> str:
    return methods[0] if len(methods) == 1 else TWO_LEVEL


def timed(result: dict, key: str = "latency_ms") -> list[Timed]:
    """A result's samples of `key` process by process (`latency_ms`, the mode's; `eager_latency_ms`, eager's
    beside it; `twin_latency_ms`, eager's twin in an eager result), each with its interleaved block length.
    A result without `processes` is one process."""
    side = "mode_block" if key == "latency_ms" else "eager_block"
    processes = result.get("processes") or [{**result, **(result.get("noise") or {})}]
    return [
        Timed(np.asarray(p[key], dtype=float), int(((p.get("interleave") or {}).get(side)) or _fixed_block(result)))
        for p in processes
    ]


def _fixed_block(result: dict) -> int:
    return (result.get("measure") or {}).get("interleave_block") or 1


def speedup(result: dict, *, seed: int = 0) -> Ratio:
    """A mode's speedup over eager, interleaved in each of its processes."""
    return paired(list(zip(timed(result, "eager_latency_ms"), timed(result))), **resampling(result, seed))


def process_center_ms(sides: list[Timed]) -> float:
    """One side's figure a speedup divides: its median in each process, their geometric mean over the processes
    (the median itself where there is one), so eager's over the mode's is the speedup exactly."""
    return float(np.exp(np.mean([np.log(np.median(side.samples)) for side in sides])))


def noise_floor(result: dict, *, seed: int = 0) -> Ratio:
    """An eager result's ratio of eager against its twin: what the job would call a speedup where there is none."""
    return paired(list(zip(timed(result, "twin_latency_ms"), timed(result))), **resampling(result, seed))


def saving_ms(result: dict, *, seed: int = 0) -> tuple[float, list[float]]:
    """What one call of the mode saves against eager (median eager less median mode, ms, averaged over processes),
    with its 95% interval, resampled as `speedup` is."""
    resamples = resampling(result, seed)["resamples"]
    rng = np.random.default_rng(seed)
    points, replicates = [], []
    for a, b in zip(timed(result, "eager_latency_ms"), timed(result)):
        points.append(float(np.median(a.samples) - np.median(b.samples)))
        replicates.append(paired_replicates(a.samples, b.samples, _difference, (a.block, b.block), resamples, rng)[0])
    value, values = _two_level(points, replicates, rng)
    low, high = np.percentile(values, [2.5, 97.5])
    return float(value), [float(low), float(high)]


def _difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.median(a, axis=-1) - np.median(b, axis=-1)


def resampling(result: dict, seed: int) -> dict:
    return {"resamples": (result.get("measure") or {}).get("bootstrap_resamples", 2000), "seed": seed}


def missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


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


def median_interval(samples: list[float], *, resamples: int = 2000, seed: int = 0) -> tuple[float, list[float]]:
    """The median of independent samples (one per fresh process) and its bootstrap 95% interval, within the
    samples; with one sample, the interval is that sample."""
    x = np.asarray(samples, dtype=float)
    low, high = _bootstrap((x,), _median, resamples, seed)
    return float(np.median(x)), [max(low, float(x.min())), min(high, float(x.max()))]


def median_difference(
    a: list[float], b: list[float], *, resamples: int = 2000, seed: int = 0
) -> tuple[float, list[float]]:
    """How far the median of `a` lies above the median of `b` (independent samples, e.g. two paths' fresh starts),
    with a bootstrap 95% interval that resamples each side on its own."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.median(x) - np.median(y)), _bootstrap((x, y), _median_difference, resamples, seed)


def _median_difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(a, axis=axis) - np.median(b, axis=axis)


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


def flagged(ratio: Ratio) -> bool:
    """A ratio that should be 1: its interval excludes 1 and it is more than `STEADY_STATE_TOLERANCE` from it."""
    low, high = ratio.ci95
    return bool((low > 1 or high < 1) and abs(ratio.value - 1) > STEADY_STATE_TOLERANCE)


def eager_job_ratio(mode_result: dict, eager_result: dict) -> dict:
    """Eager's median beside a mode, in the mode's processes, over the eager job's median in its own: 1 where a
    user who runs eager alone sees the eager the speedup is measured against. `flagged` as a steady state is, where
    both sides hold two processes or more; with one process on a side the interval holds no spread between
    processes (which moves a median by several percent), so it cannot say, and `flagged` is None."""
    ratio = unpaired(timed(mode_result, "eager_latency_ms"), timed(eager_result), **resampling(mode_result, 0))
    judged = min(ratio.processes) >= 2
    return {"value": ratio.value, "ci95": ratio.ci95, "processes": ratio.processes,
            "flagged": flagged(ratio) if judged else None}  # fmt: skip


def steady_state(interleaved: list[list[float]], alone: list[list[float]], *, resamples: int = 2000, seed: int = 0):
    """The mode's interleaved median against its median timed alone, process by process, with a 95% interval of
    that ratio; `flagged` when the interval excludes 1 and the ratio is more than `STEADY_STATE_TOLERANCE` from it:
    interleaving with eager then changed what it measured."""
    pairs = [(Timed(np.asarray(a, float)), Timed(np.asarray(b, float))) for a, b in zip(interleaved, alone)]
    ratio = paired(pairs, resamples=resamples, seed=seed)
    return {
        "median_ms": float(np.median(np.concatenate([np.asarray(b, float) for b in alone]))),
        "n": sum(len(b) for b in alone),
        "ratio": ratio.value,
        "ci95": ratio.ci95,
        "flagged": flagged(ratio),
    }


def eager_alone(beside: list[Timed], alone: list[list[float]], *, resamples: int = 2000, seed: int = 0) -> dict:
    """Eager interleaved with the mode against eager timed alone before the mode was built, process by process, with
    a 95% interval of that ratio; `flagged` as a steady state is. Eager alone is one stretch of its process, one
    moment of the machine (about as long as an interleaved block), while the interleaved eager spans its blocks:
    each replicate sets the alone stretch at a moment drawn from how the process's interleaved blocks differ from
    their median, so that the machine moving between moments is not read as the mode's presence. (A block's median
    also holds its calls' own noise: the interval errs wide.)"""
    rng = np.random.default_rng(seed)
    points, replicates, methods = [], [], []
    for side, stretch in zip(beside, alone):
        (x_point,), (x_logs,), method = _side([side], resamples, rng)
        (y_point,), (y_logs,), _ = _side([Timed(np.asarray(stretch, dtype=float))], resamples, rng)
        blocks, moments = _blocks(side), np.zeros(1)  # without blocks, no moments to tell apart
        if blocks is not None:
            moments = np.log(np.median(blocks, axis=1) / np.median(blocks))
            method += ", against one moment of them"
        points.append(x_point - y_point)
        replicates.append(x_logs - y_logs - moments[rng.integers(0, len(moments), resamples)])
        methods.append(method)
    value, logs = _two_level(points, replicates, rng)
    ratio = Ratio(float(np.exp(value)), logs, (len(beside), len(beside)), _method(methods))
    return {
        "median_ms": float(np.median(np.concatenate([np.asarray(b, float) for b in alone]))),
        "n": sum(len(b) for b in alone),
        "ratio": ratio.value,
        "ci95": ratio.ci95,
        "interval": ratio.interval,
        "flagged": flagged(ratio),
    }


def per_call(stretches: list[list[int]]) -> float | None:
    """Events per call over stretches of [events, calls]: their sum over the calls'; None without calls."""
    calls = sum(c for _, c in stretches)
    return sum(e for e, _ in stretches) / calls if calls else None


def slope(xs: list[float], samples: list[list[float]], *, resamples: int = 2000, seed: int = 0) -> dict:
    """The least-squares slope of `samples` (a list per x) against `xs`, with a 95% interval and how it was made:
    `bootstrap` resamples each x's own samples where every x has two or more; `t` is the fit's t interval
    (n - 2 degrees of freedom) over the x values' medians where there are three or more; else none."""
    x = np.asarray(xs, dtype=float)
    if len(x) < 2 or len(set(xs)) < 2 or any(not s for s in samples):
        return {"slope": None, "ci95": [None, None], "method": None, "points": len(xs)}
    medians = np.asarray([np.median(s) for s in samples], dtype=float)
    value = float(np.polyfit(x, medians, 1)[0])
    if min(len(s) for s in samples) >= 2:
        rng = np.random.default_rng(seed)
        draws = [rng.choice(np.asarray(s, dtype=float), size=(resamples, len(s))) for s in samples]
        replicate_medians = np.stack([np.median(d, axis=1) for d in draws], axis=1)  # resamples × x values
        centred = x - x.mean()
        slopes = (replicate_medians - replicate_medians.mean(axis=1, keepdims=True)) @ centred / (centred @ centred)
        low, high = np.percentile(slopes, [2.5, 97.5])
        return {"slope": value, "ci95": [float(low), float(high)], "method": "bootstrap", "points": len(xs)}
    if len(x) < 3:
        return {"slope": value, "ci95": [None, None], "method": None, "points": len(xs)}
    from scipy import stats

    fit = stats.linregress(x, medians)
    half = float(stats.t.ppf(0.975, len(x) - 2) * fit.stderr)
    return {"slope": value, "ci95": [value - half, value + half], "method": "t", "points": len(xs)}


Z95 = 1.959963984540054  # the standard normal's 97.5th percentile


def population_geomean(
    values: list[float], lows: list[float], highs: list[float], *, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """The geometric mean of a population's ratios (a suite's speedups, one per model) with a 95% interval that
    resamples the models and carries each one's own measurement uncertainty: each replicate draws the models with
    replacement, and each drawn model's log ratio from a normal whose 95% interval is the model's own. A population
    of one gives that model's own interval; a model without an interval counts as measured exactly."""
    logs = np.log(np.asarray(values, dtype=float))
    if not len(logs):
        return float("nan"), float("nan"), float("nan")
    spread = np.log(np.asarray(highs, dtype=float)) - np.log(np.asarray(lows, dtype=float))
    errors = np.nan_to_num(spread / (2 * Z95), nan=0.0)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(logs), size=(resamples, len(logs)))
    drawn = logs[picks] + errors[picks] * rng.standard_normal(picks.shape)
    means = drawn.mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(np.exp(logs.mean())), float(np.exp(low)), float(np.exp(high))
