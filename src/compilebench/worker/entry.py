"""The worker: the only side that imports torch and times anything.

The parent (`jobs`) starts `python -m compilebench.worker` in a fresh process, under the platform's own
interpreter, and sends one request on standard input (`records.REQUESTS`: its kind, then its fields). The worker
does that one thing and writes its output: an environment record, a mode check, a reference, a warm start or a
process record. An unknown kind is refused with its name. The worker dies with the parent that started it.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
import time
from collections.abc import Callable

from ..core.errors import UserError
from ..core.files import (
    atomic_write,
    read_environment_record,
    samples_digest,
    write_failure,
    write_json,
    write_process_record,
)
from ..core.joblog import log_to_stderr
from ..core.records import (
    REQUESTS,
    SKIPPED,
    ArtifactRequest,
    EnvironmentRequest,
    MeasureRequest,
    ModeCheckRequest,
    ReferenceRequest,
    Request,
    StartRequest,
    StepMemoryRequest,
    error_info,
)
from ..core.supervise import die_with_parent

log = logging.getLogger(__name__)


def environment(request: EnvironmentRequest) -> None:
    """The record of this interpreter's torch and machine, the device checked and its ceilings measured."""
    from . import environment_probe

    hardware, entry, check = request.hardware, request.entry, request.check
    record = {**environment_probe.record(hardware, entry), "status": "ok", "error": None}
    if request.skip_if_absent and not environment_probe.device_present(entry["device"]):
        reason = (
            f"optional hardware entry `hardware.{hardware}` skipped: torch {record['torch']} sees no CUDA or ROCm "
            f"GPU on host {platform.node()}, so none of its experiments are planned"
        )
        log.info("%s", reason)
        record.update(status=SKIPPED, skipped_because=reason)
        check = False
    if record["status"] == "ok":  # its settings always; the device and a tiny compile where asked
        try:
            environment_probe.check_settings(hardware, entry)
            if check:
                environment_probe.validate(hardware, entry["device"])
        except Exception as exc:  # the platform's failure is data: its jobs say why they did not run
            log.error("%s", exc)
            record.update(status="failed", error=error_info(exc))
    if record["status"] == "ok" and check:
        from . import ceilings

        log.info("measuring the ceilings of %s", entry["device"])
        record["ceilings"] = ceilings.measure(entry["device"])
    write_json(request.out, record)


def mode_check(request: ModeCheckRequest) -> None:
    """The mode's resolved settings, or the key torch does not know; a regional mode's stack in each of its models,
    or the model that has none."""
    from .wrappers import check, check_regions

    try:
        record = check(request.mode, request.settings)
        if request.models:
            record["regions"] = check_regions(request.mode, request.settings, request.models)
        write_json(request.out, record)
    except UserError as exc:
        write_failure(request.out, {"message": str(exc), "traceback": ""})


def reference(request: ReferenceRequest) -> None:
    """The eager float32 output, or why it could not be computed."""
    import torch

    from .runner import reference_outputs

    try:
        outputs = reference_outputs(request.exp)
    except Exception as exc:
        log.error("the reference failed: %s: %s", type(exc).__name__, exc)
        write_failure(request.out, error_info(exc))
        return
    atomic_write(request.out, lambda handle: torch.save(outputs, handle))


def start(request: StartRequest) -> None:
    """One fresh start of the experiment on one path, timed from the process's start to its first output."""
    from . import starts

    write_json(request.out, starts.start(request, ENTERED_AT["worker"]))


def artifact(request: ArtifactRequest) -> None:
    """What a start path loads, built in this fresh process."""
    from . import starts

    write_json(request.out, starts.build_artifact(request))


def step_memory(request: StepMemoryRequest) -> None:
    """One side of a training step alone in this fresh process: its peak memory, or why it could not step."""
    from .runner import step_memory as stepped_alone

    try:
        record = {"status": "ok", "error": None, **stepped_alone(request.exp, request.side)}
    except Exception as exc:  # a side that cannot step says why; the measurement keeps its own result
        log.error("the %s side's steps failed: %s: %s", request.side, type(exc).__name__, exc)
        record = {"side": request.side, "status": "failed", "error": error_info(exc)}
    write_json(request.out, record)


def measure(request: MeasureRequest) -> None:
    """One measuring process: its record, failed or not."""
    import torch

    from . import environment_probe
    from .runner import measure_process

    exp = request.exp
    full_env = (
        read_environment_record(request.env_record)
        if request.env_record
        else environment_probe.record(exp.hardware, {"device": exp.device, "env": exp.hardware_env})
    )
    environment = {
        **environment_probe.summary(full_env),
        "record": request.env_record,
        "hostname": platform.node(),
        "slurm": environment_probe.slurm_info(),
        "ran_on": ran_on(exp.device),
    }
    ref = torch.load(request.reference, weights_only=True) if request.reference else None
    record = measure_process(
        exp,
        reference=ref,
        environment=environment,
        caches_given=request.caches_given,
        cache_artifacts=request.cache_artifacts,
        with_profile=request.profile,
    )
    record["samples_sha256"] = samples_digest(record)
    write_process_record(request.out, record)


def ran_on(device: str) -> dict:
    """What this process measured with, as it sees it (on a cluster, not necessarily what the environment record's
    node had): what every process of one experiment must share."""
    import torch

    from . import environment_probe

    on_gpu = device == "cuda" and torch.cuda.is_available()
    return {
        "torch": torch.__version__,
        "device_name": torch.cuda.get_device_name() if on_gpu else environment_probe.cpu_info()["model"],
        "threads": torch.get_num_threads(),
    }


HANDLERS: dict[str, Callable[[Request], None]] = {
    "environment": environment,
    "mode_check": mode_check,
    "reference": reference,
    "start": start,
    "artifact": artifact,
    "step_memory": step_memory,
    "measure": measure,
}
assert set(HANDLERS) == set(REQUESTS)


def parse(text: str) -> Request:
    """The typed request that `text` (JSON) holds; a kind the worker does not know is refused with its name."""
    fields = json.loads(text)
    request = fields.pop("kind", None)
    if request not in REQUESTS:
        raise UserError(
            f"compilebench.worker: unknown request kind {request!r}: expected one of {', '.join(REQUESTS)}."
        )
    return REQUESTS[request].from_json(fields)


# When this worker's own code began: a start's interpreter part ends here.
ENTERED_AT: dict[str, float] = {}


def main() -> int:
    ENTERED_AT["worker"] = time.monotonic()
    die_with_parent(int(os.environ["COMPILEBENCH_PARENT_PID"]))
    log_to_stderr()
    try:
        request = parse(sys.stdin.read())
    except UserError as error:
        print(error, file=sys.stderr)
        return 2
    HANDLERS[request.kind](request)
    return 0
