"""The parent side of the measuring jobs, shared by the command line and `scripts/`; torch-free.

Each job takes plain settings (an experiment from `config.experiment`, or a hardware entry), applies the
hardware's env vars, and sends one typed request to a worker (`compilebench.worker`) in a fresh process under
the platform's interpreter, where torch loads with them (oneDNN and OpenMP read them when torch loads). A failure
is data: a failed environment check or reference is written as such, and every measurement downstream of it
writes a `failed` record that names it. Every job dies with the snakemake that started it, even when that one is
killed.
"""

from __future__ import annotations

import html
import logging
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..analysis import levels
from ..core import kinds, layout
from ..core.errors import UserError
from ..core.experiment import PINNED_ALLOCATOR, Experiment, ModeSettings
from ..core.files import failure_of, read_json, scratch_folder, write_failure, write_json, write_process_record
from ..core.layout import PYTHON_ENV_RECORD
from ..core.records import (
    EnvironmentRequest,
    ErrorInfo,
    MeasureRequest,
    ModeCheckRequest,
    ProcessRecord,
    ReferenceRequest,
    Request,
    StartRequest,
    StepMemoryRequest,
    now,
    result_header,
)
from ..core.supervise import death, die_with_snakemake, supervised, supervised_together
from . import pyenv

log = logging.getLogger(__name__)


# Snakemake sets these to a job's `threads`; a benchmark wants the hardware entry's
# own `threads`, or else torch's default (one per physical core).
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "GOTO_NUM_THREADS",
)


def apply_hardware(env_vars: dict, threads: int | None) -> None:
    """Set a hardware entry's env vars and thread count; call before torch is imported."""
    for name in THREAD_VARS:
        os.environ.pop(name, None)
    os.environ.update({k: str(v) for k, v in env_vars.items()})
    if threads:
        os.environ["OMP_NUM_THREADS"] = str(threads)
    torch = sys.modules.get("torch")  # loaded already where a job runs inside a measuring process (a test)
    if torch is not None and threads:
        torch.set_num_threads(threads)


def allocator_env(exp: Experiment) -> dict[str, str]:
    """A training step's processes on a CPU: glibc's allocator pinned (`PINNED_ALLOCATOR`), unless the hardware
    entry's env (applied to this job's environment) or the job's own environment sets either variable."""
    if not exp.spec.train or not exp.device.startswith("cpu") or any(name in os.environ for name in PINNED_ALLOCATOR):
        return {}
    return dict(PINNED_ALLOCATOR)


def environment_job(
    hardware: str, entry: dict, out: str | Path, *, check: bool = True, skip_if_absent: bool = False
) -> dict:
    """Check the hardware (device present, tiny compile works) in its own interpreter and write its environment
    record, failed or not: a platform whose Python environment did not build, or whose interpreter dies, says why.
    With `skip_if_absent` (an optional GPU entry), a missing device makes the record `skipped` instead of failed."""
    die_with_snakemake()
    apply_hardware(entry.get("env", {}), entry.get("threads"))
    Path(out).unlink(missing_ok=True)
    name = entry.get("python_env")
    if name and (problem := _python_env_problem(hardware, name)):
        return _write_unavailable(hardware, entry, out, problem)
    request = EnvironmentRequest(str(out), hardware, entry, check, skip_if_absent)
    returncode = supervised(request, timeout_s=None, python=pyenv.interpreter(name))
    if returncode != 0 or not Path(out).exists():
        where = f" (Python environment `{name}`)" if name else ""
        return _write_unavailable(hardware, entry, out, f"the environment process{where} {death(returncode)}")
    return read_json(out)


