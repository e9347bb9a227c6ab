"""One measuring process of an experiment (model x mode x hardware), as named phases, from build to process record."""

from __future__ import annotations

import logging
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from ..core import kinds
from ..core.errors import Unsupported, UserError
from ..core.experiment import PINNED_ALLOCATOR, Experiment, ModelSpec
from ..core.files import scratch_folder
from ..core.records import error_info, now, result_header
from . import compile_phases, correctness, profiling, quantization, streams, timing, training, wrappers
from .dynamo_counters import CompilerHealth
from .generation import Generation, GreedyGenerator
from .kinds import of as kind_implementation
from .kinds.base import precision
from .machine import Load, parallel_capacity
from .memory import PeakMemory, device_free_bytes
from .models import BuiltModel, build, estimated_activation_bytes, parameter_bytes

log = logging.getLogger(__name__)


def reference_outputs(exp: Experiment) -> dict:
    """The eager float32 output that every mode of this model is checked against, and the same model's output in
    float64 (weights and inputs, no autocast) where it can run so; else why not, under `float64_missing`."""
    built = build(exp.model, exp.spec, exp.seed, exp.device)
    outputs = _eager_outputs(built, exp)
    missing = _float64_obstacle(built, exp)
    if missing is None:
        try:
            _to_float64(built)
            outputs["float64"] = _eager_outputs(built, exp)["output"].double()
        except Exception as exc:  # a model that cannot run in float64 keeps the float32 rule
            missing = f"the model does not run in float64: {type(exc).__name__}: {str(exc)[:300]}"
    if missing is not None:
        log.info("no float64 reference: %s", missing)
        outputs["float64_missing"] = missing
    return outputs


def _eager_outputs(built: BuiltModel, exp: Experiment) -> dict:
    with torch.no_grad():
        if built.causal_lm is None:
            return {"output": built.module(*built.inputs).float().cpu()}
        clock = timing.Clock(exp.device)
        generation = GreedyGenerator(built.causal_lm, built.causal_lm, built.inputs[0], exp.spec.new_tokens, clock)()
        return {"output": generation.prefill_logits.float().cpu(), "tokens": generation.tokens.cpu()}


def _float64_obstacle(built: BuiltModel, exp: Experiment) -> str | None:
    """Why the model's float64 copy and one forward pass of it would not fit where it runs, or None."""
    weights = parameter_bytes(built.causal_lm or built.module, bytes_per_element=8)
    activations = estimated_activation_bytes(exp.model, exp.spec, bytes_per_element=8) or 0
    free = device_free_bytes(exp.device)
    if free is not None and weights + activations > free / 2:
        return (
            f"its float64 weights and one forward pass need {(weights + activations) / 2**30:.1f} GiB, more than "
            f"half the {free / 2**30:.1f} GiB free"
        )
    return None


def _to_float64(built: BuiltModel) -> None:
    """The built model in float64, in place: its weights and its floating-point inputs."""
    (built.causal_lm or built.module).double()
    built.inputs = tuple(x.double() if x.is_floating_point() else x for x in built.inputs)


def measure_process(
    exp: Experiment,
    *,
    reference: dict[str, torch.Tensor] | None = None,
    environment: dict | None = None,
    caches_given: bool = False,
    cache_artifacts: str | None = None,
    with_profile: bool = True,
) -> dict:
    """Measure one experiment in this process and return its process record: raw samples and what was seen, no
    summaries (`summaries` makes the result). Never raises: a failure becomes the record's status.

    `caches_given`: the job has pointed inductor and Triton at caches of its own (which a warm start then
    reuses), so no private ones are made here. `cache_artifacts`: where to save torch's portable cache artifacts
    after the first call, for a start from them. `with_profile`: False where only another process profiles."""
    record = {**result_header(exp), "environment": environment or {}}
    try:
        with ExitStack() as stack:
            if exp.measure.private_cache and not caches_given:
                stack.enter_context(private_compile_cache())
            record.update(measurement(exp, reference, cache_artifacts, with_profile))
    except Unsupported as exc:
        record.update(result_header(exp, "unsupported", str(exc), started_at=record["started_at"]))
    except Exception as exc:  # any failure is data, reported with its reason
        error = error_info(exc)
        explain = getattr(kind_implementation(exp.mode_settings), "explain_failure", None)
        error["message"] = explain(exp.mode_settings, error["message"]) if explain else error["message"]
        record.update(
            result_header(
                exp, "failed", error["message"], traceback=error["traceback"], started_at=record["started_at"]
            )
        )
    finally:
        record["finished_at"] = now()
    log.info("%s: %s", exp.name, record["status"])
    return record


