"""From process start to first output, on every path torch offers: the job that runs the starts (parent side,
torch-free).

For an experiment with `measure.starts`, one job runs `measure.start_repeats` rounds; each round starts one fresh
process per path, in `records.START_PATHS` order, so that a slow spell of the machine falls on every path alike.
Before the rounds it warms the machine's file cache with one untimed start (so that no path pays for reading
torch's libraries from disk), builds the package and the precompiled function, each in a process of its own with
empty caches, and where a warm or artifacts start has no cold start to follow, makes one. Each start runs in caches
of its own: empty, or a copy of the caches its round's cold start left. A path that this mode or this torch
cannot take is a row `unsupported` with the reason; a start that fails, dies or runs past `measure.timeout_s` is a
row `failed` or `timeout`. The job writes the raw rows; `summaries.path_summaries` makes their statistics.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from ..core import kinds
from ..core.experiment import Experiment
from ..core.files import STARTS_SCHEMA, artifact_bytes, read_json, scratch_folder, write_json
from ..core.records import ARTIFACT_PATHS, ArtifactRequest, ErrorInfo, StartRequest, now
from ..core.supervise import death, die_with_snakemake, supervised
from . import pyenv
from .jobs import apply_hardware, cache_env, checks_upstream

log = logging.getLogger(__name__)


def obstacle(exp: Experiment, path: str) -> str | None:
    """Why `exp`'s mode cannot start on `path`, from its settings alone (what torch lacks, its worker says); None
    where it can."""
    settings = exp.mode_settings
    kind = kinds.of(settings)
    if path in ("eager", "cold"):
        return None
    if path in ("warm", "artifacts"):
        return kind.start_obstacle(settings, path)
    if exp.spec.task == "text-generation":
        return f"compilebench builds no {path} of a generation loop with a KV cache"
    if settings.quantize:
        return f"compilebench builds the {path} of a float model; this mode quantizes its copy with torchao"
    return kind.start_obstacle(settings, path)


def starts_job(
    exp: Experiment,
    plan: dict,
    out: str | Path,
    *,
    reference: str | Path | None = None,
    env_record: str | Path | None = None,
    mode_checks: list[str | Path] = (),
) -> dict:
    """Run the starts `plan` asks (`config.starts_plan`: paths and repeats) and write their record, whatever
    happens: a failed environment check or reference fails every row with its reason."""
    die_with_snakemake()
    apply_hardware(exp.hardware_env, exp.threads)
    Path(out).unlink(missing_ok=True)
    record = {
        "schema": STARTS_SCHEMA,
        **exp.identity(),
        "paths": plan["paths"],
        "repeats": plan["repeats"],
        "started_at": now(),
        "builds": {},
        "rows": [],
    }
    upstream = checks_upstream(exp, env_record, reference, mode_checks)
    stopped = next((f"{step} failed, so this did not run: {e['message']}" for step, e in upstream if e), None)
    if stopped:
        record["rows"] = [_row(path, k, "failed", stopped) for k in _repeats(plan) for path in plan["paths"]]
    else:
        starts = _Starts(exp, plan, reference, pyenv.interpreter(exp.python_env), cache_env)
        with scratch_folder("compilebench-starts-") as scratch:
            record.update(starts.run(Path(scratch)))
    record["finished_at"] = now()
    write_json(out, record)
    return record


def _repeats(plan: dict) -> range:
    return range(1, plan["repeats"] + 1)


# What a row keeps of its start's record: the timing, the artifact, the check's verdict and rule.
ROW_KEYS = ("total_s", "parts", "timed_from", "peak_bytes", "artifact_bytes", "correct", "cache_hits")


def _row(path: str, repeat: int, status: str, reason: str | None, start: dict | None = None) -> dict:
    start = start or {}
    return {
        "path": path,
        "repeat": repeat,
        "status": status,
        "reason": reason,
        **{k: start.get(k) for k in ROW_KEYS},
        "correctness_rule": (start.get("correctness") or {}).get("rule"),
    }


class _Starts:
    """The rounds of one starts job, in a scratch folder on the machine's own disk."""

    def __init__(self, exp: Experiment, plan: dict, reference, python: str, cache_env):
        self.exp, self.plan, self.python, self.cache_env = exp, plan, python, cache_env
        self.reference = str(reference) if reference else None
        self.timeout_s = exp.measure.timeout_s

    def run(self, scratch: Path) -> dict:
        self.scratch = scratch
        paths = self.plan["paths"]
        refused = {path: why for path in paths if (why := obstacle(self.exp, path))}
        self._start("eager", scratch / "prime", "file-cache")  # untimed: torch's libraries read from disk once
        builds = {path: self._build(path) for path in ARTIFACT_PATHS if path in paths and path not in refused}
        for path, build in builds.items():
            if build["status"] != "ok":
                refused[path] = build["error"]["message"]
        seed = None
        if {"warm", "artifacts"} & set(paths) and "cold" not in paths:
            seed = self._cold(scratch / "seed", "seed")
            builds["caches"] = {k: v for k, v in seed.items() if k in ("status", "error", "total_s")}
        rows = []
        for repeat in _repeats(self.plan):
            cold = seed
            for path in paths:
                if path in refused:
                    status = builds.get(path, {}).get("status", "unsupported")
                    rows.append(_row(path, repeat, status, refused[path]))
                    continue
                folder = scratch / f"{path}-{repeat}"
                if path == "cold":
                    cold = start = self._cold(folder, repeat)
                elif path in ("warm", "artifacts"):
                    start = self._after_cold(path, folder, cold, repeat)
                else:
                    start = self._start(path, folder, repeat, artifact=self._artifact(path))
                rows.append(_row(path, repeat, start["status"], (start.get("error") or {}).get("message"), start))
        return {"builds": builds, "rows": rows}

    def _artifact(self, path: str) -> str | None:
        names = {"package": kinds.of(self.exp.mode_settings).package_file, "precompiled": "forward.bin"}
        return str(self.scratch / names[path]) if path in names else None

    def _cold(self, folder: Path, repeat) -> dict:
        """A cold start, its caches and cache artifacts kept for the warm and artifacts starts after it."""
        start = self._start("cold", folder, repeat, save_artifacts=str(folder / "cache-artifacts.bin"))
        start["folder"] = folder
        return start

    def _after_cold(self, path: str, folder: Path, cold: dict | None, repeat: int) -> dict:
        if cold is None or cold["status"] != "ok":
            why = (cold or {}).get("error", {}).get("message", "it did not run")
            return {"status": "failed", "error": {"message": f"the cold start it follows failed: {why}"}}
        if path == "warm":
            folder.mkdir(parents=True)
            shutil.copytree(cold["folder"] / "caches", folder / "caches")
            return self._start("warm", folder, repeat)
        artifacts = cold["folder"] / "cache-artifacts.bin"
        if not artifacts.is_file():
            why = "torch saved no cache artifacts after the cold start"
            return {"status": "unsupported", "error": {"message": why}}
        return self._start("artifacts", folder, repeat, artifact=str(artifacts))

    def _start(self, path: str, folder: Path, repeat, **fields) -> dict:
        """One start in a fresh process, in the caches under `folder` (made empty where none are there yet)."""
        log.info("start %s (%s)", path, repeat)
        (folder / "caches").mkdir(parents=True, exist_ok=True)
        out = folder / "start.json"
        request = StartRequest(str(out), self.exp, path=path, reference=self.reference, **fields)
        given = _bytes_read(path, folder / "caches", fields.get("artifact"))  # before the start adds its own
        return {**self._supervised(request, folder), "artifact_bytes": given}

    def _build(self, path: str) -> dict:
        log.info("building the %s", path)
        folder = self.scratch / f"build-{path}"
        (folder / "caches").mkdir(parents=True)
        request = ArtifactRequest(str(folder / "build.json"), self.exp, path, self._artifact(path))
        return self._supervised(request, folder)

    def _supervised(self, request, folder: Path) -> dict:
        returncode = supervised(request, self.timeout_s, python=self.python, env=self.cache_env(folder / "caches"))
        if returncode is None:
            error: ErrorInfo = {"message": f"stopped after measure.timeout_s = {self.timeout_s} s", "traceback": ""}
            return {"status": "timeout", "error": error}
        if returncode != 0 or not Path(request.out).is_file():
            return {"status": "failed", "error": {"message": f"the start process {death(returncode)}", "traceback": ""}}
        return read_json(request.out)


def _bytes_read(path: str, caches: Path, artifact: str | None) -> int | None:
    """The bytes a start is given on disk to skip compiling: the caches a warm start copies, the artifact a path
    loads; None for a start given nothing (eager, cold)."""
    if path == "warm":
        return sum(f.stat().st_size for f in caches.rglob("*") if f.is_file())
    return artifact_bytes(artifact) if path in ("artifacts", *ARTIFACT_PATHS) and artifact else None