def mode_check_job(mode: str, settings: dict, entry: dict, out: str | Path, models: dict | None = None) -> dict:
    """Check a mode's backend and inductor settings against the hardware's torch, before any benchmark uses them;
    a regional mode's repeated stack in each of `models` (name to ModelSpec JSON) too.

    A setting that torch does not know fails this job, naming the config key: no benchmark runs a mode it
    would silently misread. A model without the stack a regional mode names is that model's experiment failing:
    the check's record says why, and the experiment's jobs write it as their `failed` result."""
    die_with_snakemake()
    apply_hardware(entry.get("env", {}), entry.get("threads"))
    Path(out).unlink(missing_ok=True)
    request = ModeCheckRequest(str(out), mode, ModeSettings.from_json(settings), models or {})
    returncode = supervised(request, timeout_s=None, python=pyenv.interpreter(entry.get("python_env")))
    if returncode != 0 or not Path(out).exists():
        raise UserError(f"The check of mode `{mode}`: the checking process {death(returncode)}.")
    if error := failure_of(out):
        if models:
            log.error("%s", error["message"])
            return read_json(out)
        Path(out).unlink()
        raise UserError(error["message"])
    return read_json(out)


def checks_upstream(exp: Experiment, env_record, reference, mode_checks=()) -> list[tuple[str, ErrorInfo | None]]:
    """What an experiment's job waits on, each named, with the error it recorded (None where it did not fail);
    `mode_checks` as Snakemake gives a named input: one path, or a list."""
    if isinstance(mode_checks, (str, Path)):
        mode_checks = [mode_checks]
    return [
        (f"the environment check of hardware `{exp.hardware}`", failure_of(env_record)),
        (f"the eager reference of `{exp.model}` on `{exp.hardware}`", failure_of(reference)),
        *((f"the check of mode `{exp.mode}` on `{exp.model}`", failure_of(check)) for check in mode_checks),
    ]


def _python_env_problem(hardware: str, name: str) -> str | None:
    """Why hardware `hardware` cannot use Python environment `name`, in one paragraph; None when it can."""
    built = Path(PYTHON_ENV_RECORD.format(python_env=name))
    key = f"Hardware entry `hardware.{hardware}.python_env` (`{name}`)"
    if not built.is_file():
        return f"{key}: the environment is not built ({built} is missing); the workflow's python_env rule builds it."
    error = failure_of(built)
    if error:
        return (
            f"{key} could not be built: {error['message']}. Fix {pyenv.requirements_file(name)}, "
            "or remove `python_env` to measure with the torch compilebench itself runs under; "
            f"the build's log is logs/python_envs/{name}.log."
        )
    return None


def _write_unavailable(hardware: str, entry: dict, out: str | Path, message: str) -> dict:
    """The record of a platform whose interpreter could not say anything about itself: what is known without it."""
    log.error("%s", message)
    record = {
        "schema": 1,
        "hardware": hardware,
        "device": entry["device"],
        "python_env": entry.get("python_env"),
        "torch": None,
        "python": None,
        "platform": platform.platform(),
        "hostname": platform.node(),
        "cpu": None,
        "accelerator": None,
        "threads": entry.get("threads"),
        "configured_env": {k: str(v) for k, v in entry.get("env", {}).items()},
        "kernel_env": {},
        "inductor_env": {},
        "packages": {},
        "code": {"commit": None, "dirty": None},
        "slurm": None,
        "status": "failed",
        "error": {"message": message, "traceback": ""},
    }
    write_json(out, record)
    return record


def reference_job(exp: Experiment, out: str | Path, env_record: str | Path | None = None) -> ErrorInfo | None:
    """Save the eager float32 output of one model on one hardware, computed in a child process; when that
    fails (an exception, a crash, the OOM killer), save the failure instead, and return it."""
    die_with_snakemake()
    apply_hardware(exp.hardware_env, exp.threads)
    Path(out).unlink(missing_ok=True)
    upstream = failure_of(env_record)
    if upstream:
        return _write_failure(out, _upstream_failed(f"the environment check of hardware `{exp.hardware}`", upstream))
    request = ReferenceRequest(str(out), exp)
    returncode = supervised(request, timeout_s=None, python=pyenv.interpreter(exp.python_env))
    if returncode != 0 or not Path(out).exists():
        return _write_failure(out, {"message": f"the reference process {death(returncode)}", "traceback": ""})
    return failure_of(out)


