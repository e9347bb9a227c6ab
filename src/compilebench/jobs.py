"""The three jobs of the workflow, shared by the command line and `scripts/`.

Each takes plain settings (an experiment from `config.experiment`, or a
hardware entry), applies the hardware's env vars, and only then imports torch,
because oneDNN and OpenMP read them when torch loads.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

from .results import atomic_write, read_json, write_json

log = logging.getLogger(__name__)


@contextlib.contextmanager
def logging_to(path: str | Path):
    """Send this process's logging and its stdout/stderr (C++ warnings included) to a job's log file."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", buffering=1) as log_file:
        saved = [os.dup(1), os.dup(2)]
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(log_file.fileno(), 1)
        os.dup2(log_file.fileno(), 2)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr, force=True)
        try:
            yield
        except Exception as exc:
            log.error("%s", exc)
            raise
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


# Snakemake sets these to a job's `threads`; a benchmark wants the hardware entry's
# own `threads`, or else torch's default (one per physical core).
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "GOTO_NUM_THREADS")


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


def reference_job(exp: dict, out: str | Path) -> None:
    """Save the eager float32 output of one model on one hardware."""
    apply_hardware(exp["hardware_env"], exp["threads"])
    import torch

    from .runner import reference_outputs

    outputs = reference_outputs(exp)
    atomic_write(out, lambda handle: torch.save(outputs, handle))


def benchmark_job(exp: dict, out: str | Path, reference: str | Path | None = None, env_record: str | Path | None = None) -> dict:
    """Measure one experiment and write its result; a failure is written as a result too."""
    apply_hardware(exp["hardware_env"], exp["threads"])
    import torch

    from . import env
    from .runner import run

    full_env = read_json(env_record) if env_record else env.record(exp["hardware"], {"device": exp["device"], "env": exp["hardware_env"]})
    environment = {**env.summary(full_env), "record": str(env_record) if env_record else None}
    ref = torch.load(reference, weights_only=True) if reference else None
    result = run(exp, reference=ref, environment=environment)
    write_json(out, result)
    return result
