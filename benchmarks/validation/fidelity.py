"""Does compilebench measure a mode as its users run it? Its figures beside a plain measurement.

For each experiment, compilebench's benchmark job (a fresh process, as the pipeline runs it)
and a plain measurement written as a practitioner writes one, in its own fresh process: the
same model, shape, threads and seed; eager timed alone for a long run, then the mode alone;
inductor settings set as `torch._inductor.config` before `torch.compile(model, mode=...,
dynamic=...)` with the mode's own `dynamic` (compilebench compiles with `dynamic: false`, a bare
torch.compile with automatic dynamic); TorchScript as trace or script, freeze,
optimize_for_inference; export as torch.export and an AOTInductor package. Neither side
shares code with the other beyond building the model. Each side's figure is the median over
`--processes` fresh processes (3). Prints, per experiment, the mode's median and speedup on
both sides and their ratios, then the worst ratio. Target: every ratio within 0.93-1.07.

    python benchmarks/validation/fidelity.py [--config config/config.yaml] [--only resnet18] [--modes jit]
        [--processes 3]
    python benchmarks/validation/fidelity.py --separate --only resnet18 vit-tiny.bs8 --modes compile-default

With `--separate`, the plain side is the measurement a user makes when choosing a mode: eager alone in
`--processes` fresh processes and the mode alone in as many others, never both in one process; its
speedup is the ratio of the two sides' medians, with a 95% interval over the processes. It is set
against compilebench's in-process speedup and against its cross-job ratio (the eager job's median
over the mode job's), each from `--processes` benchmark jobs of each. Each plain process probes the
machine's parallel speedup (compilebench.worker.machine.parallel_capacity) at its start and end; their span per
side tells a machine that changed state between the sides' processes from a mode's effect. Each side's page
faults a call are printed beside compilebench's: a mode that maps memory afresh every call times the allocator's
state too (set the allocator in the hardware entry's `env`, and both sides run with it).

By default: the default config's resnet18 in every mode but eager, vit-tiny's sweep points and the
text generator (one sample is one greedy generation of its new tokens with a static KV cache, the
compiled forward as its step); about 40 minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from plain import PLAIN_SECONDS, ROOT, plain_measurement, plain_side, selected

from compilebench.cli import benchmark_job
from compilebench.configuration import config as configuration
from compilebench.core.experiment import Experiment


def compilebench_measurement(exp: Experiment, folder: Path) -> dict:
    """One benchmark job of the experiment, as the pipeline runs it (a fresh measuring process)."""
    out = folder / f"{exp.model}-{exp.mode}.json"
    result = benchmark_job(exp, out)
    if result["status"] != "ok":
        raise RuntimeError(f"{exp.model}/{exp.mode}: {result['status']}: {result['error']}")
    steady = result["steady_state"]
    return {
        "eager_ms": result["speedup"]["eager_median_ms"],
        "mode_ms": result["stats"]["median_ms"],
        "speedup": result["speedup"]["value"],
        "flagged": steady["flagged"],
        "steady_ratio": steady["ratio"],
    }


def in_fresh_process(exp: Experiment, seconds: float, side: str = "both") -> dict:
    """A plain measurement in a fresh process that starts with the hardware entry's env (the memory allocator's
    settings among them are read as a process starts), as compilebench's jobs do."""
    done = subprocess.run(
        [sys.executable, __file__, "--plain", side, "--seconds", str(seconds)],
        input=json.dumps(exp.to_json()),
        capture_output=True,
        text=True,
        env={**os.environ, **exp.hardware_env},
    )
    if done.returncode != 0:
        raise RuntimeError(f"the plain measurement of {exp.model}/{exp.mode} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--hardware", default="cpu")
    parser.add_argument("--only", nargs="+", help="models (or sweep points) to check")
    parser.add_argument("--modes", nargs="+", help="modes to check (default: every mode of each model but eager)")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--separate", action="store_true", help="eager and the mode in separate fresh processes")
    parser.add_argument("--seconds", type=float, default=PLAIN_SECONDS, help="each plain side's least time")
    parser.add_argument("--plain", choices=("both", "eager", "mode"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain:
        exp = json.load(sys.stdin)
        measured = (
            plain_measurement(exp, args.seconds) if args.plain == "both" else plain_side(exp, args.plain, args.seconds)
        )
        print(json.dumps(measured))
        return
    config = configuration.load(args.config)
    if args.separate:
        separate(config, args)
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="compilebench-fidelity-") as tmp:
        for exp in selected(config, args.hardware, args.only, args.modes):
            ours, plain = [], []
            for _ in range(args.processes):  # alternated, so that drift hits both sides alike
                ours.append(compilebench_measurement(exp, Path(tmp)))
                plain.append(in_fresh_process(exp, args.seconds))
            row = {
                "experiment": f"{exp.model}/{exp.mode}",
                "ours_ms": statistics.median(r["mode_ms"] for r in ours),
                "plain_ms": statistics.median(r["mode_ms"] for r in plain),
                "ours_speedup": statistics.median(r["speedup"] for r in ours),
                "plain_speedup": statistics.median(r["eager_ms"] / r["mode_ms"] for r in plain),
                "flagged": sum(r["flagged"] for r in ours),
                "steady": statistics.median(r["steady_ratio"] for r in ours),
            }
            row["median_ratio"] = row["ours_ms"] / row["plain_ms"]
            row["speedup_ratio"] = row["ours_speedup"] / row["plain_speedup"]
            rows.append(row)
            print(
                f"{row['experiment']:34} median {row['ours_ms']:7.2f} vs {row['plain_ms']:7.2f} ms "
                f"(ratio {row['median_ratio']:.3f}); speedup {row['ours_speedup']:.2f} vs {row['plain_speedup']:.2f} "
                f"(ratio {row['speedup_ratio']:.3f}); steady-state {row['steady']:.3f}, flagged in "
                f"{row['flagged']} of {args.processes}",
                flush=True,
            )
            each = "; ".join(f"{a['mode_ms']:.1f} vs {b['mode_ms']:.1f}" for a, b in zip(ours, plain))
            print(f"{'':34} each process's mode ms, compilebench vs plain, in the order run: {each}", flush=True)
    ratios = [(r["experiment"], k, r[k]) for r in rows for k in ("median_ratio", "speedup_ratio")]
    name, kind, worst = max(ratios, key=lambda item: abs(math.log(item[2])))
    inside = sum(0.93 <= value <= 1.07 for _, _, value in ratios)
    print(f"worst ratio: {worst:.3f} ({name}, {kind}); {inside} of {len(ratios)} within 0.93-1.07", flush=True)


def separate(config: dict, args: argparse.Namespace) -> None:
    """compilebench's speedups beside the plain one a user choosing a mode measures: eager alone in fresh
    processes, the mode alone in others."""
    import numpy as np

    from compilebench.analysis.stats import Timed, unpaired

    print(
        "experiment                          plain (separate)        in-process   cross-job   eager-alone   "
        "ratios to plain"
    )
    with tempfile.TemporaryDirectory(prefix="compilebench-fidelity-") as tmp:
        for exp in selected(config, args.hardware, args.only, args.modes):
            eager_exp = configuration.experiment(config, exp.model, "eager", args.hardware)
            eager_exp = eager_exp.replace(measure=exp.measure)
            eager, mode, inside, jobs_eager, jobs_mode, alone = [], [], [], [], [], []
            capacity = {"eager": [], "mode": []}
            faults = {"plain eager": [], "plain mode": [], "compilebench's mode": []}
            for _ in range(args.processes):  # alternated, so that drift hits every side alike
                for side, samples in (("eager", eager), ("mode", mode)):
                    measured = in_fresh_process(exp, args.seconds, side)
                    samples.append(measured["samples_ms"])
                    capacity[side] += measured["parallel_speedup"]
                    faults[f"plain {side}"].append(measured["faults_per_call"])
                ours = benchmark_job(exp, Path(tmp) / "mode.json")
                faults["compilebench's mode"].append((ours.get("page_faults") or {}).get("mode_per_call", math.nan))
                job = benchmark_job(eager_exp, Path(tmp) / "eager.json")
                inside.append(ours["speedup"]["value"])
                jobs_mode.append(ours["stats"]["median_ms"])
                jobs_eager.append(job["stats"]["median_ms"])
                alone.append(ours["eager_alone"]["median_ms"] / ours["stats"]["median_ms"])
            ratio = unpaired([Timed(np.asarray(x), 1) for x in eager], [Timed(np.asarray(x), 1) for x in mode])
            plain = ratio.value
            in_process = statistics.median(inside)
            cross = statistics.median(jobs_eager) / statistics.median(jobs_mode)
            eager_first = statistics.median(alone)  # eager timed alone in the mode's process, before the mode
            interval = f"({ratio.ci95[0]:.3f}-{ratio.ci95[1]:.3f})"
            print(
                f"{exp.model + '/' + exp.mode:34} {plain:.3f} {interval}  {in_process:10.3f}  {cross:10.3f}  "
                f"{eager_first:12.3f}   in-process {in_process / plain:.3f}, cross-job {cross / plain:.3f}, "
                f"eager-alone {eager_first / plain:.3f}",
                flush=True,
            )
            spans = "; ".join(f"{side} {min(v):.2f}-{max(v):.2f}x" for side, v in capacity.items())
            print(f"{'':34} the machine's parallel speedup in the plain processes: {spans}", flush=True)
            counts = "; ".join(f"{side} {min(v):,.0f}-{max(v):,.0f}" for side, v in faults.items())
            print(f"{'':34} page faults a call, over the processes: {counts}", flush=True)


if __name__ == "__main__":
    main()