class private_compile_cache:
    """An empty inductor and Triton cache for this run, so compile time is a cold compile."""

    KEYS = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")

    def __enter__(self):
        self.tmp = scratch_folder("compilebench-cache-")
        self.saved = {k: os.environ.get(k) for k in self.KEYS}
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(self.tmp.name, "inductor")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(self.tmp.name, "triton")
        return self

    def __exit__(self, *exc):
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self.tmp.cleanup()


@dataclass
class Process:
    """A measuring process's state, set up once (`measuring_process`) for every path that measures."""

    exp: Experiment
    model: BuiltModel
    clock: timing.Clock
    workdir: str  # an export mode's package lands here
    memory: PeakMemory
    health: CompilerHealth
    code_before: set[str]  # inductor's generated modules before the first compile


@contextmanager
def measuring_process(exp: Experiment) -> Iterator[Process]:
    """The model built, and everything its calls run inside: a clock, compiler counters and memory tracking from a
    clean start, no autograd, the experiment's precision and the mode's inductor configuration."""
    spec, device = exp.spec, exp.device
    memory = PeakMemory(device)
    memory.baseline()
    log.info("building %s (%s %s, %s weights)", exp.model, spec.source, spec.arch, spec.weights)
    model = build(exp.model, spec, exp.seed, device)
    health = CompilerHealth()
    health.start()
    with scratch_folder("compilebench-work-") as workdir, torch.no_grad():
        with precision(device, spec.dtype), wrappers.configured(exp.mode_settings):
            compile_phases.start()
            yield Process(exp, model, timing.Clock(device), workdir, memory, health, wrappers.generated_code())


def measurement(
    exp: Experiment, reference: dict | None = None, cache_artifacts: str | None = None, with_profile: bool = True
) -> dict:
    """The measurement, phase by phase: build, CPU probe, the machine's parallel capacity, eager alone, prepare,
    first call, warm-up and block plan, steady state and interleaved timing, capacity again, outputs, profile,
    workload, then correctness against the reference."""
    with measuring_process(exp) as process:
        probed = probe_cpu_isa(exp.device, machine_probe_folder()) if compiles_with_inductor(exp) else {}
        if exp.spec.stream:
            return {**measure_stream(process), **({"preparation": probed} if probed else {})}
        if exp.spec.train:
            return measure_training(process, probed, cache_artifacts, with_profile)
        capacity_before = parallel_capacity(exp.device)
        eager_alone = time_eager_alone(process)
        prepared = prepare(process)
        first = first_call(process, prepared)
        if cache_artifacts:
            save_cache_artifacts(cache_artifacts)
        load = Load()
        plan = warm_up_sides(process, prepared)
        timed = time_interleaved(process, prepared, plan)
        with_eager_alone(timed, eager_alone)
        machine = load.report()
        if capacity_before is not None:
            machine["capacity"] = {"before": capacity_before, "after": parallel_capacity(exp.device)}
        if machine["busy"] is True:
            log.warning("other work used the machine while this process measured: %s", machine)
        outputs = final_outputs(prepared)
        seen = {"memory": memory_report(process), "compiler": process.health.report()}
        profiled = profile(process, prepared) if with_profile else None
        work = workload(process.model, exp.spec, prepared.quantization)
    if reference is None:
        log.info("computing the eager float32 reference")
        reference = reference_outputs(exp)
    check = correctness_check(exp, process.model, outputs, reference)
    return {
        **first.record({**prepared.preparation, **probed}),
        **plan.record(),
        **timed,
        **seen,
        "machine": machine,
        "correctness": check,
        "workload": work,
        **({"quantization": prepared.quantization} if prepared.quantization else {}),
        **({"regions": prepared.regions} if prepared.regions else {}),
        **({"runtime": prepared.runtime} if prepared.runtime else {}),
        **({"profile": profiled} if profiled else {}),
    }