def process_job(
    exp: Experiment,
    out: str | Path,
    process: int,
    caches: str | Path,
    *,
    reference: str | Path | None = None,
    env_record: str | Path | None = None,
    first: str | Path | None = None,
    mode_checks: list[str | Path] = (),
) -> dict:
    """Measure one experiment in one fresh process, within `measure.timeout_s` (compile included); the record is
    written whatever happens.

    Process 1 compiles cold (with `measure.private_cache`, in empty caches of its own), where asked starts again
    from them and from torch's cache bundle, steps each side of a training experiment alone in a process of its own
    for its peak memory, and leaves a copy of its caches in `caches`; a later process starts from a
    copy of those, so its first call is a warm start; with `measure.cold_processes`, in empty caches of its own too.
    The measurement runs in a child process that leads its own process group, so that a process past its time is
    stopped with everything it started (inductor's compile workers included), and a crash of the child (a segfault,
    the OOM killer) still leaves a `failed` record. A failed environment check, reference or first process fails it
    before it starts.
    """
    die_with_snakemake()
    apply_hardware(exp.hardware_env, exp.threads)
    timeout_s = exp.measure.timeout_s
    started_at = now()
    Path(out).unlink(missing_ok=True)  # what the parent reads afterwards is this run's, or nothing
    for stale in layout.set_aside_records(out):
        stale.unlink()
    caches = Path(caches)
    if process == 1:
        shutil.rmtree(caches, ignore_errors=True)
        caches.mkdir(parents=True)  # the cold start's: empty
    upstream = checks_upstream(exp, env_record, reference, mode_checks)
    if process > 1:
        upstream.append((f"process 1 of {exp.measure.processes}", _not_ok(first)))
    for step, error in upstream:
        if error:
            return _write_stopped(exp, out, "failed", started_at, _upstream_failed(step, error)["message"])
    deadline = time.monotonic() + timeout_s
    python = pyenv.interpreter(exp.python_env)
    private = exp.measure.private_cache
    with scratch_folder("compilebench-job-") as scratch:
        scratch = Path(scratch)
        # Each process compiles in caches on the machine's own disk (results/ may be a cluster's shared file system):
        # the first starts empty and leaves a copy of what it wrote for the later ones, which start from it.
        warm = process > 1 and private and not exp.measure.cold_processes
        caches_env = cache_env(scratch / "caches") if private else {}
        process_env = {**caches_env, **allocator_env(exp)}
        artifacts = scratch / "cache-artifacts.bin"
        request = MeasureRequest(
            str(out),
            exp,
            reference=_str(reference),
            env_record=_str(env_record),
            caches_given=bool(caches_env),
            cache_artifacts=str(artifacts) if process == 1 and _artifacts_wanted(exp) else None,
            profile=process == 1,
        )
        trace_dir = exp.measure.compile_trace_dir if process == 1 else None
        trace_env = _compile_trace_env(trace_dir) if trace_dir else {}

        def measure_once(limit_s: float, again: bool = False) -> int | None:
            """One fresh measuring process, in the caches this process starts from (empty for a cold one); measured
            `again`, in the caches the process it replaces left."""
            if private and not again:
                shutil.rmtree(scratch / "caches", ignore_errors=True)
                if warm:
                    shutil.copytree(caches, scratch / "caches")
            return supervised(request, limit_s, python=python, env={**process_env, **trace_env})

        returncode = measure_once(timeout_s)
        returncode = _measured_again_while_shifted(exp, out, process, returncode, deadline, measure_once)
        damaged = _damaged_cache(out, returncode) if warm else None
        if damaged and (left := deadline - time.monotonic()) > 1:
            log.error("process %d failed on the caches process 1 left (%s): it compiles cold instead", process, damaged)
            shutil.rmtree(scratch / "caches")
            Path(out).unlink(missing_ok=True)
            returncode = supervised(request, left, python=python, env=process_env)
        if returncode is None:
            message = f"stopped after measure.timeout_s = {timeout_s} s (compile included)"
            log.error("%s", message)
            return _write_stopped(exp, out, "timeout", started_at, message)
        if returncode != 0 or not Path(out).exists():
            return _write_stopped(exp, out, "failed", started_at, f"the benchmark process {death(returncode)}")
        record = read_json(out)
        if trace_dir:
            record["compile_trace"] = _render_compile_trace(trace_dir)
            write_process_record(out, record)
        if record["status"] == "ok" and process == 1 and _warm_starts_wanted(exp):
            record.update(warm_starts=_warm_starts(exp, python, caches_env, artifacts, scratch, deadline))
            record["finished_at"] = now()
            write_process_record(out, record)
        if record["status"] == "ok" and process == 1 and exp.spec.train:
            record["training"].update(_steps_alone(exp, python, process_env, scratch, deadline))
            write_process_record(out, record)
        if (process == 1 or damaged) and private and (scratch / "caches").is_dir():
            if damaged:  # the later processes start from this cold compile's caches instead
                shutil.rmtree(caches, ignore_errors=True)
            shutil.copytree(scratch / "caches", caches, dirs_exist_ok=True)
        if damaged and record["status"] == "ok":  # written after the caches: the record stays the newer
            record["cache_replaced"] = {"reason": damaged}  # its first call compiled cold: no warm start
            write_process_record(out, record)
    return record


