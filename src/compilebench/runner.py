"""One experiment (model x mode x hardware) from build to result record."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass

import torch

from . import compile_phases, correctness, profiling, quantization, replication, stats, streams, timing, wrappers
from .dynamo_counters import CompilerHealth
from .errors import Unsupported
from .generation import Generation, GreedyGenerator, summarize_tokens
from .machine import Load
from .memory import PeakMemory, device_free_bytes
from .models import Bundle, build, estimated_activation_bytes, parameter_bytes
from .records import Experiment, Result, error_info, now, result_header

log = logging.getLogger(__name__)


def reference_outputs(exp: dict) -> dict:
    """The eager float32 output that every mode of this model is checked against, and the same model's output in
    float64 (weights and inputs, no autocast) where it can run so; else why not, under `float64_missing`."""
    bundle = build(exp["model"], exp["spec"], exp["seed"], exp["device"])
    outputs = _eager_outputs(bundle, exp)
    missing = _float64_obstacle(bundle, exp)
    if missing is None:
        try:
            _to_float64(bundle)
            outputs["float64"] = _eager_outputs(bundle, exp)["output"].double()
        except Exception as exc:  # a model that cannot run in float64 keeps the float32 rule
            missing = f"the model does not run in float64: {type(exc).__name__}: {str(exc)[:300]}"
    if missing is not None:
        log.info("no float64 reference: %s", missing)
        outputs["float64_missing"] = missing
    return outputs


def _eager_outputs(bundle: Bundle, exp: dict) -> dict:
    with torch.no_grad():
        if bundle.causal_lm is None:
            return {"output": bundle.module(*bundle.inputs).float().cpu()}
        clock = timing.Clock(exp["device"])
        generation = GreedyGenerator(
            bundle.causal_lm, bundle.causal_lm, bundle.inputs[0], exp["spec"]["new_tokens"], clock
        )()
        return {"output": generation.prefill_logits.float().cpu(), "tokens": generation.tokens.cpu()}


def _float64_obstacle(bundle: Bundle, exp: dict) -> str | None:
    """Why the model's float64 copy and one forward pass of it would not fit where it runs, or None."""
    weights = parameter_bytes(bundle.causal_lm or bundle.module, bytes_per_element=8)
    activations = estimated_activation_bytes(exp["model"], exp["spec"], bytes_per_element=8) or 0
    free = device_free_bytes(exp["device"])
    if free is not None and weights + activations > free / 2:
        return (
            f"its float64 weights and one forward pass need {(weights + activations) / 2**30:.1f} GiB, more than "
            f"half the {free / 2**30:.1f} GiB free"
        )
    return None


def _to_float64(bundle: Bundle) -> None:
    """The built model in float64, in place: its weights and its floating-point inputs."""
    (bundle.causal_lm or bundle.module).double()
    bundle.inputs = tuple(x.double() if x.is_floating_point() else x for x in bundle.inputs)


def run(
    exp: Experiment,
    *,
    reference: dict[str, torch.Tensor] | None = None,
    environment: dict | None = None,
    caches_given: bool = False,
    cache_bundle: str | None = None,
) -> Result:
    """Measure one experiment. Never raises: failures become the record's status.

    `caches_given`: the job has pointed inductor and Triton at caches of its own (which a warm start then
    reuses), so no private ones are made here. `cache_bundle`: where to save torch's portable cache bundle
    after the first call, for a start from it."""
    result: Result = {**result_header(exp), "environment": environment or {}}
    try:
        with ExitStack() as stack:
            if exp["measure"]["private_cache"] and not caches_given:
                stack.enter_context(private_compile_cache())
            measured = _measure_stream(exp) if exp["spec"].get("stream") else _measure(exp, reference, cache_bundle)
            result.update(measured)
    except Unsupported as exc:
        result.update(result_header(exp, "unsupported", str(exc), started_at=result["started_at"]))
    except Exception as exc:  # any failure is data, reported with its reason
        error = error_info(exc)
        result.update(
            result_header(
                exp, "failed", error["message"], traceback=error["traceback"], started_at=result["started_at"]
            )
        )
    finally:
        result["finished_at"] = now()
    log.info("%s/%s/%s: %s", exp["hardware"], exp["model"], exp["mode"], result["status"])
    return result


class private_compile_cache:
    """An empty inductor and Triton cache for this run, so compile time is a cold compile."""

    KEYS = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")

    def __enter__(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="compilebench-cache-")
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


