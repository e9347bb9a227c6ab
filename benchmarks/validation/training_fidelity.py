"""Does compilebench measure a training step as its users train? Its speedup beside a plain training loop.

The plain side is a training loop as a practitioner writes it: the model in train mode, torch.optim's SGD or
AdamW, cross-entropy on seeded labels (or the next token), `torch.compile(model)` for a compiled step; eager's
steps alone in `--processes` fresh processes and the compiled steps alone in as many others, never both in one
process, with the allocator compilebench gives a training step's processes (on a CPU glibc's pinned,
`jobs.allocator_env`, as a user sets it with two environment variables); its speedup is the ratio of the two
sides' medians over processes, with a 95% interval. Beside it,
compilebench's in-process speedup from as many benchmark jobs of the training experiment (`MODEL.train`), each a
fresh process as the pipeline runs it. Prints each process, then per experiment both speedups and their ratio.
Target: a ratio within 0.90-1.10.

    python benchmarks/validation/training_fidelity.py [--config config/experiments/training.yaml]
        [--only resnet18-64px.train] [--modes compile-default] [--processes 3]
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
import time
from pathlib import Path

import numpy as np
from plain import ROOT

from compilebench.analysis import stats
from compilebench.analysis.stats import Timed
from compilebench.cli import benchmark_job
from compilebench.configuration import config as configuration
from compilebench.core.experiment import Experiment
from compilebench.parent.jobs import allocator_env

PLAIN_SECONDS = 5.0  # each plain side times steps for at least this long, and 30 steps
WARMUP_STEPS = 5


def plain_loop(exp: dict, compiled: bool, seconds: float) -> dict:
    """Steps of a plain training loop alone in this process, from the experiment's JSON form (compilebench's model
    builder and nothing else of it): every step's milliseconds."""
    from compilebench.parent.jobs import apply_hardware

    apply_hardware(exp["hardware_env"], exp["threads"])
    import torch
    import torch.nn.functional as F

    from compilebench.core.experiment import ModelSpec
    from compilebench.worker.models import build

    spec = ModelSpec.from_json(exp["spec"])
    built = build(exp["model"], spec, exp["seed"], exp["device"])
    model, (x,) = built.module.train(), built.inputs
    train = spec.train
    if train.optimizer == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=train.lr, momentum=0.9)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=train.lr)
    with torch.no_grad():
        logits = model(x)
    if logits.dim() == 2:
        labels = torch.randint(logits.shape[-1], (logits.shape[0],), generator=torch.Generator().manual_seed(0))

        def loss_of(out):
            return F.cross_entropy(out, labels)
    else:

        def loss_of(out):
            return F.cross_entropy(out[:, :-1].flatten(0, 1), x[:, 1:].flatten())

    forward = torch.compile(model) if compiled else model

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(forward(x))
        loss.backward()
        optimizer.step()

    for _ in range(WARMUP_STEPS):
        step()
    samples: list[float] = []
    while len(samples) < 30 or sum(samples) < seconds * 1e3:
        begin = time.perf_counter()
        step()
        samples.append((time.perf_counter() - begin) * 1e3)
    return {"samples_ms": samples, "median_ms": statistics.median(samples)}


def plain_in_fresh_process(exp: Experiment, compiled: bool, seconds: float) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--plain", "compiled" if compiled else "eager", "--seconds", str(seconds)],
        input=json.dumps(exp.to_json()),
        capture_output=True,
        text=True,
        env={**os.environ, **allocator_env(exp)},
    )
    if done.returncode != 0:
        raise RuntimeError(f"the plain loop of {exp.model}/{exp.mode} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "config" / "experiments" / "training.yaml"))
    parser.add_argument("--only", nargs="+", default=["resnet18-64px.train"])
    parser.add_argument("--modes", nargs="+", default=["compile-default"])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=PLAIN_SECONDS, help="each plain side's least time")
    parser.add_argument("--plain", choices=["eager", "compiled"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain:
        print(json.dumps(plain_loop(json.loads(sys.stdin.read()), args.plain == "compiled", args.seconds)))
        return 0
    config = configuration.load(args.config)
    worst = 1.0
    for model in args.only:
        for mode in args.modes:
            exp = configuration.experiment(config, model, mode, "cpu")
            eager_ms, mode_ms, ours = [], [], []
            with tempfile.TemporaryDirectory() as folder:
                for k in range(args.processes):
                    eager_ms.append(plain_in_fresh_process(exp, False, args.seconds)["samples_ms"])
                    mode_ms.append(plain_in_fresh_process(exp, True, args.seconds)["samples_ms"])
                    result = benchmark_job(exp.replace(measure=exp.measure.replace(processes=1)),
                                           Path(folder) / f"{k}.json")  # fmt: skip
                    if result["status"] != "ok":
                        raise RuntimeError(f"{model}/{mode}: {result['status']}: {result['error']}")
                    ours.append(result["speedup"]["value"])
                    plain = statistics.median(eager_ms[-1]), statistics.median(mode_ms[-1])
                    print(f"{model}/{mode} process {k + 1}: plain eager {plain[0]:.2f} ms, plain compiled "
                          f"{plain[1]:.2f} ms ({plain[0] / plain[1]:.3f}x); compilebench "
                          f"{statistics.median(result['eager_latency_ms']):.2f} vs {result['stats']['median_ms']:.2f}"
                          f" ms ({ours[-1]:.3f}x)", flush=True)  # fmt: skip
            plain = stats.unpaired(
                [Timed(np.asarray(x), 1) for x in eager_ms], [Timed(np.asarray(x), 1) for x in mode_ms]
            )
            plain_speedup, (low, high) = plain.value, plain.ci95
            compilebench_speedup = statistics.median(ours)
            ratio = compilebench_speedup / plain_speedup
            worst = max(worst, ratio, 1 / ratio) if math.isfinite(ratio) else math.inf
            print(f"{model}/{mode}: plain speedup {plain_speedup:.3f} (95% CI {low:.3f}-{high:.3f}, "
                  f"{args.processes}+{args.processes} processes); compilebench {compilebench_speedup:.3f} "
                  f"(processes: {', '.join(f'{s:.3f}' for s in ours)}); ratio {ratio:.3f}", flush=True)  # fmt: skip
    print(f"worst ratio (either way): {worst:.3f}; target within 0.90-1.10")
    return 0


if __name__ == "__main__":
    sys.exit(main())
