"""Why can eager beside a compiled mode run slower than eager alone? One fresh process per experiment
times eager in phases around the mode, with plain loops (no compilebench timing code):

  fresh        eager before anything is compiled
  mode         the compiled mode alone, after its first call
  after        eager again, after the mode ran (nothing interleaved yet)
  interleaved  eager and the mode in alternating blocks of `--block` calls, each side's median
  workers      eager after inductor's compile workers are shut down
  own process  eager in a second fresh process that never compiles (the eager job's view)

Each figure is a median over at least `--seconds` (and 100 calls), and printed with its ratio to `fresh`: a
ratio above 1 in `after` is a compile aftermath, in `interleaved` alone an effect of alternating.

    python benchmarks/validation/eager_beside.py [--only vit-tiny.bs8 llama-tiny] [--modes compile-default]
    python benchmarks/validation/eager_beside.py --compile-threads 1     # inductor compiles in this process
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from plain import ROOT, plain_mode, plain_setup, samples_ms, selected

from compilebench.configuration import config as configuration


def median_ms(fn, seconds: float) -> float:
    return statistics.median(samples_ms(fn, 3, seconds))


def interleaved_ms(eager, mode, seconds: float, block: int) -> tuple[float, float]:
    sides: dict[str, list[float]] = {"eager": [], "mode": []}
    begin = time.perf_counter()
    while time.perf_counter() - begin < seconds:
        for side, fn in (("eager", eager), ("mode", mode)):
            for _ in range(block):
                start = time.perf_counter()
                fn()
                sides[side].append((time.perf_counter() - start) * 1e3)
    return statistics.median(sides["eager"]), statistics.median(sides["mode"])


def phases(exp: dict, seconds: float, block: int, compile_threads: int | None) -> dict:
    torch, settings, model, inputs, call = plain_setup(exp)
    if compile_threads is not None:
        torch._inductor.config.compile_threads = compile_threads
    eager = call(model)
    out = {}
    with torch.no_grad():
        out["fresh"] = median_ms(eager, seconds)
        if exp.get("eager_only"):
            return out
        mode = call(plain_mode(torch, model, inputs, settings))
        mode()
        out["mode"] = median_ms(mode, seconds)
        out["after"] = median_ms(eager, seconds)
        out["interleaved"], out["mode interleaved"] = interleaved_ms(eager, mode, 2 * seconds, block)
        from torch._inductor.async_compile import shutdown_compile_workers

        shutdown_compile_workers()
        out["workers"] = median_ms(eager, seconds)
    return out


def in_fresh_process(exp: dict, args: argparse.Namespace) -> dict:
    command = [sys.executable, __file__, "--worker", "--seconds", str(args.seconds), "--block", str(args.block)]
    if args.compile_threads is not None:
        command += ["--compile-threads", str(args.compile_threads)]
    done = subprocess.run(command, input=json.dumps(exp), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{exp['model']}/{exp['mode']}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--hardware", default="cpu")
    parser.add_argument("--only", nargs="+", default=["vit-tiny.bs8", "llama-tiny"])
    parser.add_argument("--modes", nargs="+", default=["compile-default"])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--block", type=int, default=5, help="calls per block when interleaving")
    parser.add_argument("--compile-threads", type=int, help="inductor's compile_threads (default: its own)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(phases(json.load(sys.stdin), args.seconds, args.block, args.compile_threads)))
        return
    config = configuration.load(args.config)
    for exp in selected(config, args.hardware, args.only, args.modes):
        form = exp.to_json()
        figures = {**in_fresh_process(form, args), "own process": in_fresh_process({**form, "eager_only": True}, args)}
        figures["own process"] = figures["own process"]["fresh"]
        fresh = figures["fresh"]
        said = ", ".join(f"{name} {ms:.2f} ms ({ms / fresh:.2f})" for name, ms in figures.items())
        print(f"{exp.model}/{exp.mode}: {said}", flush=True)


if __name__ == "__main__":
    main()