@dataclass(frozen=True)
class FirstCall:
    """The first call, timed alone (a compile mode compiles in it), and what the compile did."""

    seconds: float
    compile_phases: dict[str, float] | None
    settings_effect: dict

    def record(self, preparation: dict[str, float]) -> dict:
        compile_s = cold_compile_s(preparation, self.seconds)
        return {
            "compile_s": compile_s,
            "compile_phases": self.compile_phases,
            # An exported package's warm start is its load and first call, as a deployment pays them.
            "compile_warm_s": preparation["load_s"] + self.seconds if "load_s" in preparation else None,
            "compile_bundle_s": None,
            "preparation": {**preparation, "first_call_s": self.seconds},
            "settings_effect": self.settings_effect,
        }


def time_eager_alone(process: Process, call: Callable | None = None) -> tuple[list[float], list[int]] | None:
    """Eager timed alone before the mode is built (nothing compiled, quantized or traced yet in this process), as a
    user who runs only eager runs it, for as long as one half of the mode's own steady state, and its [page faults,
    calls]; None for eager. `call`: eager's call where it is not the model's (a training step)."""
    exp = process.exp
    if exp.mode == "eager":
        return None
    measure = exp.measure
    log.info("timing eager alone, before the mode is built")
    loop = {"iterations": measure.iterations, "max_iterations": measure.max_iterations}
    return timing.alone(
        call or eager_call(process), process.clock, warmup=measure.warmup, min_time_s=measure.steady_state_s / 2, **loop
    )


def with_eager_alone(timed: dict, eager_alone: tuple[list[float], list[int]] | None) -> dict:
    if eager_alone is not None:
        timed["eager_alone_latency_ms"] = eager_alone[0]
        timed["page_faults"]["eager_alone"] = [eager_alone[1]]
    return timed


def measure_training(process: Process, probed: dict, cache_artifacts: str | None, with_profile: bool) -> dict:
    """A training step (`models.NAME.train`), measured as an inference call is: eager's copies stepped k times and
    eager timed alone before the mode is built; the mode's copy stepped k times (its first step compiles) and
    checked against eager's; then both sides' steps warmed up and timed in interleaved blocks, split into forward,
    backward and optimizer, and their peak memory read."""
    exp, clock = process.exp, process.clock
    capacity_before = parallel_capacity(exp.device)
    runs = training.eager_runs(exp, process.model)
    eager_alone = time_eager_alone(process, runs.twin.step)
    options = {"device": exp.device, "dtype": exp.spec.dtype, "workdir": process.workdir, "names": names(exp)}
    mode, first_s, check = training.mode_run(exp, process.model, runs, clock, options)
    first = FirstCall(first_s, compile_phases.read(), wrappers.settings_effect(exp.mode_settings, process.code_before))
    passes = compile_phases.graphs_by_pass()
    if cache_artifacts:
        save_cache_artifacts(cache_artifacts)
    prepared = Prepared(mode.step, runs.eager.step, None, {})
    load = Load()
    plan = warm_up_sides(process, prepared)
    timed = with_eager_alone(time_interleaved(process, prepared, plan), eager_alone)
    machine = load.report()
    if capacity_before is not None:
        machine["capacity"] = {"before": capacity_before, "after": parallel_capacity(exp.device)}
    split = training.split_parts(runs.eager, mode, clock)
    check = training.finite_after_timing(check, runs.eager, mode)
    seen = {"memory": memory_report(process), "compiler": process.health.report()}
    profiled = profile(process, prepared) if with_profile else None
    work = workload(process.model, exp.spec)
    work.pop("flops_per_call", None)  # a forward pass's: not a step's
    return {
        **first.record(probed),
        **plan.record(),
        **timed,
        **seen,
        "machine": machine,
        "correctness": training.summary_check(check),
        "train_correctness": check,
        "training": {
            "optimizer": exp.spec.train.optimizer,
            "targets": runs.batch.targets,
            "split_ms": split,
            "memory_rule": training.MEMORY_RULE,  # the peaks: from processes of their own (`step_memory`)
            "allocator": {name: os.environ.get(name) for name in PINNED_ALLOCATOR},  # as this process ran
            "compiled_passes": passes,
        },
        "workload": work,
        **({"profile": profiled} if profiled else {}),
    }


