"""The measuring jobs of the workflow, shared by the command line and `scripts/`.

Each takes plain settings (an experiment from `config.experiment`, or a
hardware entry), applies the hardware's env vars, and only then imports torch,
because oneDNN and OpenMP read them when torch loads. A failure is data: a
failed environment check or reference is written as such, and every benchmark
downstream of it writes a `failed` result that names it. Every job dies with
the snakemake that started it, even when that one is killed.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
from pathlib import Path

from .joblog import log_to_stderr
from .records import ErrorInfo, Experiment, Result, error_info, now, result_header
from .results import atomic_write, failure_of, read_json, write_failure, write_json
from .supervise import death, die_with_parent, die_with_snakemake, supervised

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
    if "torch" in sys.modules:
        import torch

        if threads:
            torch.set_num_threads(threads)


def environment_job(hardware: str, entry: dict, out: str | Path, *, check: bool = True) -> dict:
    """Check the hardware (device present, tiny compile works) and write its environment record, failed or not."""
    die_with_snakemake()
    apply_hardware(entry.get("env", {}), entry.get("threads"))
    from . import env

    record = {**env.record(hardware, entry), "status": "ok", "error": None}
    if check:
        try:
            env.validate(hardware, entry["device"])
        except Exception as exc:  # the platform's failure is data: its jobs say why they did not run
            log.error("%s", exc)
            record.update(status="failed", error=error_info(exc))
    write_json(out, record)
    return record


def mode_check_job(mode: str, settings: dict, entry: dict, out: str | Path) -> dict:
    """Check a mode's backend and inductor settings against the hardware's torch, before any benchmark uses them."""
    die_with_snakemake()
    apply_hardware(entry.get("env", {}), entry.get("threads"))
    from .wrappers import check

    record = check(mode, settings)
    write_json(out, record)
    return record


def reference_job(exp: Experiment, out: str | Path, env_record: str | Path | None = None) -> ErrorInfo | None:
    """Save the eager float32 output of one model on one hardware, computed in a child process; when that
    fails (an exception, a crash, the OOM killer), save the failure instead, and return it."""
    die_with_snakemake()
    apply_hardware(exp["hardware_env"], exp["threads"])
    Path(out).unlink(missing_ok=True)
    upstream = failure_of(env_record)
    if upstream:
        return _write_failure(out, _upstream_failed(f"the environment check of hardware `{exp['hardware']}`", upstream))
    returncode = supervised({"job": "reference", "exp": exp, "out": str(out)}, timeout_s=None)
    if returncode != 0 or not Path(out).exists():
        return _write_failure(out, {"message": f"the reference process {death(returncode)}", "traceback": ""})
    return failure_of(out)


def benchmark_job(
    exp: Experiment, out: str | Path, reference: str | Path | None = None, env_record: str | Path | None = None
) -> dict:
    """Measure one experiment within `measure.timeout_s`, compile included; the result is written whatever happens.

    The measurement runs in a child process that leads its own process group, so that
    a job past its time is stopped with everything it started (inductor's compile
    workers included), and a crash of the child (a segfault, the OOM killer) still
    leaves a `failed` result. A failed environment check or reference fails it before it starts.
    """
    die_with_snakemake()
    apply_hardware(exp["hardware_env"], exp["threads"])
    timeout_s = exp["measure"]["timeout_s"]
    started_at = now()
    Path(out).unlink(missing_ok=True)  # what the parent reads afterwards is this run's, or nothing
    upstream = [
        (f"the environment check of hardware `{exp['hardware']}`", failure_of(env_record)),
        (f"the eager reference of `{exp['model']}` on `{exp['hardware']}`", failure_of(reference)),
    ]
    for step, error in upstream:
        if error:
            return _write_stopped(exp, out, "failed", started_at, _upstream_failed(step, error)["message"])
    request = {
        "job": "benchmark",
        "exp": exp,
        "out": str(out),
        "reference": _str(reference),
        "env_record": _str(env_record),
    }
    returncode = supervised(request, timeout_s)
    if returncode is None:
        message = f"stopped after measure.timeout_s = {timeout_s} s (compile included)"
        log.error("%s", message)
        return _write_stopped(exp, out, "timeout", started_at, message)
    if returncode != 0 or not Path(out).exists():
        return _write_stopped(exp, out, "failed", started_at, f"the benchmark process {death(returncode)}")
    return read_json(out)


def _upstream_failed(step: str, error: ErrorInfo) -> ErrorInfo:
    return {"message": f"{step} failed, so this did not run: {error['message']}", "traceback": error["traceback"]}


def _write_failure(out: str | Path, error: ErrorInfo) -> ErrorInfo:
    log.error("%s", error["message"])
    write_failure(out, error)
    return error


def _str(path: str | Path | None) -> str | None:
    return str(path) if path else None


def _write_stopped(exp: Experiment, out: str | Path, status: str, started_at: str, message: str) -> Result:
    result: Result = {**result_header(exp, status, message, started_at=started_at), "finished_at": now()}
    write_json(out, result)
    return result


def _reference_in_child(exp: dict, out: str) -> None:
    """The child's side of `reference_job`: the eager float32 output, or why it could not be computed."""
    import torch

    from .runner import reference_outputs

    try:
        outputs = reference_outputs(exp)
    except Exception as exc:
        log.error("the reference failed: %s: %s", type(exc).__name__, exc)
        write_failure(out, error_info(exc))
        return
    atomic_write(out, lambda handle: torch.save(outputs, handle))


def _measure_in_child(exp: dict, out: str, reference: str | None, env_record: str | None) -> None:
    """The child's side of `benchmark_job`: measure, write the result."""
    import torch

    from . import env
    from .runner import run

    full_env = (
        read_json(env_record)
        if env_record
        else env.record(exp["hardware"], {"device": exp["device"], "env": exp["hardware_env"]})
    )
    # Where this measurement ran: on a cluster, not necessarily the node of the environment record.
    environment = {
        **env.summary(full_env),
        "record": env_record,
        "hostname": platform.node(),
        "slurm": env.slurm_info(),
    }
    ref = torch.load(reference, weights_only=True) if reference else None
    write_json(out, run(exp, reference=ref, environment=environment))


if __name__ == "__main__":
    die_with_parent(int(os.environ["COMPILEBENCH_PARENT_PID"]))
    log_to_stderr()
    request = json.load(sys.stdin)
    if request["job"] == "reference":
        _reference_in_child(request["exp"], request["out"])
    else:
        _measure_in_child(request["exp"], request["out"], request["reference"], request["env_record"])
