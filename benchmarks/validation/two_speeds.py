"""Why a compiled model runs at two speeds on some machines: a plain measurement with one of compilebench's steps
added at a time, each in fresh processes with empty compile caches.

Each process builds the model (random weights), times eager, compiles it, and times the compiled model in blocks
of calls, then eager and the compiled model again, as a short script would; a variant adds one step a measuring
process takes before or around that (the machine's parallel-speedup probe, inductor's CPU probe, eager timed
alone first, interleaved blocks, one thread then all). It prints, per variant, each process's speedup and the
compiled model's block medians, and how many processes ran in the slow state (a block median past
`--slow-ratio` times the process's fastest block).

    python benchmarks/validation/two_speeds.py [--variants plain capacity_probe] [--processes 10] [--model resnet18]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VARIANTS = {
    "plain": "eager, then the compiled model, then both again",
    "capacity_probe": "the parallel-speedup probe (one thread, then all) before eager and after the timing",
    "isa_probe": "inductor's CPU probe run first, into a folder of its own",
    "threads_cycle": "torch.set_num_threads(1) and back before eager, with no matrix product",
    "eager_alone_first": "eager timed alone for 0.25 s before the build of the compiled model",
    "interleaved": "eager and the compiled model in alternating blocks, as compilebench times them",
    "passive_wait": "OMP_WAIT_POLICY=PASSIVE: idle OpenMP threads sleep instead of spinning",
    "no_compile_workers": "inductor's compile workers shut down after the compile",
    "one_thread": "torch.set_num_threads(1) for the whole process: does the slow state need two threads?",
}


def median_ms(fn, calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def one_process(variant: str, model_name: str, image_size: int, blocks: int, block_calls: int) -> dict:
    import torch
    import torchvision

    if variant == "one_thread":
        torch.set_num_threads(1)
    torch.manual_seed(0)
    model = getattr(torchvision.models, model_name)().eval()
    x = torch.randn(1, 3, image_size, image_size)
    eager = lambda: model(x)  # noqa: E731
    notes = {}
    with torch.no_grad():
        if variant == "capacity_probe":
            from compilebench.worker.machine import parallel_capacity

            notes["capacity_before"] = parallel_capacity("cpu")["parallel_speedup"]
        if variant == "threads_cycle":
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            torch.set_num_threads(threads)
        if variant == "isa_probe":
            from torch._inductor import cpu_vec_isa

            cpu_vec_isa.pick_vec_isa()
        for _ in range(5):
            eager()
        if variant == "eager_alone_first":
            begin = time.perf_counter()
            while time.perf_counter() - begin < 0.25:
                eager()
        eager_1 = median_ms(eager, 40)
        compiled_model = torch.compile(model)
        compiled = lambda: compiled_model(x)  # noqa: E731
        begin = time.perf_counter()
        compiled()
        notes["first_call_s"] = time.perf_counter() - begin
        if variant == "no_compile_workers":
            from torch._inductor.async_compile import shutdown_compile_workers

            shutdown_compile_workers()
        for _ in range(5):
            compiled()
        block_ms = []
        eager_blocks = []
        for _ in range(blocks):
            if variant == "interleaved":
                eager_blocks.append(median_ms(eager, block_calls))
            block_ms.append(median_ms(compiled, block_calls))
        eager_2 = statistics.median(eager_blocks) if eager_blocks else median_ms(eager, 40)
        compiled_2 = median_ms(compiled, 40)
        if variant == "capacity_probe":
            notes["capacity_after"] = parallel_capacity("cpu")["parallel_speedup"]
    return {
        "eager_ms": [eager_1, eager_2],
        "compiled_block_ms": block_ms,
        "compiled_after_ms": compiled_2,
        "speedup": (eager_1 + eager_2) / (statistics.median(block_ms) + compiled_2),
        "threads": torch.get_num_threads(),
        "openmp_libraries": sorted({line.split()[-1] for line in open("/proc/self/maps") if "gomp" in line}),
        **notes,
    }


def in_fresh_process(variant: str, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="compilebench-two-speeds-") as caches:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": caches, "TRITON_CACHE_DIR": caches}
        if variant == "passive_wait":
            env["OMP_WAIT_POLICY"] = "PASSIVE"
        shape = ["--model", args.model, "--image-size", str(args.image_size)]
        timing = ["--blocks", str(args.blocks), "--block-calls", str(args.block_calls)]
        command = [sys.executable, __file__, "--one", variant, *shape, *timing]
        done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{variant}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def slow(process: dict, fast_ms: float, ratio: float) -> bool:
    """Whether any stretch of the process's compiled calls ran past `ratio` times the machine's fast level."""
    return max(process["compiled_block_ms"] + [process["compiled_after_ms"]]) > ratio * fast_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--processes", type=int, default=10)
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--image-size", type=int, default=128)
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--block-calls", type=int, default=10)
    parser.add_argument("--slow-ratio", type=float, default=1.3, help="a stretch this much slower than the fast level")
    parser.add_argument("--json", type=Path, help="write every process's figures here")
    parser.add_argument("--one", choices=list(VARIANTS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_process(args.one, args.model, args.image_size, args.blocks, args.block_calls)))
        return
    # Rounds, each variant once a round in a shuffled order, so that a machine's slow stretch, or the process
    # before, falls on every variant alike.
    found: dict[str, list[dict]] = {variant: [] for variant in args.variants}
    rng = random.Random(0)
    for round_number in range(args.processes):
        for variant in rng.sample(args.variants, len(args.variants)):
            process = in_fresh_process(variant, args)
            found[variant].append(process)
            blocks = " ".join(f"{ms:.1f}" for ms in process["compiled_block_ms"])
            capacity = "".join(
                f", {end} {process[f'capacity_{end}']:.2f}x"
                for end in ("before", "after")
                if f"capacity_{end}" in process
            )
            print(f"round {round_number + 1} {variant}: speedup {process['speedup']:.2f}, eager "
                  f"{process['eager_ms'][0]:.1f}/{process['eager_ms'][1]:.1f} ms, compiled blocks {blocks}, "
                  f"after {process['compiled_after_ms']:.1f}{capacity}", flush=True)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))
    every_block = sorted(ms for processes in found.values() for p in processes for ms in p["compiled_block_ms"])
    fast_ms = every_block[len(every_block) // 10]  # the machine's fast level: the 10th percentile of every block
    print(f"\nfast level {fast_ms:.1f} ms; a process is slow where a stretch ran past {args.slow_ratio}x that")
    print(f"{'variant':<20} {'slow':>6} {'speedup (median, range)':>26} {'compiled ms':>12}  what it adds")
    for variant, processes in found.items():
        speedups = [p["speedup"] for p in processes]
        compiled = statistics.median(statistics.median(p["compiled_block_ms"]) for p in processes)
        slow_count = sum(slow(p, fast_ms, args.slow_ratio) for p in processes)
        print(f"{variant:<20} {slow_count:>3}/{len(processes):<2} {statistics.median(speedups):>8.2f} "
              f"({min(speedups):.2f}-{max(speedups):.2f})       {compiled:>8.1f}  {VARIANTS[variant]}")  # fmt: skip
    libraries = {lib for processes in found.values() for p in processes for lib in p["openmp_libraries"]}
    print(f"\nOpenMP runtimes loaded: {', '.join(sorted(libraries)) or 'none'}")


if __name__ == "__main__":
    main()