def _measured_again_while_shifted(
    exp: Experiment, out: str | Path, process: int, returncode: int | None, deadline: float, measure_once
) -> int | None:
    """Where an ok record's level moved partway through (`analysis.levels`), the record is set aside beside it
    (`{process}.set-aside-{k}.json`) and the process measured again in a fresh one, up to
    `measure.max_extra_processes` times and within the time left; the last record stands, shifted or not. A process
    measured again starts from the caches the first one left, so its first call is not the one the job is asked
    to time: it keeps the first record's first-call figures (`FIRST_CALL_FIELDS`) and says so (`first_call_from`)."""
    extra = max(exp.measure.extra_processes - _set_aside_by_other_processes(out), 0)  # a bound for the experiment
    for attempt in range(1, extra + 1):
        if returncode != 0 or not Path(out).exists():
            return returncode
        record = read_json(out)
        shift = levels.level_shift(record) if record["status"] == "ok" else None
        if not levels.moves_speedup(shift):  # a shift of the mode timed alone leaves the speedup as it is
            return returncode
        left = deadline - time.monotonic()
        aside = layout.set_aside_path(out, attempt)
        if left <= 1:
            log.error("process %d: %s; no time is left to measure it again", process, levels.said(shift))
            return returncode
        log.error(
            "process %d: %s; set aside as %s and measured again (%d of %d)",
            process, levels.said(shift), aside.name, attempt, extra,
        )  # fmt: skip
        os.replace(out, aside)
        returncode = measure_once(left, again=True)
        _keep_first_call(out, layout.set_aside_path(out, 1), returncode)
    return returncode


def _set_aside_by_other_processes(out: str | Path) -> int:
    """How many times the experiment's other processes were measured again: `max_extra_processes` bounds them all."""
    out = Path(out)
    others = out.parent.glob(f"*.set-aside-*{out.suffix}")
    return sum(1 for path in others if not path.name.startswith(f"{out.stem}.set-aside-"))


# What a process's first call measured: what a process measured again, in the caches its first left, keeps.
FIRST_CALL_FIELDS = ("compile_s", "compile_phases", "preparation")


def _keep_first_call(out: str | Path, first: Path, returncode: int | None) -> None:
    if returncode != 0 or not Path(out).exists():
        return
    record, earlier = read_json(out), read_json(first)
    if record["status"] != "ok" or earlier["status"] != "ok":
        return
    record.update({key: earlier[key] for key in FIRST_CALL_FIELDS if key in earlier}, first_call_from=first.name)
    write_process_record(out, record)


