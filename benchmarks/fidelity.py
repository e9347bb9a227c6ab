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

    python benchmarks/fidelity.py [--config config/config.yaml] [--only resnet18] [--modes jit] [--processes 3]
    python benchmarks/fidelity.py --separate --only resnet18 vit-tiny.bs8 --modes compile-default

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
import time
from pathlib import Path

from compilebench.cli import benchmark_job
from compilebench.configuration import config as configuration
from compilebench.core.experiment import Experiment
from compilebench.parent.jobs import apply_hardware
from compilebench.worker.machine import parallel_capacity

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_MODELS = ("resnet18", "vit-tiny", "llama-tiny")
PLAIN_SECONDS = 3.0  # each side of a plain measurement runs at least this long, and 100 calls


def plain_measurement(exp: dict) -> dict:
    """Eager alone, then the mode alone, in this process, as a 20-line script would time them: from the
    experiment's JSON form, with compilebench's model builder and nothing else of it."""
    torch, settings, model, inputs, call = _plain_setup(exp)
    with torch.no_grad():
        eager_ms = _median_ms(call(model), exp["measure"]["warmup"])
        compiled = call(_plain_mode(torch, model, inputs, settings))
        compiled()
        mode_ms = _median_ms(compiled, exp["measure"]["warmup"])
    return {"eager_ms": eager_ms, "mode_ms": mode_ms, "threads": torch.get_num_threads()}


def _plain_setup(exp: dict):
    """torch with the mode's inductor options set, the model and its inputs, and `call`: the timed call of a model
    or of its compiled form (a forward on the inputs, or greedy generation of the experiment's new tokens)."""
    apply_hardware(exp["hardware_env"], exp["threads"])
    import torch

    from compilebench.core.experiment import ModelSpec
    from compilebench.worker.models import build

    settings = exp["mode_settings"]
    _set_inductor_options(torch, settings)
    spec = ModelSpec.from_json(exp["spec"])
    bundle = build(exp["model"], spec, exp["seed"], exp["device"])
    if bundle.causal_lm is None:
        inputs = bundle.inputs
        return torch, settings, bundle.module, inputs, lambda fn: lambda: fn(*inputs)
    lm, prompt = bundle.causal_lm, bundle.inputs[0]
    return torch, settings, lm, bundle.inputs, lambda step: _greedy(torch, lm, step, prompt, spec.new_tokens)


def _greedy(torch, lm, step, prompt, new_tokens: int):
    """Greedy generation as a user writes it for a compiled decoder: a static KV cache, one `step` call per
    token, the prompt in one call."""
    import inspect

    from transformers import StaticCache

    cache = StaticCache(config=lm.config, max_cache_len=prompt.shape[1] + new_tokens)
    keyword = "cache" if "cache" in inspect.signature(lm.forward).parameters else "past_key_values"

    def generate():
        cache.reset()
        ids, position = prompt, torch.arange(prompt.shape[1], device=prompt.device)
        for _ in range(new_tokens):
            logits = step(input_ids=ids, **{keyword: cache}, cache_position=position, use_cache=True).logits
            ids, position = logits[:, -1:].argmax(-1), position[-1:] + 1
        return ids

    return generate


def _set_inductor_options(torch, settings: dict) -> None:
    for option, value in _inductor_options(settings).items():
        *parents, leaf = option.split(".")
        target = torch._inductor.config
        for parent in parents:
            target = getattr(target, parent)
        setattr(target, leaf, value)


def _plain_mode(torch, model, inputs: tuple, settings: dict):
    """The mode as a practitioner writes it: torch.compile, TorchScript, or an AOTInductor package."""
    if settings["kind"] == "compile":
        return torch.compile(model, backend=settings["backend"], mode=settings["mode"], dynamic=settings["dynamic"])
    if settings["kind"] == "jit":
        traced = torch.jit.script(model) if settings["method"] == "script" else torch.jit.trace(model, inputs)
        traced = torch.jit.freeze(traced.eval()) if settings["freeze"] else traced
        return torch.jit.optimize_for_inference(traced) if settings["optimize_for_inference"] else traced
    exported = torch.export.export(model, inputs, strict=settings["strict"])
    with tempfile.TemporaryDirectory() as folder:
        package = torch._inductor.aoti_compile_and_package(exported, package_path=f"{folder}/model.pt2")
        return torch._inductor.aoti_load_package(package)


def plain_side(exp: dict, side: str) -> dict:
    """One side alone in this process, eager or the mode, as a user who runs only that one times it: every call's
    milliseconds, and the machine's parallel speedup before and after (the machine's state the side met)."""
    import resource

    torch, settings, model, inputs, call = _plain_setup(exp)
    before = parallel_capacity("cpu")["parallel_speedup"]
    with torch.no_grad():
        fn = call(model if side == "eager" else _plain_mode(torch, model, inputs, settings))
        fn()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        samples = _samples_ms(fn, exp["measure"]["warmup"])
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return {
        "samples_ms": samples,
        "parallel_speedup": [before, parallel_capacity("cpu")["parallel_speedup"]],
        "faults_per_call": faults / (len(samples) + exp["measure"]["warmup"]),
    }


def _inductor_options(settings: dict) -> dict:
    if settings["kind"] == "export" or (settings["kind"] == "compile" and settings["backend"] == "inductor"):
        return dict(settings["options"])
    return {}


def _samples_ms(fn, warmup: int, seconds: float = PLAIN_SECONDS) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    begin = time.perf_counter()
    while len(times) < 100 or time.perf_counter() - begin < seconds:
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def _median_ms(fn, warmup: int, seconds: float = PLAIN_SECONDS) -> float:
    return statistics.median(_samples_ms(fn, warmup, seconds))


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


def in_fresh_process(exp: Experiment, side: str = "both") -> dict:
    """A plain measurement in a fresh process that starts with the hardware entry's env (the memory allocator's
    settings among them are read as a process starts), as compilebench's jobs do."""
    done = subprocess.run(
        [sys.executable, __file__, "--plain", side],
        input=json.dumps(exp.to_json()),
        capture_output=True,
        text=True,
        env={**os.environ, **exp.hardware_env},
    )
    if done.returncode != 0:
        raise RuntimeError(f"the plain measurement of {exp.model}/{exp.mode} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def selected(config: dict, hardware: str, only: list[str] | None, modes: list[str] | None) -> list[Experiment]:
    names = only or [m for m in config["models"] if m.split(".")[0] in DEFAULT_MODELS]
    experiments = []
    for model in names:
        for mode in [
            m
            for m in modes or configuration.model_modes(config, model)
            if m in configuration.model_modes(config, model)
        ]:
            exp = configuration.experiment(config, model, mode, hardware)
            if mode == "eager" or (exp.spec.task == "text-generation" and exp.mode_settings.kind != "compile"):
                continue
            experiments.append(exp.replace(measure=exp.measure.replace(warm_start=False, bundle_start=False)))
    return experiments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--hardware", default="cpu")
    parser.add_argument("--only", nargs="+", help="models (or sweep points) to check")
    parser.add_argument("--modes", nargs="+", help="modes to check (default: every mode of each model but eager)")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--separate", action="store_true", help="eager and the mode in separate fresh processes")
    parser.add_argument("--plain", choices=("both", "eager", "mode"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain:
        exp = json.load(sys.stdin)
        print(json.dumps(plain_measurement(exp) if args.plain == "both" else plain_side(exp, args.plain)))
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
                plain.append(in_fresh_process(exp))
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
                    measured = in_fresh_process(exp, side)
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
