"""An A/A test of the verdicts: run the same experiments twice and count how many come out `same`.

Runs the config twice (each a full `snakemake --cores 4` in a fresh copy of the project)
and compares the two runs as `compilebench compare` does. Nothing changed between them,
so on a quiet machine nearly every experiment should be `same`; `faster` or `slower`
here is a false verdict, and `unclear` an interval too wide for the threshold. With
`--scale F`, it also compares the first run with the second's latencies multiplied by F
(every process's samples): a power check, where every experiment should come out `slower`
for F = 1.3. `--reuse DIR` compares two runs kept earlier with `--keep DIR` instead of
running again.

    python benchmarks/validation/verdicts_aa.py [--config config/experiments/aa.yaml] [--threshold 0.05]
        [--scale 1.3] [--keep DIR | --reuse DIR]
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

from plain import ROOT, run_pipeline

from compilebench.analysis import comparison_text, comparisons, run_folders, stats
from compilebench.core import thresholds


def scaled(results: dict, factor: float) -> dict:
    """A run's results with every timed sample of the mode multiplied by `factor`, process by process."""
    out = {}
    for key, result in results.items():
        result = copy.deepcopy(result)
        for holder in [result, *(result.get("processes") or [])]:
            if holder.get("latency_ms"):
                holder["latency_ms"] = [x * factor for x in holder["latency_ms"]]
        out[key] = result
    return out


def tally(table, threshold: float, what: str) -> str:
    timed = table[(table["scope"] == "experiment") & table["ratio"].notna()]
    counts = timed["verdict"].value_counts()
    processes = sorted({int(n) for n in timed["processes"]})
    return (
        f"{what} over {len(timed)} experiments ({'/'.join(map(str, processes))} processes a side, threshold "
        f"±{threshold:g}): "
        + ", ".join(f"{counts.get(v, 0)} {v}" for v in stats.VERDICTS)
        + f"; {int((timed['unstable'] == True).sum())} unstable"  # noqa: E712
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "experiments" / "aa.yaml")
    parser.add_argument("--threshold", type=float, default=thresholds.DEFAULT_THRESHOLD)
    parser.add_argument("--scale", type=float, help="also compare against the second run's latencies times this")
    parser.add_argument("--keep", type=Path, help="keep both runs' projects under this folder")
    parser.add_argument("--reuse", type=Path, help="compare the two runs kept under this folder, without running")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="compilebench-aa-") as tmp:
        if args.reuse:
            first, second = args.reuse / "a", args.reuse / "b"
        else:
            where, begin = args.keep or Path(tmp), time.perf_counter()
            first, second = (run_pipeline(args.config.resolve(), where / name) for name in ("a", "b"))
            print(f"both runs took {time.perf_counter() - begin:.0f} s")
        base, new = run_folders.run_results(first), run_folders.run_results(second)
    table = comparisons.between_runs(base, new, args.threshold)
    print(comparison_text.describe(table, sorted(set(base) - set(new)), sorted(set(new) - set(base))))
    lines = [tally(table, args.threshold, "A/A verdicts")]
    if args.scale:
        power = comparisons.between_runs(base, scaled(new, args.scale), args.threshold)
        print(comparison_text.describe(power, [], []))
        lines.append(tally(power, args.threshold, f"verdicts with the second run's latencies × {args.scale:g}"))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
