"""A fresh start on one path torch offers, timed from the process's start to its first output (worker side).

The parent (`starts`) runs each start in a fresh process and gives it its caches: empty ones for a cold start, a
copy of a cold start's for a warm one. The clock starts when the parent spawns the process (`SPAWNED_AT`: the
parent's monotonic clock, which every process on the machine shares) and stops at the first output. The check of
that output against the reference, and what the compile did, come after the clock stops.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from ..core import kinds
from ..core.errors import Unsupported
from ..core.experiment import Experiment
from ..core.files import artifact_bytes
from ..core.kinds.eager import EagerSettings
from ..core.records import ARTIFACT_PATHS, ArtifactRequest, StartRequest, error_info

log = logging.getLogger(__name__)

SPAWNED_AT = "COMPILEBENCH_SPAWNED_AT"


def spawned_at() -> float | None:
    """When the parent spawned this process, on the machine's monotonic clock; None where no parent said."""
    value = os.environ.get(SPAWNED_AT)
    return float(value) if value else None


def start(request: StartRequest, entered_at: float) -> dict:
    """One start on `request.path`, as a record: its total and parts, the artifact's bytes, the output's check, or
    why it could not run (`unsupported`) or failed. `entered_at`: when the worker's own code began."""
    record = {"path": request.path, "status": "ok", "error": None}
    try:
        record.update(_start(request, entered_at))
    except Unsupported as exc:
        record.update(status="unsupported", error={"message": str(exc), "traceback": ""})
    except Exception as exc:  # a start that fails is a row of its own, with its reason
        record.update(status="failed", error=error_info(exc))
    log.info("%s start: %s", request.path, record["status"])
    return record


def _start(request: StartRequest, entered_at: float) -> dict:
    begun = spawned_at() or entered_at
    import torch

    from . import compile_phases, memory, runner, wrappers

    imported_at = time.monotonic()
    path = request.path
    exp = eager_experiment(request.exp) if path == "eager" else request.exp
    torch_obstacle(path)
    inductor = path != "eager" and kinds.of(exp.mode_settings).runs_in_torch  # a runtime compiles no C++ of torch's
    isa_probe_s = runner.probe_cpu_isa(exp.device).get("isa_probe_s", 0.0) if inductor else 0.0
    probed_at = time.monotonic()
    load_s, bundle_loaded = 0.0, None
    if path == "artifacts":
        with open(request.artifact, "rb") as handle:
            bundle_loaded = torch.compiler.load_cache_artifacts(handle.read()) is not None
        load_s = time.monotonic() - probed_at
    with runner.measuring_process(exp) as process:
        built_at = time.monotonic()
        module, inputs = process.model.module, process.model.inputs
        preparation: dict[str, float] = {}
        own = wrappers.implementation(exp.mode_settings)
        if path == "package":
            loaded, _ = own.load_package(exp.mode_settings, exp.device, Path(request.artifact), len(inputs))
            call = lambda: loaded(*inputs)  # noqa: E731
        elif path == "precompiled":
            precompiled = own.load_precompiled(module, request.artifact)
            call = lambda: precompiled(*inputs)  # noqa: E731
        else:
            prepared = runner.prepare(process)
            call, preparation = prepared.call, prepared.preparation
        ready_at = time.monotonic()
        first_ms, output = process.clock.time(call)
        total_s = time.monotonic() - begun
        peak_bytes = memory.process_peak_bytes(exp.device)  # before the check's eager call below
        if path in ARTIFACT_PATHS:  # loading it is all there is before the first call
            load_s, ahead_s = ready_at - built_at, 0.0
        else:  # scripting, or export and package build; an export mode's package load apart
            load_s += preparation.get("load_s", 0.0)
            ahead_s = ready_at - built_at - preparation.get("load_s", 0.0)
        phases = compile_phases.read()
        hits = compile_phases.cache_hits()
        effect = wrappers.settings_effect(exp.mode_settings, process.code_before)
        eager_output = runner.eager_call(process)() if request.reference else None  # the check's yardstick
        if request.save_artifacts:
            runner.save_cache_artifacts(request.save_artifacts)
    parts = {
        "interpreter_s": entered_at - begun,
        "import_s": imported_at - entered_at,
        "isa_probe_s": isa_probe_s,
        "build_s": built_at - probed_at - (load_s if path == "artifacts" else 0.0),
        "prepare_s": ahead_s,
        "load_s": load_s,
        "first_call_s": first_ms / 1e3,
    }
    check = None
    if request.reference:
        reference = torch.load(request.reference, weights_only=True)
        check = runner.correctness_check(exp, process.model, (output, eager_output), reference)
    return {
        "total_s": total_s,
        "parts": parts,
        "timed_from": "spawn" if spawned_at() else "worker",
        "peak_bytes": peak_bytes,
        "correct": None if check is None else bool(check["passed"]),
        "correctness": check,
        # what a warm start of a measuring job reports (summaries.warm_start_fields)
        "first_call_s": first_ms / 1e3,
        "compile_phases": phases,
        "cache_hits": hits,
        "settings_effect": effect,
        "bundle_loaded": bundle_loaded,
    }


def eager_experiment(exp: Experiment) -> Experiment:
    """The same model, input and process start with no compile: the floor every path is set against."""
    return exp.replace(mode="eager", mode_settings=EagerSettings())


def torch_obstacle(path: str) -> None:
    """Refuse a path this torch does not offer, naming what it lacks."""
    import torch

    needs = {
        "artifacts": [("torch.compiler", "load_cache_artifacts")],
        "package": [("torch._inductor", "aoti_load_package")],
        "precompiled": [("torch.compiler", "load_compiled_function")],
    }.get(path, [])
    for owner, name in needs:
        module = torch
        for part in owner.split(".")[1:]:
            module = getattr(module, part)
        if not hasattr(module, name):
            raise Unsupported(f"torch {torch.__version__} has no {owner}.{name}, so it offers no {path} start")


def build_artifact(request: ArtifactRequest) -> dict:
    """Build what `request.path` loads (a package, a precompiled function) in this fresh process, in empty caches:
    the seconds it took and its bytes, or why it cannot be built (`unsupported`) or failed."""
    record = {"path": request.path, "status": "ok", "error": None}
    try:
        torch_obstacle(request.path)
        record.update(_build(request))
    except Unsupported as exc:
        record.update(status="unsupported", error={"message": str(exc), "traceback": ""})
    except Exception as exc:
        record.update(status="failed", error=error_info(exc))
    log.info("building the %s: %s", request.path, record["status"])
    return record


def _build(request: ArtifactRequest) -> dict:
    from . import runner, wrappers

    exp = request.exp
    with runner.measuring_process(exp) as process:
        module, inputs = process.model.module, process.model.inputs
        options = (module, inputs, exp.mode_settings, exp.device, exp.spec.dtype, Path(request.artifact))
        begin = time.monotonic()
        own = wrappers.implementation(exp.mode_settings)
        (own.save_package if request.path == "package" else own.save_precompiled)(*options)
        build_s = time.monotonic() - begin
    return {"build_s": build_s, "artifact_bytes": artifact_bytes(request.artifact)}
