"""Whether a timed series changed level partway through: a machine that switched state, or a mode whose code
changed speed, inside one measuring process. A median over both levels describes neither, so a process whose
level moved is told apart, measured again, and set aside.

Change points come from ruptures' PELT over the log of each call's time, with a cost that reads medians (`l1`):
a stray slow call moves no level. A change counts where the two sides of its strongest change point differ in
median by more than the tolerance. Eager and the mode are timed in alternating blocks: where both moved by the
same factor at the same stretch of the process, the machine moved and their ratio holds; where one side moved
alone, or both by different factors, the ratio describes neither level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..core.thresholds import BIMODAL_GAP, LEVEL_SHIFT_PENALTY, LEVEL_SHIFT_TOLERANCE

METHOD = "ruptures PELT, l1 cost on log ms"
# The fewest calls on either side of a change point: a shorter stretch is a burst, not a level.
MIN_STRETCH = 8
# Series sides a process record holds, by the key of their samples.
SIDES = {"mode": "latency_ms", "eager": "eager_latency_ms", "twin": "twin_latency_ms", "alone": "alone_latency_ms"}


def noise_scale(log_ms: np.ndarray) -> float:
    """The call-to-call spread of a log series, robust to a change of level and to stray calls: the median
    absolute deviation of successive differences, scaled to a standard deviation of one call."""
    differences = np.diff(log_ms)
    if differences.size == 0:
        return 0.0
    mad = float(np.median(np.abs(differences - np.median(differences))))
    return 1.4826 * mad / math.sqrt(2)


MAX_CANDIDATES = 400  # the most places a change is looked for in one series


def strongest_change(samples_ms: Sequence[float], penalty: float = LEVEL_SHIFT_PENALTY) -> dict | None:
    """The change point of `samples_ms` (in the order taken) whose sides differ most in median, with both
    medians; None where PELT finds none or the series is too short to have two stretches."""
    import ruptures

    ms = np.asarray(samples_ms, dtype=float)
    if ms.size < 2 * MIN_STRETCH or not np.all(np.isfinite(ms)) or np.any(ms <= 0):
        return None
    log_ms = np.log(ms)
    scale = noise_scale(log_ms)
    if scale == 0.0:
        return None
    # A change may fall at every call of a short series, and at every `jump`-th of a long one: PELT's L1 cost takes
    # a median per candidate pair, so five thousand calls of a fast model would take many minutes at every call.
    jump = max(1, ms.size // MAX_CANDIDATES)
    search = ruptures.Pelt(model="l1", min_size=max(MIN_STRETCH, jump), jump=jump).fit(log_ms.reshape(-1, 1))
    breaks = search.predict(pen=penalty * scale * math.log(ms.size))[:-1]
    if not breaks:
        return None
    at = max(breaks, key=lambda b: abs(float(np.median(log_ms[b:]) - np.median(log_ms[:b]))))
    return {
        "at_call": int(at),
        "of_calls": int(ms.size),
        "before_ms": float(np.median(ms[:at])),
        "after_ms": float(np.median(ms[at:])),
    }


def factor(change: dict | None) -> float:
    return 1.0 if change is None else change["after_ms"] / change["before_ms"]


def moved(change: dict | None, tolerance: float) -> bool:
    return change is not None and abs(math.log(factor(change))) > math.log1p(tolerance)


def level_shift(
    record: dict, tolerance: float = LEVEL_SHIFT_TOLERANCE, penalty: float = LEVEL_SHIFT_PENALTY
) -> dict | None:
    """A process record's level shift, or None: the side that moved (`mode`, `eager`, its A/A `twin`, or the
    mode timed `alone`), the call it moved at within that side's series, its median before and after, and the
    method."""
    changes = {side: strongest_change(record.get(key) or [], penalty) for side, key in SIDES.items()}
    changes["alone"] = _alone_change(record, penalty)
    return judge(changes, record, tolerance)


def _alone_change(record: dict, penalty: float) -> dict | None:
    """The mode timed alone is two stretches, before and after the interleaved phase (`alone_calls`): a change
    between them is the machine's drift over that phase, which the steady-state check weighs; a shift is a change
    within one. A record without `alone_calls` is read as one stretch."""
    series = record.get(SIDES["alone"]) or []
    counts = record.get("alone_calls") or [len(series)]
    changes, start = [], 0
    for count in counts:
        change = strongest_change(series[start : start + count], penalty)
        if change is not None:
            changes.append({**change, "at_call": change["at_call"] + start, "of_calls": len(series)})
        start += count
    return max(changes, key=lambda c: abs(math.log(factor(c))), default=None)


def judge(changes: dict[str, dict | None], record: dict, tolerance: float = LEVEL_SHIFT_TOLERANCE) -> dict | None:
    """The shift each side's strongest change makes of a record. Eager and the mode (or eager and its twin)
    moving alike is the machine's drift, which their interleaved ratio cancels: no shift. Where one moved, or
    both by different factors, the side that moved more."""
    pair = ("mode", "twin") if record.get(SIDES["twin"]) else ("eager", "mode")
    one, other = changes[pair[0]], changes[pair[1]]
    if moved(one, tolerance) or moved(other, tolerance):
        if not (moved(one, tolerance) and moved(other, tolerance) and _alike(one, other, tolerance)):
            larger = max(pair, key=lambda side: abs(math.log(factor(changes[side]))))
            return _shift(larger, changes[larger])
    if moved(changes["alone"], tolerance):
        return _shift("alone", changes["alone"])
    return None


# Two sides' changes this close in the process (as shares of each series) happened at the same moment.
SAME_MOMENT = 0.1


def _alike(a: dict, b: dict, tolerance: float) -> bool:
    """Two sides' changes that are the same move: at the same stretch of the process, by factors within the
    tolerance of each other."""
    together = abs(a["at_call"] / a["of_calls"] - b["at_call"] / b["of_calls"]) <= SAME_MOMENT
    return together and abs(math.log(factor(a) / factor(b))) <= math.log1p(tolerance)


def _shift(side: str, change: dict) -> dict:
    return {"side": side, **change, "method": METHOD}


def moves_speedup(shift: dict | None) -> bool:
    """Whether a shift lies in the samples a speedup (or a noise floor) is made of: the interleaved sides. The mode
    timed alone feeds only the steady-state check, whose figure a shift there makes unreliable, not the speedup."""
    return shift is not None and shift["side"] != "alone"


def said(shift: dict) -> str:
    """A level shift in words."""
    side = {"mode": "the mode's", "eager": "eager's", "twin": "eager's second callable's", "alone": "the mode's"}
    where = " timed alone" if shift["side"] == "alone" else ""
    return (
        f"{side[shift['side']]} calls{where} moved from {shift['before_ms']:.2f} to {shift['after_ms']:.2f} ms "
        f"at call {shift['at_call'] + 1}"
    )


def mode_levels(records: list[dict]) -> list[float]:
    """The levels the mode's calls ran at, one per process (its median), or two for a process whose mode side
    moved (its medians before and after)."""
    found = []
    for record in records:
        change = strongest_change(record.get("latency_ms") or [])
        if moved(change, LEVEL_SHIFT_TOLERANCE):
            found += [change["before_ms"], change["after_ms"]]
        elif record.get("latency_ms"):
            found.append(float(np.median(record["latency_ms"])))
    return found


def bimodal(values: list[float], gap: float = BIMODAL_GAP) -> dict | None:
    """Two levels where the values split at a gap wider than `gap` (a share of the lower level): each level's
    median and its share of the values, the faster first; None for one level."""
    ordered = sorted(values)
    if len(ordered) < 2:
        return None
    ratios = [b / a for a, b in zip(ordered, ordered[1:])]
    at = int(np.argmax(ratios))
    if ratios[at] <= 1 + gap:
        return None
    fast, slow = ordered[: at + 1], ordered[at + 1 :]
    return {
        "levels": [{"median_ms": float(np.median(side)), "share": len(side) / len(ordered)} for side in (fast, slow)],
        "of": len(ordered),
    }
