"""Run the test suite beside busy processes, a few times, and print which tests failed in which round.

A test that passes alone but fails here depends on timing or on an idle machine: it should
assert a ratio with a margin, or move its timing into a benchmark script.

    python benchmarks/tools/tests_under_load.py [--hogs 2] [--rounds 2] [-- PYTEST ARGS]
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _spin() -> None:
    while True:
        sum(i * i for i in range(10_000))


def one_round(pytest_args: list[str], hogs: int) -> tuple[set[str], float, str]:
    busy = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(hogs)]
    for process in busy:
        process.start()
    begin = time.monotonic()
    lines = []
    try:
        with subprocess.Popen(
            [sys.executable, "-m", "pytest", "-v", "-rfE", "-p", "no:cacheprovider", *pytest_args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as suite:
            for line in suite.stdout:  # as it goes, so that a round cut short still shows its results
                lines.append(line)
                if re.search(r" (PASSED|FAILED|ERROR|SKIPPED)", line):
                    print(f"  {line.rstrip()}", flush=True)
    finally:
        for process in busy:
            process.terminate()
    output = "".join(lines)
    failed = set(re.findall(r"^(?:FAILED|ERROR) (\S+)", output, re.M))
    summary = output.strip().splitlines()[-1] if output.strip() else "no output"
    return failed, time.monotonic() - begin, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hogs", type=int, default=2, help="busy processes beside the suite (default 2)")
    parser.add_argument("--rounds", type=int, default=2, help="times to run the suite (default 2)")
    parser.add_argument("pytest_args", nargs="*", help="after --: what pytest runs (default: the whole suite)")
    args = parser.parse_args()
    failures: Counter[str] = Counter()
    for round_number in range(1, args.rounds + 1):
        failed, seconds, summary = one_round(args.pytest_args, args.hogs)
        failures.update(failed)
        print(f"round {round_number} beside {args.hogs} busy processes: {summary} ({seconds:.0f} s)", flush=True)
        for name in sorted(failed):
            print(f"  failed: {name}", flush=True)
    print(f"tests that failed under load: {len(failures)}")
    for name, count in failures.most_common():
        print(f"  {name}: {count} of {args.rounds} rounds")


if __name__ == "__main__":
    main()
