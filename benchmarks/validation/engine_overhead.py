"""Does the engine measure what torch.utils.benchmark measures, and what does it add per iteration?

Prints two figures:
  1. the engine's eager median latency for resnet18 divided by
     torch.utils.benchmark.Timer.blocked_autorange's median (target 1.00 +/- 0.05);
  2. the engine's per-iteration overhead on a model that does nothing (target < 20 us).
Both are taken in one process, alternating engine and Timer rounds, so machine drift
hits them alike.

    python benchmarks/validation/engine_overhead.py [--rounds 5] [--threads N]
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.utils.benchmark as benchmark

from compilebench.analysis import summaries
from compilebench.configuration import config as configuration
from compilebench.core.experiment import Experiment
from compilebench.worker import runner, timing
from compilebench.worker.models import build


def engine_median_ms(exp: Experiment) -> float:
    result = summaries.combine(exp, [runner.measure_process(exp)])
    assert result["status"] == "ok", result["error"]
    return result["stats"]["median_ms"]


def timer_median_ms(fn, threads: int, min_run_time: float) -> float:
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads)
    return timer.blocked_autorange(min_run_time=min_run_time).median * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--seconds", type=float, default=2.0, help="each side's least time a round on resnet18")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    raw = {
        "models": {"resnet18": {"source": "torchvision", "arch": "resnet18"}},
        "measure": {"warmup": 10, "iterations": 50, "min_time_s": args.seconds, "private_cache": False},
    }
    exp = configuration.experiment(configuration.validate(raw), "resnet18", "eager", "cpu")
    bundle = build("resnet18", exp.spec, exp.seed, "cpu")
    model, inputs = bundle.module, bundle.inputs

    def resnet_call():
        with torch.no_grad():
            return model(*inputs)

    ratios = []
    for r in range(args.rounds):
        engine = engine_median_ms(exp)
        timer = timer_median_ms(resnet_call, args.threads, args.seconds)
        ratios.append(engine / timer)
        print(f"round {r + 1}: engine {engine:.3f} ms, Timer {timer:.3f} ms, ratio {engine / timer:.3f}")

    noop_input = torch.zeros(1)
    noop = torch.nn.Identity()
    clock = timing.Clock("cpu")
    overheads = []
    for _ in range(args.rounds):
        samples = timing.timed_loop(
            lambda: noop(noop_input), clock, iterations=10000, min_time_s=args.seconds / 4, max_iterations=100000
        )
        engine_us = statistics.median(samples) * 1e3
        timer_us = timer_median_ms(lambda: noop(noop_input), args.threads, args.seconds / 4) * 1e3
        overheads.append(engine_us - timer_us)
    print(
        f"resnet18 eager, {args.threads} threads: engine median / Timer median = {statistics.median(ratios):.3f} "
        f"(rounds: {', '.join(f'{x:.3f}' for x in ratios)}; target 1.00 +/- 0.05)"
    )
    print(
        f"per-iteration overhead on a no-op model: {statistics.median(overheads):.2f} us "
        f"(engine sample minus Timer's per-call time; target < 20 us)"
    )


if __name__ == "__main__":
    main()
