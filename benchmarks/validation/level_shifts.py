"""How often the level-shift check (compilebench.analysis.levels) cries wolf, and how often it finds a real step:
calibrated on the process records of a finished run, as they were measured (A/A: a quiet run should have no
shift) and with a step injected into one side of each (the mode's calls, or an eager record's twin, multiplied by
`--step` from a random call between a fifth and four fifths of the series).

    python benchmarks/validation/level_shifts.py [--results results] [--step 1.3] [--draws 5] [--penalty 3.0]

Prints each record's series lengths and verdicts, then the shifts found as measured (on a quiet machine, false
alarms) per series and, over the records with none, the detection rate of the injected step with the distance
between the call found and the call the step began. Targets: at most 1 false alarm in 20 series, at least
19 detections in 20 at a 1.3x step.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from plain import ROOT

from compilebench.analysis import levels
from compilebench.core import thresholds


def stepped(series: list[float], at: int, by: float) -> list[float]:
    return series[:at] + [x * by for x in series[at:]]


def records(results: Path) -> list[tuple[Path, dict]]:
    found = []
    for path in sorted((results / "processes").rglob("*.json")):
        record = json.loads(path.read_text())
        if record.get("status") == "ok" and record.get("latency_ms") and not record.get("stream"):
            found.append((path, record))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--step", type=float, default=1.3)
    parser.add_argument("--draws", type=int, default=5, help="injected steps per record, each at a random call")
    parser.add_argument("--penalty", type=float, default=thresholds.LEVEL_SHIFT_PENALTY)
    parser.add_argument("--tolerance", type=float, default=thresholds.LEVEL_SHIFT_TOLERANCE)
    args = parser.parse_args()
    found = records(args.results)
    if not found:
        raise SystemExit(f"no ok process records under {args.results / 'processes'}: run the pipeline first")

    def shift_of(record: dict) -> dict | None:
        changes = {
            side: levels.strongest_change(record.get(key) or [], args.penalty) for side, key in levels.SIDES.items()
        }
        return levels.judge(changes, record, args.tolerance)

    rng = np.random.default_rng(0)
    alarms, series, detected, tries, distances = 0, 0, 0, 0, []
    for path, record in found:
        side = "twin" if record.get("twin_latency_ms") else "mode"
        key = levels.SIDES[side]
        sides = [s for s, k in levels.SIDES.items() if record.get(k)]
        shift = shift_of(record)
        series += len(sides)
        alarms += shift is not None
        hits = 0
        for _ in range(args.draws if shift is None else 0):  # a step is injected into a series with no shift
            n = len(record[key])
            at = int(rng.integers(n // 5, 4 * n // 5))
            injected = shift_of({**record, key: stepped(record[key], at, args.step)})
            tries += 1
            if injected is not None:
                detected += 1
                hits += 1
                distances.append(abs(injected["at_call"] - at))
        name = "/".join(path.relative_to(args.results / "processes").with_suffix("").parts)
        lengths = ", ".join(f"{s} {len(record[levels.SIDES[s]])}" for s in sides)
        print(f"{name:<48} {lengths:<40} as measured: {levels.said(shift) if shift else 'no shift'}; "
              f"{args.step}x step found {hits}/{args.draws if shift is None else 0}")  # fmt: skip
    print(f"\n{len(found)} records, {series} series; penalty {args.penalty}, tolerance {args.tolerance}")
    print(f"shifts found as measured: {alarms} of {len(found)} records, {alarms / series:.3f} per series (on a quiet "
          "machine, false alarms)")  # fmt: skip
    median = float(np.median(distances)) if distances else float("nan")
    print(f"{args.step}x step detected: {detected} of {tries} ({detected / tries:.2%}), found a median {median:.0f} "
          "calls from where it began")  # fmt: skip


if __name__ == "__main__":
    main()