def step_memory(exp: Experiment, side: str) -> dict:
    """A training experiment's `side` (eager or the mode) stepped alone in this process, for its peak memory."""
    with measuring_process(exp) as process:
        if side == "mode" and compiles_with_inductor(exp):
            probe_cpu_isa(exp.device, machine_probe_folder())  # the probe the measurement left, not one of its own
        options = {"device": exp.device, "dtype": exp.spec.dtype, "workdir": process.workdir, "names": names(exp)}
        return training.step_memory(exp, process.model, side, options)


def eager_call(process: Process) -> Callable[[], Any]:
    """The model as eager runs it: the built module on its inputs, or greedy generation with it."""
    built, spec = process.model, process.exp.spec
    if built.causal_lm is None:
        inputs = built.inputs
        return lambda: built.module(*inputs)
    return GreedyGenerator(built.causal_lm, built.causal_lm, built.inputs[0], spec.new_tokens, process.clock)


def first_call(process: Process, prepared: Prepared) -> FirstCall:
    log.info("first call (compiles for compile modes)")
    ms, _ = process.clock.time(prepared.call)
    phases = compile_phases.read()
    effect = wrappers.settings_effect(process.exp.mode_settings, process.code_before)
    log.info("first call took %.2f s", ms / 1e3)
    return FirstCall(ms / 1e3, phases, effect)


@dataclass(frozen=True)
class WarmedUp:
    """The warm-up calls of both sides, and the block plan sized from them."""

    warmup_ms: list[float]
    blocks: timing.BlockPlan

    def record(self) -> dict:
        return {"warmup_ms": self.warmup_ms}


def warm_up_sides(process: Process, prepared: Prepared) -> WarmedUp:
    measure, clock = process.exp.measure, process.clock
    log.info("warm-up (%d iterations)", measure.warmup)
    mode_ms = timing.warm_up(prepared.call, clock, measure.warmup)
    # Eager is timed against a second eager callable in the same blocks: the A/A ratio is its noise floor.
    eager_ms = timing.warm_up(prepared.eager, clock, measure.warmup + 1)
    return WarmedUp(mode_ms, timing.plan_blocks(measure, eager_ms, mode_ms or [clock.time(prepared.call)[0]]))


