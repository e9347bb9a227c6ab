"""An A/A test of the verdicts: run the same experiments twice and count how many come out `same`.

Runs the config twice (each a full `snakemake --cores 4` in a fresh copy of the project)
and compares the two runs as `compilebench compare` does. Nothing changed between them,
so on a quiet machine nearly every experiment should be `same`; `faster` or `slower`
here is a false verdict, and `unclear` an interval too wide for the threshold.

    python benchmarks/verdicts_aa.py [--config config/config.yaml] [--threshold 0.05] [--keep DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from fresh_run import ROOT, run_pipeline

from compilebench import comparisons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--threshold", type=float, default=comparisons.DEFAULT_THRESHOLD)
    parser.add_argument("--keep", type=Path, help="keep both runs' projects under this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="compilebench-aa-") as tmp:
        where = args.keep or Path(tmp)
        first, second = (run_pipeline(args.config.resolve(), where / name) for name in ("a", "b"))
        base, new = comparisons.run_results(first), comparisons.run_results(second)
        table = comparisons.between_runs(base, new, args.threshold)
    print(comparisons.describe(table, sorted(set(base) - set(new)), sorted(set(new) - set(base))))
    timed = table[(table["scope"] == "experiment") & table["ratio"].notna()]
    counts = timed["verdict"].value_counts()
    print(
        f"A/A verdicts over {len(timed)} experiments (threshold ±{args.threshold:g}): "
        + ", ".join(f"{counts.get(v, 0)} {v}" for v in comparisons.VERDICTS)
        + f"; {counts.get('same', 0) / max(len(timed), 1):.0%} same"
    )


if __name__ == "__main__":
    main()