def _damaged_cache(out: str | Path, returncode: int | None) -> str | None:
    """Why a later process, which started from the caches process 1 left, failed where process 1 did not (the
    caches it read are the one thing it does not share with process 1); None where it did not fail."""
    if returncode is None:
        return None
    if returncode != 0 or not Path(out).exists():
        return f"the benchmark process {death(returncode)}"
    record = read_json(out)
    return record["error"]["message"] if record["status"] == "failed" else None


def _not_ok(record_path: str | Path | None) -> ErrorInfo | None:
    """Why the process record at `record_path` is not ok, as an error; None when it is."""
    record = read_json(record_path)
    if record["status"] == "ok":
        return None
    return {"message": f"it was {record['status']}: {record['error']['message']}", "traceback": ""}


def _warm_starts_wanted(exp: Experiment) -> bool:
    return exp.measure.warm_start and kinds.of(exp.mode_settings).warm_start == "caches"


def cache_env(folder: Path) -> dict[str, str]:
    """Inductor and Triton caches private to this job, kept across its processes and deleted with it."""
    return {"TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"), "TRITON_CACHE_DIR": str(folder / "triton")}


def _artifacts_wanted(exp: Experiment) -> bool:
    return _warm_starts_wanted(exp) and exp.measure.bundle_start


def _warm_starts(exp: Experiment, python: str, caches: dict, artifacts: Path, scratch: Path, deadline: float) -> dict:
    """The first call of a second fresh process that reads the caches the measurement wrote (`compile_warm_s`;
    with several processes, the later ones are the warm starts instead), and of a third that starts from torch's
    portable cache artifacts alone (`compile_bundle_s`; null where torch has none). Each runs in the time
    `measure.timeout_s` leaves; one stopped or failed keeps the rest."""
    starts = {"warm": None, "bundle": None, "notes": []}
    plans = [("warm", caches, None)] if exp.measure.warm_start_by_job else []
    if not exp.measure.bundle_start:
        starts["notes"].append("no start from the cache bundle: measure.bundle_start is false")
    elif artifacts.is_file():
        plans.append(("bundle", cache_env(scratch / "bundle-caches"), str(artifacts)))
    elif getattr(exp.mode_settings, "options", {}).get("freezing"):
        starts["notes"].append(
            "no cache bundle: inductor does not cache a graph with frozen constants, so torch saved nothing to "
            "bundle, and the warm start compiles that graph again"
        )
    else:
        starts["notes"].append(
            "no cache bundle: this torch has no torch.compiler.save_cache_artifacts, or it saved nothing"
        )
    for name, env, artifacts_path in plans:
        path = "artifacts" if name == "bundle" else name
        request = StartRequest(str(scratch / f"{name}-start.json"), exp, path=path, artifact=artifacts_path)
        starts[name], note = _fresh_process(request, f"the {name} start", python, env, deadline)
        starts["notes"] += [note] if note else []
    return starts


def _steps_alone(exp: Experiment, python: str, env: dict, scratch: Path, deadline: float) -> dict:
    """A training experiment's two sides, each stepped alone in a fresh process of its own (the two at once: nothing
    is timed; in the caches the measurement left, so the mode's compile is warm), for their peak memory:
    `step_memory` (each side's record, or None) with its notes, and `step_peak_bytes`."""
    sides = ("eager", "mode")
    requests = [StepMemoryRequest(str(scratch / f"{side}-memory.json"), exp, side) for side in sides]
    left = deadline - time.monotonic()
    codes = supervised_together(requests, left, python=python, env=env) if left > 1 else [False] * len(sides)
    alone: dict = {"notes": []}
    for side, request, returncode in zip(sides, requests, codes):
        alone[side], note = _fresh_record(request, f"the {side} side's memory process", returncode)
        alone["notes"] += [note] if note else []
    peaks = {side: (alone[side] or {}).get("step_peak_bytes") for side in sides}
    return {"step_memory": alone, "step_peak_bytes": peaks}


Ran = tuple[dict | None, str | None]  # a fresh process's `ok` record, or None and why


