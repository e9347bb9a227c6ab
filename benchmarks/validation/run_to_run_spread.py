"""How much does an experiment's median move between two runs, beside torch.utils.benchmark.Timer?

Runs the default config twice (each a full `snakemake --cores 4` in a fresh copy of
the project) and, interleaved with the runs, times the same experiments twice with
torch.utils.benchmark.Timer. Timer gets what a pipeline job gets: a fresh process per
experiment, the same callable (eager, TorchScript, or torch.compile with a cold,
private cache), the same warm-up and the same minimum time. Two measurements in one
process would share its allocator, thread pool and compiled code, which two runs never
do; the eager models are also timed that way, for reference.

Prints, per experiment, both tools' medians and spreads |a - b| / mean(a, b), then the
median spread of each over the eager models (the comparison the target names) and over
every experiment. Target: compilebench's spread no wider than Timer's.

    python benchmarks/validation/run_to_run_spread.py [--config config/config.yaml] [--timer-modes eager]

With `--timer-modes eager` Timer skips the compiled modes, with `--only` the models not named; with `--reuse A B`
the two runs are read from the finished projects A and B (each a run of the config) instead of run here.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import torch
import torch.utils.benchmark as benchmark
from plain import ROOT, run_pipeline

from compilebench.configuration import config as configuration
from compilebench.configuration import schema
from compilebench.core.errors import Unsupported
from compilebench.parent.jobs import apply_hardware
from compilebench.worker import runner
from compilebench.worker.timing import warm_up

Key = tuple[str, str, str]


def pipeline_medians(config_path: Path, kept: Path | None) -> dict[Key, float]:
    """Each experiment's median from a full run of the config, or from the run kept in the project `kept`."""
    if kept is not None:
        runs = pd.read_csv(kept / "results" / "tables" / "runs.csv")
    else:
        with tempfile.TemporaryDirectory(prefix="compilebench-spread-") as tmp:
            runs = pd.read_csv(run_pipeline(config_path, Path(tmp)) / "results" / "tables" / "runs.csv")
    ok = runs[runs["status"] == "ok"]
    return {(h, m, x): v for h, m, x, v in ok[["hardware", "model", "mode", "median_ms"]].itertuples(index=False)}


def experiments(config: dict, hardware: str, timer_modes: str, only: list[str] | None) -> list[Key]:
    return [
        (hardware, model, mode)
        for model in only or config["models"]
        for mode in schema.model_modes(config, model)
        if timer_modes == "all" or mode == "eager"
    ]


def timer_medians(config_path: Path, keys: list[Key]) -> dict[Key, float]:
    """Timer's median of each experiment, each in a fresh Python process, as pipeline jobs run."""
    medians = {}
    for key in keys:
        done = subprocess.run(
            [sys.executable, __file__, "--config", str(config_path), "--timer-only", *key],
            capture_output=True,
            text=True,
        )
        value = (
            json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 and done.stdout.strip() else None
        )
        if value is None:
            print(
                f"Timer could not time {'/'.join(key)}: {done.stderr.strip().splitlines()[-1:] or 'no output'}",
                file=sys.stderr,
            )
        medians[key] = value
    return medians


def timer_median(config: dict, key: Key) -> float | None:
    """Timer's median for one experiment: the callable its benchmark job times, after the same
    first call and warm-up, over at least the job's minimum time. None where the mode cannot apply."""
    hardware, model, mode = key
    exp = configuration.experiment(config, model, mode, hardware)
    apply_hardware(exp.hardware_env, exp.threads)
    settings = exp.measure
    with runner.private_compile_cache(), runner.measuring_process(exp) as process:
        try:
            call = runner.prepare(process).call
            call()
        except Unsupported:
            return None
        clock = process.clock
        warm_up(call, clock, settings.warmup)
        timer = benchmark.Timer(
            stmt="call(); sync()", globals={"call": call, "sync": clock.sync}, num_threads=torch.get_num_threads()
        )
        return timer.blocked_autorange(min_run_time=max(settings.min_time_s, 0.2)).median * 1e3


def spread(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or pd.isna(a) or pd.isna(b):
        return None
    return abs(a - b) / ((a + b) / 2)


def median_of(values: list[float | None]) -> str:
    present = [v for v in values if v is not None]
    return f"{statistics.median(present):.1%} over {len(present)}" if present else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--hardware", default="cpu", help="the hardware entry Timer times (default: cpu)")
    parser.add_argument("--timer-modes", choices=["all", "eager"], default="all")
    parser.add_argument("--only", nargs="+", help="the models Timer times (default: every model of the config)")
    parser.add_argument("--reuse", nargs=2, type=Path, metavar=("PROJECT_A", "PROJECT_B"),
                        help="two finished runs of the config, read instead of running it twice")  # fmt: skip
    parser.add_argument("--timer-only", nargs=3, metavar=("HARDWARE", "MODEL", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    config = configuration.load(args.config)
    if args.timer_only:
        print(json.dumps(timer_median(config, tuple(args.timer_only))))
        return

    keys = experiments(config, args.hardware, args.timer_modes, args.only)
    kept = args.reuse or (None, None)
    eager_keys = [k for k in keys if k[2] == "eager"]
    timer_a, shared_a = timer_medians(args.config, keys), {k: timer_median(config, k) for k in eager_keys}
    runs_a = pipeline_medians(args.config, kept[0])
    timer_b, shared_b = timer_medians(args.config, keys), {k: timer_median(config, k) for k in eager_keys}
    runs_b = pipeline_medians(args.config, kept[1])

    print(f"{'experiment':44} {'compilebench ms':>21} {'spread':>7}   {'Timer ms':>21} {'spread':>7}")
    pipeline_spreads, timer_spreads = {}, {}
    for key in sorted(k for k in set(runs_a) | set(runs_b) | set(keys) if not args.only or k[1] in args.only):
        pipeline_spreads[key] = spread(runs_a.get(key), runs_b.get(key))
        timer_spreads[key] = spread(timer_a.get(key), timer_b.get(key))
        print(
            f"{'/'.join(key):44} {_pair(runs_a.get(key), runs_b.get(key))} {_percent(pipeline_spreads[key])}   "
            f"{_pair(timer_a.get(key), timer_b.get(key))} {_percent(timer_spreads[key])}"
        )
    print()
    shared = [spread(shared_a[k], shared_b[k]) for k in eager_keys]
    print(
        f"(for reference, Timer twice in this one process, sharing its allocator and caches: eager {median_of(shared)})"
    )
    both = [k for k in keys if pipeline_spreads.get(k) is not None and timer_spreads.get(k) is not None]
    narrower = sum(pipeline_spreads[k] <= timer_spreads[k] for k in both)
    for label, subset in (
        ("eager models", [k for k in both if k[2] == "eager"]),
        ("every experiment Timer timed", both),
    ):
        print(
            f"median run-to-run spread, {label}: compilebench {median_of([pipeline_spreads[k] for k in subset])}, "
            f"Timer {median_of([timer_spreads[k] for k in subset])}"
        )
    print(f"compilebench no wider than Timer in {narrower} of {len(both)} experiments")


def _pair(a: float | None, b: float | None) -> str:
    return f"{_ms(a)} {_ms(b)}"


def _ms(value: float | None) -> str:
    return f"{value:10.3f}" if value is not None and not pd.isna(value) else f"{'-':>10}"


def _percent(value: float | None) -> str:
    return f"{value:7.1%}" if value is not None else f"{'-':>7}"


if __name__ == "__main__":
    main()
