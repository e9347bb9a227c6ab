"""How often does `compilebench history` call a change that is not there, and how soon does it find one that is?

Runs one config `--runs` times on this machine (each a full `snakemake --cores 4` in the same project, its
measurements redone), keeps each run's results, and builds histories from them: the runs as they are (an A/A
history: every change found is a false alarm) and, per mode of `--step-modes`, the same runs with that mode's
calls 1.2 times as long from run `--step-at` on (an injected step: found or not, and how many runs late).
Prints the false alarms per series, then the detection and delay per stepped series.

    python benchmarks/validation/history_calibration.py [--config benchmarks/validation/history_aa.yaml]
        [--runs 8] [--step-at 5] [--steps 1.2] [--processes N] [--keep /tmp/history-calibration]

`--steps 1.05 1.1 1.2` injects each size in turn (the smallest found tells the detectable step); `--processes`
sets the config's `measure.processes` (each run's points then rest on that many processes).

With `--keep` holding runs from an earlier call, those runs are reused and only the missing ones are run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml
from plain import PROJECT_PARTS, ROOT

from compilebench.analysis.stats import summarize
from compilebench.history import changes, store
from compilebench.history.store import metric_kind

STEPS = [1.2]
STEPPED = ("latency_ms", "speedup")  # the metrics a step in calls moves, and their best-process series


def run_once(project: Path, keep: Path) -> None:
    """One full run of the project's config, its measurements redone, its results kept in `keep`."""
    for stale in ("results", ".snakemake/metadata"):
        shutil.rmtree(project / stale, ignore_errors=True)
    begin = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "4", "--quiet", "--until", "benchmark_run"],
        cwd=project,
        check=True,
    )
    shutil.copytree(project / "results", keep / "results", ignore=shutil.ignore_patterns("processes"))
    print(f"{keep.name}: {time.perf_counter() - begin:.0f} s", flush=True)


def stepped_copy(run: Path, dest: Path, factor: float, mode: str) -> Path:
    """A kept run with mode `mode`'s calls `factor` times as long (eager's beside them untouched, so that its
    speedup falls by as much), its summaries recomputed: what a change that slowed that mode would have left."""
    shutil.copytree(run, dest)
    for path in (dest / "results" / "runs").rglob(f"{mode}.json"):
        result = json.loads(path.read_text())
        if result["status"] != "ok":
            continue
        result["latency_ms"] = [x * factor for x in result["latency_ms"]]
        result["stats"] = {**result["stats"], **summarize(result["latency_ms"], resamples=200)}
        speedup = result.get("speedup") if mode != "eager" else None
        if speedup:
            speedup["value"] /= factor
            speedup["ci95"] = [x / factor for x in speedup["ci95"]]
        for process in result.get("processes") or []:
            process["median_ms"] *= factor
            if process.get("speedup") and mode != "eager":
                process["speedup"]["value"] /= factor
        path.write_text(json.dumps(result))
    return dest


def build(runs: list[Path], path: Path) -> dict:
    path.unlink(missing_ok=True)
    for run in runs:
        store.add(run, path, partial=True)  # measured up to its results (`--until benchmark_run`): no tables
    with store.opened(path) as connection:
        series = changes.read_series(connection)
    return {key: changes.changes(points, key[3]) for key, points in series.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=Path(__file__).with_name("history_aa.yaml"))
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--step-at", type=int, default=5, help="the first run of the slower level, from 1")
    parser.add_argument("--keep", type=Path, default=Path("/tmp/history-calibration"))
    parser.add_argument("--step-modes", nargs="+", default=["eager", "compile-default"], help="the modes stepped")
    parser.add_argument("--steps", nargs="+", type=float, default=STEPS, help="the step sizes injected, in turn")
    parser.add_argument("--processes", type=int, help="measure.processes for the config's runs")
    args = parser.parse_args()
    project = args.keep / "project"
    if not project.is_dir():
        project.mkdir(parents=True)
        for part in PROJECT_PARTS:
            (shutil.copytree if (ROOT / part).is_dir() else shutil.copy2)(ROOT / part, project / part)
        config = yaml.safe_load(args.config.read_text())
        if args.processes:
            config["measure"]["processes"] = args.processes
        (project / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    runs = [args.keep / f"run{k:02d}" for k in range(1, args.runs + 1)]
    for run in runs:
        if not (run / "results").is_dir():
            run_once(project, run)
    aa = build(runs, args.keep / "aa.sqlite")
    print(f"\nA/A history, {args.runs} runs ({changes.METHOD}):")
    alarms = {key: found for key, found in aa.items() if found}
    for key, found in sorted(alarms.items()):
        said = "; ".join(f"run {c.at + 1}, {c.ratio:.3f}x ({c.ci95[0]:.3f}-{c.ci95[1]:.3f}) {c.verdict}" for c in found)
        print(f"  false alarm: {'/'.join(key[:3])} {key[3]}: {said}")
    print(f"  {len(alarms)} of {len(aa)} series with a change found (false alarms), "
          f"{sum(c.regression for f in alarms.values() for c in f)} of them called a regression")  # fmt: skip
    for step in args.steps:
        report_step(runs, args, step)
    return 0


def report_step(runs: list[Path], args: argparse.Namespace, step: float) -> None:
    """The same runs with a `step`x step in one mode's calls from run `--step-at`, mode by mode: found where, or
    missed."""
    stepped = {}
    for mode in args.step_modes:
        folder = args.keep / f"stepped-{mode}-{step}"
        shutil.rmtree(folder, ignore_errors=True)
        stepped_runs = [
            run if k < args.step_at else stepped_copy(run, folder / run.name, step, mode)
            for k, run in enumerate(runs, 1)
        ]
        found = build(stepped_runs, args.keep / f"stepped-{mode}-{step}.sqlite")
        stepped.update({key: c for key, c in found.items() if key[2] == mode and metric_kind(key[3]) in STEPPED})
    print(f"\nthe same runs with a {step}x step in one mode's calls from run {args.step_at}, mode by mode:")
    delays = []
    for key, found in sorted(stepped.items()):
        hit = [c for c in found if c.at + 1 >= args.step_at]
        delay = (hit[0].at + 1 - args.step_at) if hit else None
        delays.append(delay)
        said = f"found at run {hit[0].at + 1} ({hit[0].ratio:.3f}x, {hit[0].verdict})" if hit else "missed"
        print(f"  {'/'.join(key[:3])} {key[3]}: {said}")
    found_count = sum(d is not None for d in delays)
    late = [d for d in delays if d is not None]
    print(f"  detected in {found_count} of {len(delays)} stepped series; delay in runs: "
          f"{', '.join(map(str, late)) or '-'} (median {np.median(late) if late else float('nan'):.0f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