def first_call(exp: Experiment, cache_bundle: str | None = None) -> dict:
    """A start of the experiment in this fresh process: build, wrap, and time the first call alone, which reads
    whatever compile caches are there (a warm start), after loading `cache_bundle` when given."""
    spec, device, settings = exp["spec"], exp["device"], exp["mode_settings"]
    loaded = None
    if cache_bundle:
        with open(cache_bundle, "rb") as handle:
            loaded = torch.compiler.load_cache_artifacts(handle.read())
    bundle = build(exp["model"], spec, exp["seed"], device)
    clock = timing.Clock(device)
    workdir = tempfile.TemporaryDirectory(prefix="compilebench-work-")
    with workdir, torch.no_grad(), wrappers.precision(device, spec["dtype"]), wrappers.configured(settings):
        compile_phases.start()
        before = wrappers.generated_code()
        prepared = callables(bundle, exp, clock, workdir.name)
        first_ms, _ = clock.time(prepared.call)
        effect = wrappers.settings_effect(settings, before)
    return {
        "first_call_s": first_ms / 1e3,
        "settings_effect": effect,
        "compile_phases": compile_phases.read(),
        "cache_hits": compile_phases.cache_hits(),
        "bundle_loaded": loaded is not None if cache_bundle else None,
    }


def _measure(exp: dict, reference: dict[str, torch.Tensor] | None, cache_bundle: str | None = None) -> dict:
    spec, settings, device = exp["spec"], exp["measure"], exp["device"]
    memory = PeakMemory(device)
    memory.baseline()
    log.info("building %s (%s %s, %s weights)", exp["model"], spec["source"], spec["arch"], spec["weights"])
    bundle = build(exp["model"], spec, exp["seed"], device)
    clock = timing.Clock(device)
    health = CompilerHealth()
    health.start()
    workdir = tempfile.TemporaryDirectory(prefix="compilebench-work-")  # an export mode's package
    mode_settings = exp["mode_settings"]
    with workdir, torch.no_grad(), wrappers.precision(device, spec["dtype"]), wrappers.configured(mode_settings):
        compile_phases.start()
        before = wrappers.generated_code()
        prepared = callables(bundle, exp, clock, workdir.name)
        call, eager_call, generator = prepared.call, prepared.eager, prepared.generator
        log.info("first call (compiles for compile modes)")
        first_ms, _ = clock.time(call)
        phases = compile_phases.read()
        effect = wrappers.settings_effect(mode_settings, before)
        if cache_bundle:
            _save_cache_bundle(cache_bundle)
        log.info("first call took %.2f s; warm-up (%d iterations)", first_ms / 1e3, settings["warmup"])
        load = Load()
        warmup_ms = timing.warm_up(call, clock, settings["warmup"])
        loop = {k: settings[k] for k in ("iterations", "min_time_s", "max_iterations")}
        # Eager is timed against a second eager callable in the same blocks: the A/A ratio is its noise floor.
        eager_warmup_ms = timing.warm_up(eager_call, clock, settings["warmup"] + 1)
        plan = timing.plan_blocks(settings, eager_warmup_ms, warmup_ms or [clock.time(call)[0]])
        # The mode alone, half before its interleaved phase and half after, so that slow drift moves both alike.
        alone = exp["mode"] != "eager"
        steady_loop = {**loop, "min_time_s": settings["steady_state_s"] / 2}
        alone_ms = timing.alone(call, clock, warmup=plan.warmup, **steady_loop) if alone else None
        first = len(generator.history) if generator else 0
        eager_ms, latency_ms, blocks = timing.interleaved(eager_call, call, clock, plan=plan, **loop)
        timed_generations = timing.kept(generator.history[first:], plan.warmup, plan.mode) if generator else None
        if alone:
            log.info("timing the mode alone again, for its steady state")
            alone_ms += timing.alone(call, clock, warmup=plan.warmup, **steady_loop)
        machine = load.report()
        if machine["busy"] is True:
            log.warning("other work used the machine while this process measured: %s", machine)
        # A copy: a CUDA-graph replay (profiling below) may overwrite the buffer of a previous output.
        output = call().clone() if generator is None else generator.history[-1]
        # Eager in the same precision as the mode: its own error against float64 is the yardstick.
        eager_output = eager_call().clone() if generator is None else eager_call.history[-1]
        peak_memory = memory.report()
        compiler = health.report()
        profiled = None
        if settings["profile"]:
            profiled = profiling.profile(call, clock, settings["profile_iterations"], settings["trace"])
        workload = _workload(bundle, spec, prepared.quantization)
    if reference is None:
        log.info("computing the eager float32 reference")
        reference = reference_outputs(exp)
    quantize = mode_settings.get("quantize")
    check = _check(bundle, output, eager_output, reference, compute_dtype(spec), quantize and quantize["min_cosine"])
    compile_s = cold_compile_s(prepared.preparation, first_ms / 1e3)
    record = {
        "compile_s": compile_s,
        "compile_phases": phases,
        "compile_unexplained_s": compile_s - sum(phases.values()) if phases else None,
        # An exported package's warm start is its load and first call, as a deployment pays them.
        "compile_warm_s": (
            prepared.preparation["load_s"] + first_ms / 1e3 if "load_s" in prepared.preparation else None
        ),
        "compile_bundle_s": None,
        "preparation": {**prepared.preparation, "first_call_s": first_ms / 1e3},
        "warmup_ms": warmup_ms,
        "latency_ms": latency_ms,
        "stats": stats.summarize(latency_ms, resamples=settings["bootstrap_resamples"], seed=exp["seed"]),
        "memory": peak_memory,
        "correctness": check,
        "compiler": compiler,
        "workload": workload,
    }
    if prepared.quantization:
        record["quantization"] = prepared.quantization
    if profiled:
        record["profile"] = profiled
    median_s = record["stats"]["median_ms"] / 1e3
    record["throughput"] = {"samples_per_s": spec["batch_size"] / median_s}
    block_s = None if settings.get("interleave_block") else settings["interleave_block_s"]
    record["interleave"] = plan.record(blocks, block_s)
    record["settings_effect"] = effect
    record["machine"] = machine
    eager = exp["mode"] == "eager"
    this_process = {
        "latency_ms": latency_ms,
        "twin_latency_ms" if eager else "eager_latency_ms": eager_ms,
        "interleave": record["interleave"],
        "steady_state": {"latency_ms": alone_ms},
    }
    record.update(replication.interleaved_fields([this_process], settings, exp["seed"], eager=eager))
    if record.get("steady_state", {}).get("flagged"):
        log.warning("interleaving changed the mode's median: %s", record["steady_state"])
    record["processes"] = [replication.process_record(record)]
    if timed_generations:
        record["generation"] = summarize_tokens(timed_generations, spec["batch_size"])
        record["throughput"]["tokens_per_s"] = record["generation"]["tokens_per_s"]
    return record


