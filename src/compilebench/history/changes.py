"""Changes in level along each series of a history (hardware × experiment × metric, in the order the runs finished):
found by ruptures' PELT over the log of each run's value, each confirmed by Welch's t-test between the runs
before and after it on their per-process values, and stated as a ratio with its 95% interval and the verdict
`compilebench compare` uses (above 1 better: faster, a higher speedup, less memory). Where every run rests on
several processes, each run's best process makes a series of its own (`latency_ms:best_process`,
`speedup:best_process`): on a machine whose processes land at one of two speeds, a run's median moves between them
from run to run, while the best process stays at the faster one."""

from __future__ import annotations

import dataclasses
import math
import sqlite3
from dataclasses import dataclass, field

import numpy as np

from ..analysis.levels import bimodal, noise_scale
from ..analysis.stats import verdict
from .store import METRICS, metric_kind

METHOD = (
    "ruptures PELT (l2 cost on log values) over runs, confirmed by Welch's t-test on per-process values "
    "(p below 0.01 over the places a change could be)"
)
MIN_RUNS = 2  # the fewest runs on either side of a change
PENALTY = 1.5  # in units of the series' run-to-run variance times log(runs); calibrated on A/A and stepped series
# A change is confirmed where Welch's test between its sides gives p below this over the number of places a change
# could have been put (Bonferroni): the test reads the data that chose the place.
ALPHA = 0.01
NOISE_FLOOR = 0.01  # the run-to-run spread assumed at least (log scale): a series of identical values has none


@dataclass
class Point:
    run_id: str
    finished_at: str
    torch: str | None
    value: float
    ci_low: float | None
    ci_high: float | None
    replicates: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Change:
    """A change of level at run `at` (the first run of the new level), as the ratio before over after for a metric
    where higher is worse, after over before where lower is worse: above 1, better."""

    at: int
    run_id: str
    finished_at: str
    torch: str | None
    before: float
    after: float
    ratio: float
    ci95: tuple[float, float]
    p_value: float
    verdict: str
    regression: bool
    two_speeds: tuple[int, ...] = ()  # runs (from 0) whose processes split into two levels: the verdict is unclear


Key = tuple[str, str, str, str]  # hardware, model, mode, metric


def read_series(connection: sqlite3.Connection) -> dict[Key, list[Point]]:
    """Every series of the store, each point a run (in the order the runs finished) with its per-process values."""
    rows = connection.execute(
        """SELECT m.hardware, m.model, m.mode, m.metric, m.run_id, r.finished_at, x.torch, m.value, m.ci_low, m.ci_high
           FROM measurements m JOIN runs r USING (run_id)
           LEFT JOIN results x ON x.run_id = m.run_id AND x.hardware = m.hardware AND x.model = m.model
                AND x.mode = m.mode
           ORDER BY r.finished_at, r.run_id"""
    ).fetchall()
    replicates: dict[tuple, list[float]] = {}
    for run_id, hardware, model, mode, metric, value in connection.execute(
        "SELECT run_id, hardware, model, mode, metric, value FROM process_values ORDER BY replicate"
    ):
        replicates.setdefault((run_id, hardware, model, mode, metric), []).append(value)
    series: dict[Key, list[Point]] = {}
    for hardware, model, mode, metric, run_id, finished, torch, value, low, high in rows:
        own = replicates.get((run_id, hardware, model, mode, metric)) or [value]
        point = Point(run_id, finished, torch, value, low, high, own)
        series.setdefault((hardware, model, mode, metric), []).append(point)
    return {**series, **best_process_series(series)}


# Each run's best process, where every run rests on several: the level the machine reaches at its best, whichever
# speed the other processes landed on (a machine with two speeds moves a run's median between them).
BEST_PROCESS = {"latency_ms": min, "speedup": max}


def best_process_series(series: dict[Key, list[Point]]) -> dict[Key, list[Point]]:
    """`latency_ms:best_process` (the fastest process's median) and `speedup:best_process` (the highest) for each
    series whose every run rests on two processes or more."""
    derived = {}
    for (hardware, model, mode, metric), points in series.items():
        pick = BEST_PROCESS.get(metric)
        if pick is None or not all(len(p.replicates) >= 2 for p in points):
            continue
        derived[(hardware, model, mode, f"{metric}:best_process")] = [
            Point(p.run_id, p.finished_at, p.torch, pick(p.replicates), None, None, [pick(p.replicates)])
            for p in points
        ]
    return derived


def changes(points: list[Point], metric: str) -> list[Change]:
    """The confirmed changes of level along one series, in order."""
    values = np.asarray([p.value for p in points], dtype=float)
    if values.size < 2 * MIN_RUNS or np.any(values <= 0) or not np.all(np.isfinite(values)):
        return []
    import ruptures

    logs = np.log(values)
    scale = max(noise_scale(logs), NOISE_FLOOR)
    search = ruptures.Pelt(model="l2", min_size=MIN_RUNS, jump=1).fit(logs.reshape(-1, 1))
    breaks = search.predict(pen=PENALTY * scale**2 * math.log(values.size))[:-1]
    bounds = [0, *breaks, values.size]
    blips = _blips(values, bounds, METRICS[metric_kind(metric)][1])
    found = []
    for i, at in enumerate(breaks):
        if i in blips:
            continue
        before, after = points[bounds[i] : at], points[at : bounds[i + 2]]
        places = values.size - 2 * MIN_RUNS + 1
        change = _confirmed(before, after, at, points[at], metric, ALPHA / places)
        if change is not None:
            found.append(_at_two_speeds(change, points[bounds[i] : bounds[i + 2]], bounds[i]))
    return found