def time_interleaved(process: Process, prepared: Prepared, plan: WarmedUp) -> dict:
    """Eager and the mode in alternating blocks; a mode is also timed alone, half before and half after, so that
    slow drift moves both alike (its steady state). The samples as taken, each side's under its own key."""
    exp, clock = process.exp, process.clock
    measure, blocks = exp.measure, plan.blocks
    loop = {k: getattr(measure, k) for k in ("iterations", "min_time_s", "max_iterations")}
    alone = exp.mode != "eager"
    steady = {**loop, "min_time_s": measure.steady_state_s / 2}
    call, generator = prepared.call, prepared.generator
    halves = [timing.alone(call, clock, warmup=blocks.warmup, **steady)] if alone else []
    first = len(generator.history) if generator else 0
    both = timing.interleaved(prepared.eager, call, clock, plan=blocks, **loop)
    generations = timing.kept(generator.history[first:], blocks.warmup, blocks.mode) if generator else None
    if alone:
        log.info("timing the mode alone again, for its steady state")
        halves.append(timing.alone(call, clock, warmup=blocks.warmup, **steady))
    block_s = None if measure.interleave_block else measure.interleave_block_s
    short = timing.stopped_short(both.mode_ms, both.blocks, measure)
    timed = {
        "latency_ms": both.mode_ms,
        "interleave": blocks.record(both.blocks, block_s, [short] if short else []),
        "page_faults": {"mode_blocks": both.mode_faults, "eager_blocks": both.eager_faults},
    }
    for cap in timed["interleave"]["caps"]:
        log.warning("a cap applied: %s", cap)
    if alone:
        timed.update(eager_latency_ms=both.eager_ms, alone_latency_ms=[x for ms, _ in halves for x in ms])
        timed["alone_calls"] = [len(ms) for ms, _ in halves]
        timed["page_faults"]["mode_alone"] = [faults for _, faults in halves]
    else:
        timed["twin_latency_ms"] = both.eager_ms
    if generations:
        timed["generations"] = {
            "new_tokens": int(generations[0].tokens.shape[1]),
            "token_ms": [list(g.token_ms) for g in generations],
        }
    return timed


def final_outputs(prepared: Prepared) -> tuple:
    """The mode's last output and eager's, for the correctness check (eager in the mode's precision: its own
    error against float64 is the yardstick)."""
    if prepared.generator is not None:
        return prepared.generator.history[-1], prepared.eager.history[-1]
    # A copy: a CUDA-graph replay (profiling below) may overwrite the buffer of a previous output.
    return prepared.call().clone(), prepared.eager().clone()


def profile(process: Process, prepared: Prepared) -> dict | None:
    measure = process.exp.measure
    if not measure.profile:
        return None
    return profiling.profile(prepared.call, process.clock, measure.profile_iterations, measure.trace)


def measure_stream(process: Process) -> dict:
    """A shape stream: eager and the mode over the same sequence of shapes in alternating passes, call by call."""
    exp = process.exp
    settings = exp.mode_settings
    if not kinds.of(settings).streams:
        streaming = " and ".join(kinds.names(lambda kind: kind.streams))
        raise Unsupported(f"a shape stream runs {streaming} modes; {settings.kind} fixes one shape")
    model = process.model
    options = {"device": exp.device, "dtype": exp.spec.dtype, "workdir": process.workdir, "names": names(exp)}
    fn, _ = wrappers.wrap(model.module, settings, model.inputs, **options)
    record = streams.measure(model, exp, fn, process.clock)
    stream = record["stream"]
    return {
        **record,
        "memory": memory_report(process),
        "compiler": process.health.report(),
        "correctness": {
            "passed": stream["correct"],
            "rule": "stream",
            "criterion": f"at every distinct {stream['axis']}: the mode's output against eager's at that shape",
        },
    }


def memory_report(process: Process) -> dict:
    """The process's peak memory, and what the guard that refuses a shape that cannot fit estimated."""
    return {**process.memory.report(), **process.model.memory_estimate}


def save_cache_artifacts(path: str) -> None:
    """torch's portable cache artifacts of what this process's compile wrote to its caches; nothing where torch
    lacks them."""
    save = getattr(torch.compiler, "save_cache_artifacts", None)
    artifacts = save() if save else None
    if artifacts:
        with open(path, "wb") as handle:
            handle.write(artifacts[0])


def compute_dtype(spec: ModelSpec) -> str:
    """The precision the arithmetic runs in: autocast's, else the weights' own."""
    return spec.dtype if spec.dtype != "float32" else spec.weights_dtype or "float32"


