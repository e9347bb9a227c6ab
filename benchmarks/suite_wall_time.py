"""The suite's wall time: run config/experiments/suite.yaml end to end in a fresh copy of the project and print the
wall time, the ten slowest jobs, the suite table and the most common failures with their messages.

    python benchmarks/suite_wall_time.py                      # a fresh copy under a temporary folder
    python benchmarks/suite_wall_time.py --project DIR         # ... or in DIR (kept)
    python benchmarks/suite_wall_time.py --reuse DIR           # only read a finished run in DIR
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PARTS = ["Snakefile", "rules", "scripts", "src", "config", "envs", "report", "examples"]
SUITE = "config/experiments/suite.yaml"
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]$")
JOB = re.compile(r"^(?:local)?rule (\w+):$")


def copy_project(project: Path) -> None:
    project.mkdir(parents=True, exist_ok=True)
    for part in PROJECT_PARTS:
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy2)(ROOT / part, project / part)


def job_durations(log: Path) -> list[tuple[float, str, str]]:
    """(seconds, rule, first output) of every job Snakemake's log shows started and finished, at its 1 s
    resolution."""
    begun: dict[str, dict] = {}
    when = pending = None
    for line in log.read_text().splitlines():
        line = line.rstrip()
        if stamp := STAMP.match(line):
            when = dt.datetime.strptime(re.sub(" +", " ", stamp.group(1)), "%a %b %d %H:%M:%S %Y")
        elif job := JOB.match(line.strip()):
            pending = {"rule": job.group(1), "begin": when, "output": ""}
        elif pending is not None and line.strip().startswith("output:"):
            pending["output"] = line.split(":", 1)[1].strip().split(",")[0]
        elif pending is not None and line.strip().startswith("jobid:"):
            begun[line.split(":", 1)[1].strip()] = pending
            pending = None
        elif done := re.match(r"^Finished job(?:id:)? (\d+)", line.strip()):
            if job := begun.get(done.group(1)):
                job["end"] = when
    return sorted(
        ((j["end"] - j["begin"]).total_seconds(), j["rule"], j["output"]) for j in begun.values() if "end" in j
    )[::-1]


def report(project: Path, wall_s: float | None) -> None:
    if wall_s is not None:
        print(f"suite wall time: {wall_s:.0f} s ({wall_s / 60:.1f} min)")
    logs = sorted((project / ".snakemake" / "log").glob("*.snakemake.log"))
    if logs:
        jobs = job_durations(logs[-1])
        print(f"\nten slowest of {len(jobs)} jobs (s, rule, output):")
        for seconds, rule, output in jobs[:10]:
            print(f"  {seconds:6.0f}  {rule:24s} {output}")
    tables = project / "results" / "tables"
    if (tables / "suite.csv").is_file():
        suite = pd.read_csv(tables / "suite.csv")
        print("\nsuite.csv:")
        print(suite.to_string(index=False))
    if (tables / "suite_models.csv").is_file():
        models = pd.read_csv(tables / "suite_models.csv")
        failed = models[models["passed"] != True]  # noqa: E712  (accuracy failures ran, and count too)
        said = {"accuracy": "its output failed the accuracy rule", "unchecked": "no reference to check it against"}
        causes = Counter(
            f"{row.cause}: {said.get(row.cause) or str(row.error).splitlines()[0][:160]}" for row in failed.itertuples()
        )
        print(f"\nfailures ({len(failed)} of {len(models)} model × mode rows), most common first:")
        for text, count in causes.most_common(10):
            print(f"  {count:3d} × {text}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, help="run in this folder (a fresh copy is made there)")
    parser.add_argument("--reuse", type=Path, help="a project whose suite run has finished: only report it")
    parser.add_argument("--cores", type=int, default=4)
    args = parser.parse_args()
    if args.reuse:
        report(args.reuse, None)
        return 0
    project = args.project or Path(tempfile.mkdtemp(prefix="compilebench-suite-"))
    copy_project(project)
    begin = time.perf_counter()
    command = [sys.executable, "-m", "snakemake", "--cores", str(args.cores), "--configfile", SUITE]
    done = subprocess.run(command, cwd=project)
    report(project, time.perf_counter() - begin)
    print(f"\nproject: {project}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