def _fresh_process(request: Request, name: str, python: str, env: dict, deadline: float) -> Ran:
    """`request` run in a fresh process in the time `measure.timeout_s` leaves: its `ok` record, or None and why."""
    left = deadline - time.monotonic()
    returncode = supervised(request, left, python=python, env=env) if left > 1 else False
    return _fresh_record(request, name, returncode)


def _fresh_record(request: Request, name: str, returncode: int | None | bool) -> Ran:
    """What the fresh process that ran `request` left, by its exit code (False: it did not run, no time was left)."""
    if returncode is False:
        return None, f"{name} did not run: measure.timeout_s was spent"
    out = Path(request.out)
    if returncode == 0 and out.is_file():
        record = read_json(out)
        if record["status"] == "ok":
            return record, None
        return None, f"{name} was {record['status']}: {record['error']['message']}"
    why = "ran past measure.timeout_s" if returncode is None else death(returncode)
    log.error("%s %s; the result keeps the measurement", name, why)
    return None, f"{name} {why}"


def _upstream_failed(step: str, error: ErrorInfo) -> ErrorInfo:
    return {"message": f"{step} failed, so this did not run: {error['message']}", "traceback": error["traceback"]}


def _write_failure(out: str | Path, error: ErrorInfo) -> ErrorInfo:
    log.error("%s", error["message"])
    write_failure(out, error)
    return error


def _str(path: str | Path | None) -> str | None:
    return str(path) if path else None


def _write_stopped(exp: Experiment, out: str | Path, status: str, started_at: str, message: str) -> ProcessRecord:
    result: ProcessRecord = {**result_header(exp, status, message, started_at=started_at), "finished_at": now()}
    write_process_record(out, result)
    return result


def _compile_trace_env(folder: str | Path) -> dict[str, str]:
    """Where a measuring process writes its TORCH_TRACE log: `folder`/raw, emptied first."""
    raw = Path(folder) / "raw"
    shutil.rmtree(folder, ignore_errors=True)
    raw.mkdir(parents=True)
    return {"TORCH_TRACE": str(raw)}


def publish_compile_trace(result_path: str | Path, folder: str | Path) -> None:
    """The tlparse report an experiment's result names, copied whole into `folder` (index.html first); where the
    result has none, an index.html that says why, so that every traced experiment has a page in the report."""
    result = read_json(result_path)
    trace = result.get("compile_trace") or {}
    folder = Path(folder)
    shutil.rmtree(folder, ignore_errors=True)
    if trace.get("report") and Path(trace["report"]).is_file():
        shutil.copytree(Path(trace["report"]).parent, folder)
        return
    if result.get("status") != "ok":
        why = f"the experiment ended {result.get('status')}: {(result.get('error') or {}).get('message', '')}"
    else:
        why = trace.get("note") or "the result records no compile trace"
    folder.mkdir(parents=True)
    title = html.escape(f"{result.get('hardware')}/{result.get('model')}/{result.get('mode')}")
    (folder / "index.html").write_text(
        f"<!doctype html><title>Compile trace of {title}</title><p>No tlparse report for {title}: {html.escape(why)}."
    )


def _render_compile_trace(folder: str | Path) -> dict:
    """The TORCH_TRACE log a process left in `folder`/raw, rendered by tlparse into `folder`/report; where tlparse is
    missing or fails, the log is kept and the record says why there is no report."""
    folder = Path(folder)
    logs = sorted((folder / "raw").glob("*.log"))
    record = {"log": str(logs[0]) if logs else None, "report": None, "note": None}
    tlparse = shutil.which("tlparse")
    if not logs:
        record["note"] = "torch wrote no TORCH_TRACE log"
    elif tlparse is None:
        record["note"] = "tlparse is not installed (pip install tlparse): the raw log is kept"
    else:
        done = subprocess.run(
            [tlparse, str(logs[0]), "-o", str(folder / "report"), "--overwrite", "--no-browser"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        index = folder / "report" / "index.html"
        if done.returncode == 0 and index.is_file():
            record["report"] = str(index)
        else:
            record["note"] = f"tlparse failed: {(done.stderr or done.stdout).strip()[-300:]}"
    return record