def workload(model: BuiltModel, spec: ModelSpec, quantized: dict | None = None) -> dict:
    """What one call must do, for the fraction of the hardware's limit it reaches; a quantized mode reads its
    quantized weights (and the float ones beside them)."""
    weights = quantized["weight_bytes_quantized"] if quantized else parameter_bytes(model.causal_lm or model.module)
    work = {"compute_dtype": compute_dtype(spec), "parameter_bytes": weights}
    if model.causal_lm is None and (flops := profiling.flops_per_call(model.module, model.inputs)) is not None:
        work["flops_per_call"] = flops
    return work


@dataclass
class Prepared:
    """What is timed: the mode's call and eager's, the generator for text generation, and what preparing took."""

    call: Callable
    eager: Callable
    generator: GreedyGenerator | None
    preparation: dict[str, float]
    quantization: dict | None = None  # what quantizing the mode's copy of the model did
    regions: dict | None = None  # a regional compile: the stack compiled, block by block or as a nested region
    runtime: dict | None = None  # a runtime's mode: its version and what it runs with, as read back from it


def names(exp: Experiment) -> tuple[str, str]:
    """The mode's and the model's names as the config spells them (a sweep point's model is the swept one)."""
    return exp.mode or "", exp.spec.sweep_of or exp.spec.stream_of or exp.spec.train_of or exp.model


def compiles_with_inductor(exp: Experiment) -> bool:
    return kinds.of(exp.mode_settings).uses_inductor(exp.mode_settings)


def machine_probe_folder() -> str:
    """Where a measuring process keeps inductor's CPU probe programs for every later process on this machine: in its
    temporary folder, as inductor's own default cache, so that a cluster node never reads another node's answer.
    The process loads the compiled programs inside, so the folder is made private and refused where another user
    owns it or can write to it."""
    return private_folder(os.path.join(tempfile.gettempdir(), f"compilebench-cpu-probe-{os.getuid()}"))


def private_folder(path: str) -> str:
    """`path` as a folder only this user can write, made 0700 where it is missing; a folder that is a link, that
    another user owns or that group or others can write is refused with the path named, since code loaded from it
    would run in this process."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    found = os.lstat(path)
    problem = (
        "is not a folder (a link or a file)"
        if not stat.S_ISDIR(found.st_mode)
        else f"is owned by user id {found.st_uid}, not this user's {os.getuid()}"
        if found.st_uid != os.getuid()
        else f"can be written by other users (mode {stat.S_IMODE(found.st_mode):04o})"
        if found.st_mode & 0o022
        else None
    )
    if problem:
        raise UserError(
            f"The folder {path} {problem}; compilebench loads compiled programs from it, so it must be a folder "
            "of this user's own that no one else can write (mode 0700). Remove it, or set TMPDIR to a private folder."
        )
    return path


def probe_cpu_isa(device: str, folder: str | None = None) -> dict[str, float]:
    """`isa_probe_s`: inductor finding which vector instructions this CPU runs, which every CPU compile and package
    load needs first. It compiles small test programs into a cache folder (one that has them skips this): the
    caches in force, or `folder`, whose answer the process keeps for its compile in the caches in force. A phase of
    its own, so that a compile time is the model's and not a once-per-machine probe; nothing on a GPU."""
    if device != "cpu":
        return {}
    from torch._inductor import cpu_vec_isa

    begin = time.monotonic()
    with inductor_caches(folder):
        cpu_vec_isa.pick_vec_isa()  # kept for the process by torch
    return {"isa_probe_s": time.monotonic() - begin}


@contextmanager
def inductor_caches(folder: str | None) -> Iterator[None]:
    """Inductor's cache folder set to `folder` for the block (torch reads it at each write), the one in force
    after it; no change for None."""
    if folder is None:
        yield
        return
    before = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = before


# A runtime's steps before its first call: the ONNX export, OpenVINO's conversion, the session or compiled model.
RUNTIME_STEPS = ("onnx_export_s", "convert_s", "session_s", "compile_model_s")


