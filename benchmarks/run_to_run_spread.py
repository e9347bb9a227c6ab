"""How much does an experiment's median move between two runs, beside torch.utils.benchmark.Timer?

Runs the default config twice (each a full `snakemake --cores 4` in a fresh copy of
the project) and, interleaved with the runs, times the same eager models twice with
torch.utils.benchmark.Timer, each time in a fresh process as each pipeline job is
(two Timer measurements in one process share its allocator, thread pool and caches,
which two runs never do). Prints, per experiment, the two medians and their spread
|a - b| / mean(a, b), then the median spread of each. Target: compilebench's spread
no wider than Timer's.

    python benchmarks/run_to_run_spread.py [--config config/config.yaml]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import torch
import torch.utils.benchmark as benchmark

from compilebench import config as configuration
from compilebench.generation import GreedyGenerator
from compilebench.models import build
from compilebench.timing import Clock

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PARTS = ["Snakefile", "rules", "scripts", "src", "config", "envs", "report"]


def pipeline_medians(config_path: Path) -> pd.Series:
    with tempfile.TemporaryDirectory(prefix="compilebench-spread-") as tmp:
        for part in PROJECT_PARTS:
            (shutil.copytree if (ROOT / part).is_dir() else shutil.copy2)(ROOT / part, Path(tmp) / part)
        shutil.copy2(config_path, Path(tmp) / "config" / "config.yaml")
        subprocess.run([sys.executable, "-m", "snakemake", "--cores", "4", "--quiet", "all"], cwd=tmp, check=True)
        runs = pd.read_csv(Path(tmp) / "results" / "tables" / "runs.csv")
    return runs.set_index(["hardware", "model", "mode"])["median_ms"]


def timer_medians(config_path: Path) -> dict[str, float]:
    """Timer's medians, measured in a fresh Python process."""
    done = subprocess.run([sys.executable, __file__, "--config", str(config_path), "--timer-only"],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_with_timer(config: dict) -> dict[str, float]:
    """Timer's median for each model's eager call (one whole generation for text generation),
    given the same minimum time the pipeline's measurement gets."""
    medians = {}
    for name in config["models"]:
        exp = configuration.experiment(config, name, "eager", "cpu", any_mode=True)
        bundle = build(name, exp["spec"], exp["seed"], "cpu")
        if bundle.causal_lm is not None:
            call = GreedyGenerator(bundle.causal_lm, bundle.causal_lm, bundle.inputs[0], exp["spec"]["new_tokens"], Clock("cpu"))
        else:
            call = lambda b=bundle: b.module(*b.inputs)  # noqa: E731
        with torch.no_grad():
            call()
            timer = benchmark.Timer(stmt="call()", globals={"call": call}, num_threads=torch.get_num_threads())
            min_time_s = configuration.measure_settings(config, name)["min_time_s"]
            medians[name] = timer.blocked_autorange(min_run_time=max(min_time_s, 0.2)).median * 1e3
    return medians


def spread(a: float, b: float) -> float:
    return abs(a - b) / ((a + b) / 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--timer-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    config = configuration.load(args.config)
    if args.timer_only:
        print(json.dumps(measure_with_timer(config)))
        return

    timer_a, shared_a = timer_medians(args.config), measure_with_timer(config)
    runs_a = pipeline_medians(args.config)
    timer_b, shared_b = timer_medians(args.config), measure_with_timer(config)
    runs_b = pipeline_medians(args.config)

    print(f"{'experiment':48} {'run 1 ms':>10} {'run 2 ms':>10} {'spread':>8}")
    pipeline_spreads = []
    for key in runs_a.index:
        a, b = runs_a[key], runs_b.get(key)
        if pd.notna(a) and pd.notna(b):
            pipeline_spreads.append(spread(a, b))
            print(f"{'/'.join(key):48} {a:10.3f} {b:10.3f} {spread(a, b):8.1%}")
    print()
    timer_spreads = []
    for name in timer_a:
        timer_spreads.append(spread(timer_a[name], timer_b[name]))
        print(f"{'Timer ' + name + ' eager':48} {timer_a[name]:10.3f} {timer_b[name]:10.3f} {timer_spreads[-1]:8.1%}")
    shared_spreads = [spread(shared_a[name], shared_b[name]) for name in shared_a]
    for name, value in zip(shared_a, shared_spreads):
        print(f"{'Timer ' + name + ' eager, both in this process':48} {shared_a[name]:10.3f} {shared_b[name]:10.3f} {value:8.1%}")
    print()
    print(f"(for reference, Timer twice in this one process, sharing its allocator and caches: {statistics.median(shared_spreads):.1%})")
    print(f"median run-to-run spread: compilebench {statistics.median(pipeline_spreads):.1%} over {len(pipeline_spreads)} experiments; "
          f"Timer {statistics.median(timer_spreads):.1%} over {len(timer_spreads)} eager models, each measurement in a fresh process")
    eager = [spread(runs_a[k], runs_b[k]) for k in runs_a.index if k[2] == "eager" and pd.notna(runs_b.get(k))]
    print(f"eager experiments only: compilebench {statistics.median(eager):.1%}, Timer {statistics.median(timer_spreads):.1%}")


if __name__ == "__main__":
    main()
