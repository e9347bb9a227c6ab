"""How often does the noise floor's 95% interval contain 1.0? The coverage of the speedup intervals.

For each eager experiment of the config (on the CPU entry), builds the model once and
repeats the eager job's A/A measurement: eager against a second eager callable, in the
interleaved blocks and with the measure settings the job uses. Nothing differs between
the two sides, so the true ratio is 1.0 and a 95% interval should contain it about 95%
of the time. Each repetition's samples get two intervals: a bootstrap of single samples
(which takes correlated consecutive samples as independent) and the paired block
bootstrap the engine uses. Target: 90-98% coverage.

    python benchmarks/validation/noise_coverage.py [--config config/config.yaml] [--repeats 20] [--min-time-s S]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from plain import ROOT

from compilebench.analysis import stats
from compilebench.configuration import config as configuration
from compilebench.configuration import schema
from compilebench.core.experiment import Experiment
from compilebench.parent.jobs import apply_hardware
from compilebench.worker import runner, timing


def aa_intervals(exp: Experiment, repeats: int) -> list[dict]:
    """`repeats` A/A measurements of one eager experiment, each with both intervals: the measuring process's own
    phases (build, prepare, warm-up and block plan), then its interleaved timing again and again."""
    settings = exp.measure
    loop = {k: getattr(settings, k) for k in ("iterations", "min_time_s", "max_iterations")}
    rows = []
    with runner.measuring_process(exp) as process:
        prepared = runner.prepare(process)
        plan = runner.warm_up_sides(process, prepared).blocks
        for repeat in range(repeats):
            both = timing.interleaved(prepared.eager, prepared.call, process.clock, plan=plan, **loop)
            twin_ms, eager_ms = both.eager_ms, both.mode_ms
            row = {"model": exp.model, "n": len(eager_ms)}
            for name, blocks in (("single", (1, 1)), ("block", (plan.eager, plan.mode))):
                pair = (stats.Timed(np.asarray(twin_ms), blocks[0]), stats.Timed(np.asarray(eager_ms), blocks[1]))
                ratio = stats.paired([pair], resamples=settings.bootstrap_resamples, seed=repeat)
                low, high = ratio.ci95
                row.update({f"{name}_covers": low <= 1.0 <= high, f"{name}_width": high - low, "ratio": ratio.value})
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--min-time-s", type=float, help="override measure.min_time_s (shorter repetitions)")
    parser.add_argument("--hardware", default="cpu")
    args = parser.parse_args()
    config = configuration.load(args.config)
    rows = []
    for model in config["models"]:
        if "eager" not in schema.model_modes(config, model):
            continue
        exp = configuration.experiment(config, model, "eager", args.hardware)
        if args.min_time_s is not None:
            exp = exp.replace(measure=exp.measure.replace(min_time_s=args.min_time_s))
        apply_hardware(exp.hardware_env, exp.threads)
        found = aa_intervals(exp, args.repeats)
        rows += found
        print(
            f"{model:24s} n={found[0]['n']:4d}  single samples: {coverage(found, 'single'):4.0%} cover 1.0 "
            f"(median width {median_width(found, 'single'):.3f})  blocks: {coverage(found, 'block'):4.0%} "
            f"(median width {median_width(found, 'block'):.3f})",
            flush=True,
        )
    print(
        f"A/A coverage over {len(rows)} measurements of {len({r['model'] for r in rows})} models: "
        f"bootstrap of single samples {coverage(rows, 'single'):.0%}, paired block bootstrap "
        f"{coverage(rows, 'block'):.0%} (target 90-98%)"
    )


def coverage(rows: list[dict], method: str) -> float:
    return sum(r[f"{method}_covers"] for r in rows) / len(rows)


def median_width(rows: list[dict], method: str) -> float:
    widths = sorted(r[f"{method}_width"] for r in rows)
    return widths[len(widths) // 2]


if __name__ == "__main__":
    main()