def cold_compile_s(preparation: dict[str, float], first_call_s: float) -> float:
    """What compiling costs before the first result: scripting plus the first call for jit, export and package
    build for export (its load and first call are reported apart, as a deployment pays them), a runtime's export,
    conversion and session or compile (its first call apart, as for export), the first call for lazy modes."""
    if "export_s" in preparation:
        return preparation["export_s"] + preparation["package_s"]
    if runtime_steps := [preparation[step] for step in RUNTIME_STEPS if step in preparation]:
        return sum(runtime_steps)
    return preparation.get("script_s", 0.0) + first_call_s


def prepare(process: Process) -> Prepared:
    """The mode's settings in force on its own copy of the model: quantized where the mode says, dynamic axes
    marked, wrapped (jit and export do their work here); the timed call for the mode and for eager, generators
    too for text generation."""
    exp, built = process.exp, process.model
    spec, settings = exp.spec, exp.mode_settings
    options = {"device": exp.device, "dtype": spec.dtype, "workdir": process.workdir, "names": names(exp)}
    model, quantized = built.causal_lm or built.module, None
    if settings.quantize:  # a copy: eager and the correctness yardstick stay float
        key = f"mode_definitions.{exp.mode}.quantize"
        model, quantized = quantization.quantized_copy(model, settings.quantize, key)
        log.info("quantized with torchao: %s", {k: quantized[k] for k in ("method", "quantized_share")})
    if axes := getattr(settings, "mark_dynamic", None):  # a compile setting
        streams.mark_dynamic(built.inputs, axes)
    if built.causal_lm is None:
        fn, preparation = wrappers.wrap(model, settings, built.inputs, **options)
        inputs, compiled, runtime = built.inputs, preparation.pop("regions", None), preparation.pop("runtime", None)
        return Prepared(lambda: fn(*inputs), eager_call(process), None, preparation, quantized, compiled, runtime)
    if refusal := kinds.of(settings).generation_refusal:
        raise Unsupported(refusal)
    log.info("generating %d new tokens per iteration", spec.new_tokens)
    step, preparation = wrappers.wrap(model, settings, built.inputs, **options)
    prompt, clock, compiled = built.inputs[0], process.clock, preparation.pop("regions", None)
    generator = GreedyGenerator(model, step, prompt, spec.new_tokens, clock)
    return Prepared(generator, eager_call(process), generator, preparation, quantized, compiled)


def runtime_precision(exp: Experiment) -> str | None:
    """The precision a runtime mode computes in where it is not the model's own: OpenVINO's `precision: bf16`."""
    return kinds.of(exp.mode_settings).compute_precision(exp.mode_settings)


def correctness_check(exp: Experiment, model: BuiltModel, outputs: tuple, reference: dict) -> dict:
    """The mode's output against the reference, by the mode's own rule (a quantized mode's cosine, if any); a runtime
    computing a float32 model in bfloat16 by the reduced-precision rule, against eager's own error in bfloat16."""
    output, eager_output = outputs
    quantize = exp.mode_settings.quantize
    generation = isinstance(output, Generation)
    logits = output.prefill_logits if generation else output
    eager_logits = eager_output.prefill_logits if generation else eager_output
    dtype = compute_dtype(exp.spec)
    if runtime_precision(exp) == "bfloat16" and dtype == "float32":  # judged beside eager in bfloat16 autocast
        dtype = "bfloat16"
        with torch.no_grad(), torch.autocast(torch.device(exp.device).type, dtype=torch.bfloat16):
            eager_logits = model.module(*model.inputs).float()
    check = correctness.compare(
        reference["output"],
        logits,
        dtype,
        float64=reference.get("float64"),
        eager=eager_logits,
        float64_missing=reference.get("float64_missing"),
        min_cosine=quantize and quantize.min_cosine,
    )
    if generation:
        check.update(correctness.compare_tokens(reference["tokens"], output.tokens))
    elif model.labels:
        check["top5"] = correctness.top5(output, model.labels)
    return check