def _measure_stream(exp: dict) -> dict:
    """A shape stream: eager and the mode over the same sequence of shapes in alternating passes, call by call."""
    spec, device, mode_settings = exp["spec"], exp["device"], exp["mode_settings"]
    if mode_settings["kind"] not in ("eager", "compile"):
        raise Unsupported(f"a shape stream runs eager and compile modes; {mode_settings['kind']} fixes one shape")
    bundle = build(exp["model"], spec, exp["seed"], device)
    clock = timing.Clock(device)
    health = CompilerHealth()
    health.start()
    with tempfile.TemporaryDirectory(prefix="compilebench-work-") as workdir, torch.no_grad():
        with wrappers.precision(device, spec["dtype"]), wrappers.configured(mode_settings):
            compile_phases.start()
            options = {"device": device, "dtype": spec["dtype"], "workdir": workdir}
            fn, _ = wrappers.wrap(bundle.module, mode_settings, bundle.inputs, **options)
            record = streams.measure(bundle, exp, fn, clock)
    record["compiler"] = health.report()
    stream = record["stream"]
    # The stream's calls as served, compiles included: what `runs.csv` summarizes for it.
    record["latency_ms"] = [call["latency_ms"] for call in stream["calls"]]
    measure = exp["measure"]
    record["stats"] = stats.summarize(record["latency_ms"], resamples=measure["bootstrap_resamples"], seed=exp["seed"])
    record["correctness"] = {
        "passed": stream["correct"],
        "rule": "stream",
        "criterion": f"at every distinct {stream['axis']}: the mode's output against eager's at that shape",
    }
    return record