def _blips(values: np.ndarray, bounds: list[int], threshold: float) -> set[int]:
    """The breaks (by index) of each excursion: a stretch of at most MIN_RUNS runs between two breaks, after which the
    series is back at its level before it (within `threshold`, and within a third of the way the stretch went).
    Neither break is a change of level: on a machine with two speeds, a run or two whose every process landed on
    the slower one leave exactly that."""
    levels = [float(np.median(values[a:b])) for a, b in zip(bounds, bounds[1:])]
    blips: set[int] = set()
    for k in range(1, len(levels) - 1):
        away, back = abs(math.log(levels[k] / levels[k - 1])), abs(math.log(levels[k + 1] / levels[k - 1]))
        if bounds[k + 1] - bounds[k] <= MIN_RUNS and back <= min(math.log1p(threshold), away / 3):
            blips |= {k - 1, k}
    return blips


def _at_two_speeds(change: Change, points: list[Point], offset: int) -> Change:
    """`change`, said `unclear` where a run on either side had its processes at two levels (`levels.bimodal`): the
    machine's speeds, not the code, then set how the processes fall, and a run's median with them. The run's best
    process (`*:best_process`) carries the verdict there."""
    split = tuple(offset + k for k, p in enumerate(points) if bimodal(p.replicates) is not None)
    if not split:
        return change
    return dataclasses.replace(change, verdict="unclear", regression=False, two_speeds=split)


def _confirmed(before: list[Point], after: list[Point], at: int, first: Point, metric: str, alpha: float):
    from scipy import stats as scipy_stats

    a = np.log([x for p in before for x in p.replicates if x > 0])
    b = np.log([x for p in after for x in p.replicates if x > 0])
    if a.size < 2 or b.size < 2:
        return None
    test = scipy_stats.ttest_ind(b, a, equal_var=False)
    if not test.pvalue < alpha:
        return None
    worse, threshold = METRICS[metric_kind(metric)]
    difference = float(b.mean() - a.mean())  # log of after over before
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    freedom = float(test.df) if hasattr(test, "df") else max(1.0, min(a.size, b.size) - 1.0)
    half = float(scipy_stats.t.ppf(0.975, freedom)) * se
    sign = -1.0 if worse == "higher" else 1.0  # above 1, better
    low, high = sorted((math.exp(sign * (difference - half)), math.exp(sign * (difference + half))))
    said = verdict(low, high, threshold)
    return Change(
        at=at,
        run_id=first.run_id,
        finished_at=first.finished_at,
        torch=first.torch,
        before=float(np.exp(a.mean())),
        after=float(np.exp(b.mean())),
        ratio=math.exp(sign * difference),
        ci95=(low, high),
        p_value=float(test.pvalue),
        verdict=said,
        regression=said == "slower",
    )


def all_changes(series: dict[Key, list[Point]]) -> dict[Key, list[Change]]:
    return {key: changes(points, key[3]) for key, points in series.items()}


def latest_changes(found: dict[Key, list[Change]], since: str | None = None, runs: list[str] | None = None):
    """Per series, its latest change (at or after run `since`, a run id or its prefix, where given)."""
    start = 0
    if since is not None:
        matches = [i for i, run in enumerate(runs or []) if run.startswith(since)]
        if len(matches) != 1:  # none, or a prefix of several runs
            raise ValueError(since)
        start = matches[0]
    order = {run: i for i, run in enumerate(runs or [])}
    latest = {}
    for key, changes_found in found.items():
        kept = [c for c in changes_found if order.get(c.run_id, 0) >= start]
        if kept:
            latest[key] = kept[-1]
    return latest


@dataclass(frozen=True)
class Lost:
    """An experiment the run before the newest measured ok that the newest did not: failed, timed out, unsupported,
    or not in it at all."""

    hardware: str
    model: str
    mode: str
    status: str  # the newest run's, or `missing`
    error: str | None


def lost_results(connection: sqlite3.Connection, runs: list[str]) -> list[Lost]:
    """What the newest run lost of the run before it, as `compilebench compare` counts ok → not ok a regression."""
    if len(runs) < 2:
        return []
    previous, newest = runs[-2], runs[-1]
    query = "SELECT hardware, model, mode, status, error FROM results WHERE run_id = ?"
    before = {tuple(row[:3]) for row in connection.execute(query, (previous,)) if row[3] == "ok"}
    now = {tuple(row[:3]): (row[3], row[4]) for row in connection.execute(query, (newest,))}
    return [
        Lost(*key, *now.get(key, ("missing", None))) for key in sorted(before) if now.get(key, ("missing",))[0] != "ok"
    ]
