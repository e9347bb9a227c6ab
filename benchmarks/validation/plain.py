"""What the validation scripts share: a plain measurement as a short script would take it (compilebench's model
builder and nothing else of it), the experiments they check, and a full `snakemake --cores 4` of one config in a
fresh copy of the project."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compilebench.configuration import config as configuration
from compilebench.configuration import schema
from compilebench.core.experiment import Experiment
from compilebench.parent.jobs import apply_hardware
from compilebench.worker.machine import parallel_capacity

ROOT = Path(__file__).resolve().parents[2]
PROJECT_PARTS = ["Snakefile", "rules", "scripts", "src", "config", "envs", "report"]


def run_pipeline(config_path: Path, project: Path) -> Path:
    """Copy the project into `project`, run the pipeline there on `config_path`, return the project folder."""
    project.mkdir(parents=True, exist_ok=True)
    for part in PROJECT_PARTS:
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy2)(ROOT / part, project / part)
    shutil.copy2(config_path, project / "config" / "config.yaml")
    begin = time.perf_counter()
    subprocess.run([sys.executable, "-m", "snakemake", "--cores", "4", "--quiet", "all"], cwd=project, check=True)
    print(f"{project}: the pipeline took {time.perf_counter() - begin:.0f} s", flush=True)
    return project


DEFAULT_MODELS = ("resnet18", "vit-tiny", "llama-tiny")
PLAIN_SECONDS = 3.0  # each side of a plain measurement runs at least this long, and 100 calls


def plain_measurement(exp: dict, seconds: float = PLAIN_SECONDS) -> dict:
    """Eager alone, then the mode alone, in this process, as a 20-line script would time them: from the
    experiment's JSON form, with compilebench's model builder and nothing else of it."""
    torch, settings, model, inputs, call = plain_setup(exp)
    with torch.no_grad():
        eager_ms = median_ms(call(model), exp["measure"]["warmup"], seconds)
        compiled = call(plain_mode(torch, model, inputs, settings))
        compiled()
        mode_ms = median_ms(compiled, exp["measure"]["warmup"], seconds)
    return {"eager_ms": eager_ms, "mode_ms": mode_ms, "threads": torch.get_num_threads()}


def plain_setup(exp: dict):
    """torch with the mode's inductor options set, the model and its inputs, and `call`: the timed call of a model
    or of its compiled form (a forward on the inputs, or greedy generation of the experiment's new tokens)."""
    apply_hardware(exp["hardware_env"], exp["threads"])
    import torch

    from compilebench.core.experiment import ModelSpec
    from compilebench.worker.models import build

    settings = exp["mode_settings"]
    set_inductor_options(torch, settings)
    spec = ModelSpec.from_json(exp["spec"])
    bundle = build(exp["model"], spec, exp["seed"], exp["device"])
    if bundle.causal_lm is None:
        inputs = bundle.inputs
        return torch, settings, bundle.module, inputs, lambda fn: lambda: fn(*inputs)
    lm, prompt = bundle.causal_lm, bundle.inputs[0]
    return torch, settings, lm, bundle.inputs, lambda step: greedy(torch, lm, step, prompt, spec.new_tokens)


def greedy(torch, lm, step, prompt, new_tokens: int):
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


def set_inductor_options(torch, settings: dict) -> None:
    for option, value in inductor_options(settings).items():
        *parents, leaf = option.split(".")
        target = torch._inductor.config
        for parent in parents:
            target = getattr(target, parent)
        setattr(target, leaf, value)


def plain_mode(torch, model, inputs: tuple, settings: dict):
    """The mode as a practitioner writes it: torch.compile, TorchScript, an AOTInductor package, or the model
    exported to ONNX Runtime or converted to OpenVINO, each with the runtime's own defaults."""
    if settings["kind"] in ("onnxruntime", "openvino"):
        return plain_runtime(torch, model, inputs, settings)
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


def plain_runtime(torch, model, inputs: tuple, settings: dict):
    """A runtime as its documentation's first example runs it: an InferenceSession on an exported ONNX file, or
    OpenVINO's compiled model, fed numpy arrays. OpenVINO's CPU plugin picks bfloat16 where the CPU has it; the
    precision the mode asks for is set, as a user comparing like with like sets it."""
    if settings["kind"] == "openvino":
        import openvino as ov

        config = {"INFERENCE_PRECISION_HINT": settings["precision"]}
        compiled = ov.compile_model(ov.convert_model(model, example_input=inputs[0]), "CPU", config)
        return lambda *args: compiled([a.numpy() for a in args])[0]
    import onnxruntime as ort

    path = Path(tempfile.mkdtemp(prefix="compilebench-plain-")) / "model.onnx"
    torch.onnx.export(model, inputs, str(path), dynamo=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return lambda *args: session.run(None, dict(zip(names, (a.numpy() for a in args))))[0]


def plain_side(exp: dict, side: str, seconds: float = PLAIN_SECONDS) -> dict:
    """One side alone in this process, eager or the mode, as a user who runs only that one times it: every call's
    milliseconds, and the machine's parallel speedup before and after (the machine's state the side met)."""
    import resource

    torch, settings, model, inputs, call = plain_setup(exp)
    before = parallel_capacity("cpu")["parallel_speedup"]
    with torch.no_grad():
        fn = call(model if side == "eager" else plain_mode(torch, model, inputs, settings))
        fn()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        samples = samples_ms(fn, exp["measure"]["warmup"], seconds)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return {
        "samples_ms": samples,
        "parallel_speedup": [before, parallel_capacity("cpu")["parallel_speedup"]],
        "faults_per_call": faults / (len(samples) + exp["measure"]["warmup"]),
    }


def inductor_options(settings: dict) -> dict:
    if settings["kind"] == "export" or (settings["kind"] == "compile" and settings["backend"] == "inductor"):
        return dict(settings["options"])
    return {}


def samples_ms(fn, warmup: int, seconds: float = PLAIN_SECONDS) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    begin = time.perf_counter()
    while len(times) < 100 or time.perf_counter() - begin < seconds:
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def median_ms(fn, warmup: int, seconds: float = PLAIN_SECONDS) -> float:
    return statistics.median(samples_ms(fn, warmup, seconds))


def selected(config: dict, hardware: str, only: list[str] | None, modes: list[str] | None) -> list[Experiment]:
    names = only or [m for m in config["models"] if m.split(".")[0] in DEFAULT_MODELS]
    experiments = []
    for model in names:
        for mode in [m for m in modes or schema.model_modes(config, model) if m in schema.model_modes(config, model)]:
            exp = configuration.experiment(config, model, mode, hardware)
            if mode == "eager" or (exp.spec.task == "text-generation" and exp.mode_settings.kind != "compile"):
                continue
            experiments.append(exp.replace(measure=exp.measure.replace(warm_start=False, bundle_start=False)))
    return experiments