def _save_cache_bundle(path: str) -> None:
    """torch's portable bundle of what this process's compile wrote to its caches; nothing where torch lacks it."""
    save = getattr(torch.compiler, "save_cache_artifacts", None)
    artifacts = save() if save else None
    if artifacts:
        with open(path, "wb") as handle:
            handle.write(artifacts[0])


def compute_dtype(spec: dict) -> str:
    """The precision the arithmetic runs in: autocast's, else the weights' own."""
    return spec["dtype"] if spec["dtype"] != "float32" else spec.get("weights_dtype") or "float32"


def _workload(bundle: Bundle, spec: dict, quantized: dict | None = None) -> dict:
    """What one call must do, for the fraction of the hardware's limit it reaches; a quantized mode reads its
    quantized weights (and the float ones beside them)."""
    weights = quantized["weight_bytes_quantized"] if quantized else parameter_bytes(bundle.causal_lm or bundle.module)
    work = {"compute_dtype": compute_dtype(spec), "parameter_bytes": weights}
    if bundle.causal_lm is None:
        work["flops_per_call"] = profiling.flops_per_call(bundle.module, bundle.inputs)
    return work


@dataclass
class Prepared:
    """What is timed: the mode's call and eager's, the generator for text generation, and what preparing took."""

    call: Callable
    eager: Callable
    generator: GreedyGenerator | None
    preparation: dict[str, float]
    quantization: dict | None = None  # what quantizing the mode's copy of the model did


def cold_compile_s(preparation: dict[str, float], first_call_s: float) -> float:
    """What compiling costs before the first result: scripting plus the first call for jit, export and package
    build for export (its load and first call are reported apart, as a deployment pays them), the first call
    for lazy modes."""
    if "export_s" in preparation:
        return preparation["export_s"] + preparation["package_s"]
    return preparation.get("script_s", 0.0) + first_call_s


def callables(bundle: Bundle, exp: dict, clock: timing.Clock, workdir: str) -> Prepared:
    """The timed call for the mode and for eager; generators too for text generation."""
    spec, device, settings = exp["spec"], exp["device"], exp["mode_settings"]
    options = {"device": device, "dtype": spec["dtype"], "workdir": workdir}
    model, quantized = bundle.causal_lm or bundle.module, None
    if settings.get("quantize"):  # a copy: eager and the correctness yardstick stay float
        key = f"mode_definitions.{exp['mode']}.quantize"
        model, quantized = quantization.quantized_copy(model, settings["quantize"], key)
        log.info("quantized with torchao: %s", {k: quantized[k] for k in ("method", "quantized_share")})
    if settings.get("mark_dynamic"):
        streams.mark_dynamic(bundle.inputs, settings["mark_dynamic"])
    if bundle.causal_lm is None:
        fn, preparation = wrappers.wrap(model, settings, bundle.inputs, **options)
        inputs = bundle.inputs
        return Prepared(lambda: fn(*inputs), lambda: bundle.module(*inputs), None, preparation, quantized)
    if settings["kind"] == "jit":
        raise Unsupported("TorchScript cannot capture generation with a KV cache; use eager or a compile mode")
    if settings["kind"] == "export":
        raise Unsupported("compilebench does not export a generation loop with a KV cache; use eager or a compile mode")
    log.info("generating %d new tokens per iteration", spec["new_tokens"])
    step, preparation = wrappers.wrap(model, settings, bundle.inputs, **options)
    prompt = bundle.inputs[0]
    generator = GreedyGenerator(model, step, prompt, spec["new_tokens"], clock)
    eager = GreedyGenerator(bundle.causal_lm, bundle.causal_lm, prompt, spec["new_tokens"], clock)
    return Prepared(generator, eager, generator, preparation, quantized)


def _check(
    bundle: Bundle,
    output: torch.Tensor | Generation,
    eager_output: torch.Tensor | Generation,
    reference: dict,
    dtype: str,
    min_cosine: float | None = None,
) -> dict:
    generation = isinstance(output, Generation)
    logits = output.prefill_logits if generation else output
    eager_logits = eager_output.prefill_logits if generation else eager_output
    check = correctness.compare(
        reference["output"],
        logits,
        dtype,
        float64=reference.get("float64"),
        eager=eager_logits,
        float64_missing=reference.get("float64_missing"),
        min_cosine=min_cosine,
    )
    if generation:
        check.update(correctness.compare_tokens(reference["tokens"], output.tokens))
    elif bundle.labels:
        check["top5"] = correctness.top5(output, bundle.labels)
    return check
