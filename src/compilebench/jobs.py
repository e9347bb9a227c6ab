"""The three jobs of the workflow, shared by the command line and `scripts/`.

Each takes plain settings (an experiment from `config.experiment`, or a
hardware entry), applies the hardware's env vars, and only then imports torch,
because oneDNN and OpenMP read them when torch loads.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import signal
import subprocess
import sys
from pathlib import Path

from .joblog import log_to_stderr
from .records import Experiment, Result, now, result_header
from .results import atomic_write, read_json, write_json

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
    """Check the hardware (device present, tiny compile works) and write its environment record."""
    apply_hardware(entry.get("env", {}), entry.get("threads"))
    from . import env

    if check:
        env.validate(hardware, entry["device"])
    record = env.record(hardware, entry)
    write_json(out, record)
    return record


def mode_check_job(mode: str, settings: dict, entry: dict, out: str | Path) -> dict:
    """Check a mode's backend and inductor settings against the hardware's torch, before any benchmark uses them."""
    apply_hardware(entry.get("env", {}), entry.get("threads"))
    from .wrappers import check

    record = check(mode, settings)
    write_json(out, record)
    return record


def reference_job(exp: Experiment, out: str | Path) -> None:
    """Save the eager float32 output of one model on one hardware."""
    apply_hardware(exp["hardware_env"], exp["threads"])
    import torch

    from .runner import reference_outputs

    outputs = reference_outputs(exp)
    atomic_write(out, lambda handle: torch.save(outputs, handle))


def benchmark_job(
    exp: Experiment, out: str | Path, reference: str | Path | None = None, env_record: str | Path | None = None
) -> dict:
    """Measure one experiment within `measure.timeout_s`, compile included; the result is written whatever happens.

    The measurement runs in a child process that leads its own process group, so that
    a job past its time is stopped with everything it started (inductor's compile
    workers included), and a crash of the child (a segfault, the OOM killer) still
    leaves a `failed` result.
    """
    apply_hardware(exp["hardware_env"], exp["threads"])
    timeout_s = exp["measure"]["timeout_s"]
    started_at = now()
    Path(out).unlink(missing_ok=True)  # what the parent reads afterwards is this run's, or nothing
    payload = json.dumps({"exp": exp, "out": str(out), "reference": _str(reference), "env_record": _str(env_record)})
    package_root = str(Path(__file__).resolve().parents[1])
    child_env = {
        **os.environ,
        "COMPILEBENCH_PARENT_PID": str(os.getpid()),
        "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])),
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "compilebench.jobs"], stdin=subprocess.PIPE, env=child_env, start_new_session=True
    )
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        child.stdin.write(payload.encode())
        child.stdin.close()
        child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        message = f"stopped after measure.timeout_s = {timeout_s} s (compile included)"
        log.error("%s", message)
        return _write_stopped(exp, out, "timeout", started_at, message)
    finally:
        _kill_group(child)  # nothing it started outlives the job, also on Ctrl-C or SIGTERM
        signal.signal(signal.SIGTERM, previous)
    if child.returncode != 0 or not Path(out).exists():
        message = f"the benchmark process died with exit code {child.returncode} before writing a result"
        return _write_stopped(exp, out, "failed", started_at, message)
    return read_json(out)


def _str(path: str | Path | None) -> str | None:
    return str(path) if path else None


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def _kill_group(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    child.wait()


def _write_stopped(exp: Experiment, out: str | Path, status: str, started_at: str, message: str) -> Result:
    result: Result = {**result_header(exp, status, message, started_at=started_at), "finished_at": now()}
    write_json(out, result)
    return result


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


def _die_with_parent(parent: int) -> None:
    """On Linux, the kernel kills this process when the job that started it dies, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


if __name__ == "__main__":
    _die_with_parent(int(os.environ["COMPILEBENCH_PARENT_PID"]))
    log_to_stderr()
    request = json.load(sys.stdin)
    _measure_in_child(request["exp"], request["out"], request["reference"], request["env_record"])
