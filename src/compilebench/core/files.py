"""Records on disk: versioned JSON, written atomically, read back with their shape checked."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from .errors import UserError
from .experiment import Experiment
from .records import (
    OK_KEYS,
    REQUIRED_KEYS,
    RESULT_KEYS,
    SCHEMA_VERSION,
    STATUSES,
    SUPPORTED_SCHEMAS,
    ErrorInfo,
    ProcessRecord,
    Result,
    identity,
)

log = logging.getLogger(__name__)


def _plain(value: Any) -> Any:
    """JSON has no NaN or infinity: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def atomic_write(path: str | Path, write) -> None:
    """Write through a temporary file in the same folder, then rename: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        with open(tmp, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: str | Path, record: dict) -> None:
    data = json.dumps(_plain(record), indent=2, allow_nan=False).encode() + b"\n"
    atomic_write(path, lambda handle: handle.write(data))


def read_json(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


def write_failure(path: str | Path, error: ErrorInfo) -> None:
    """In place of a step's output (a reference's tensors), the record of why it could not be made."""
    write_json(path, {"schema": SCHEMA_VERSION, "status": "failed", "error": error})


def failure_of(path: str | Path | None) -> ErrorInfo | None:
    """The error a failed step recorded in its output (an environment record, a reference), or None when the
    output is what the step makes. A reference's tensors are a torch zip archive, never JSON; JSON that is not a
    record (broken, or a list) is a failure naming the file."""
    if path is None or not Path(path).is_file():
        return None
    with open(path, "rb") as handle:
        if handle.read(1) not in (b"{", b"["):
            return None
    try:
        record = read_json(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return {"message": f"{path} cannot be read as JSON ({type(exc).__name__}: {exc})", "traceback": ""}
    if not isinstance(record, dict):
        return {"message": f"{path} is a JSON {type(record).__name__}, not the record its step writes", "traceback": ""}
    return record.get("error") if record.get("status") == "failed" else None


def read_environment_record(path: str | Path) -> dict:
    """An environment record (`results/env/HARDWARE.json`), refused in one paragraph naming the file where it is
    not the JSON object `compilebench env` writes."""
    try:
        record = read_json(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        record, problem = None, f"cannot be read as JSON ({type(exc).__name__}: {exc})"
    else:
        problem = None if isinstance(record, dict) else f"is a JSON {type(record).__name__}, not an object"
    if problem:
        raise UserError(
            f"The environment record {path} {problem}: expected the record `compilebench env` writes. Delete it, "
            "and the next run writes it again."
        )
    return record


def run_result_paths(folder: str | Path) -> list[Path]:
    """The result files of one run: `folder` is a project folder or its `results/` folder. Only a file at its own
    experiment's path (`runs/HARDWARE/MODEL/MODE.json` of the hardware, model and mode it records) is one: any
    other JSON there (a backup copy beside a result) is named in a warning and never read as a result."""
    folder = Path(folder)
    root = next((r for r in (folder / "results" / "runs", folder / "runs") if r.is_dir()), None)
    found = []
    for path in sorted(root.glob("*/*/*.json")) if root else []:
        if (elsewhere := _recorded_elsewhere(path)) is None:
            found.append(path)
        else:
            log.warning("%s is not a result of this run and is ignored: %s", path, elsewhere)
    return found


def _recorded_elsewhere(path: Path) -> str | None:
    """Why the JSON at `path` is not the result at its path: the experiment it records has another path. None
    where it is, or where it cannot be read (reading it then names what is wrong)."""
    try:
        record = read_json(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in ("hardware", "model", "mode")):
        return None
    own = path.parents[2] / record["hardware"] / record["model"] / f"{record['mode']}.json"
    if own == path:
        return None
    return f"it records {record['hardware']}/{record['model']}/{record['mode']}, whose result is {own}"


class BadResult(UserError):
    """A result file that does not parse, lacks what every result has, or stands for another experiment."""


def read_result(path: str | Path, expected: dict[str, Any] | None = None) -> Result:
    """A result file, refused with the file named when it does not parse, is not of a schema version this
    compilebench reads, is not of a result's shape (keys missing or unknown, no timed samples, no processes), or
    carries another identity or other settings than `expected` (`records.identity` of the experiment it stands
    for)."""
    return _checked(
        path,
        BadResult,
        _shape_problem,
        lambda record: _identity_problem(record, expected, "result"),
        _fingerprint_problem,
    )


def _checked(path: str | Path, refused: type[UserError], *problems: Callable[[Any], str | None]) -> Any:
    """The JSON at `path`, or `refused` naming the file and the first problem one of `problems` finds in it."""
    try:
        record = read_json(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise refused(f"{path} cannot be read ({type(exc).__name__}: {exc})") from None
    for problem in problems:
        if found := problem(record):
            raise refused(f"{path} {found}")
    return record


def _fingerprint_problem(record: dict) -> str | None:
    """Why a record's settings are not those of the experiment its fingerprint digests (edited after it was
    written), or None: a run read without its config (`compare`) is checked as the runs table checks it. A result
    of a compilebench that did not record its experiment has only its fingerprint to go by."""
    if "experiment" not in record:
        return None
    try:
        exp = Experiment.from_json(record["experiment"])
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        return f"holds an `experiment` that is not one ({type(exc).__name__}: {exc})"
    if exp.digest() != record["experiment_sha256"]:
        return "holds an `experiment` whose digest is not its `experiment_sha256`: it was edited after it was written"
    return _identity_problem(record, identity(exp), "result", "its own `experiment`")


def _identity_problem(
    record: dict, expected: dict[str, Any] | None, what: str, source: str = "the config"
) -> str | None:
    """Why `record` does not stand for the experiment whose identity (`records.identity`) `source` gives as
    `expected`, or None."""
    differs = [key for key, value in (expected or {}).items() if key in record and record[key] != value]
    if not differs:
        return None
    found = "/".join(str(record[k]) for k in ("hardware", "model", "mode"))
    settings = [k for k in differs if _scalar(record[k]) and _scalar(expected[k])]
    values = "".join(f"; {k} is {record[k]!r} where {source} asks {expected[k]!r}" for k in settings)
    return (
        f"is not the {what} of the experiment it stands for (it records {found}, and its "
        f"{', '.join(differs)} differ{'s' if len(differs) == 1 else ''} from what {source} asks{values})"
    )


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _shape_problem(record: Any) -> str | None:
    """Why `record` is not a result as this compilebench writes one, or None."""
    if not isinstance(record, dict):
        return "is not a JSON object, as every result is"
    missing = sorted(REQUIRED_KEYS - set(record))
    if missing:
        return f"lacks {', '.join(missing)}, which every result has"
    if record["schema"] not in SUPPORTED_SCHEMAS:
        versions = ", ".join(map(str, SUPPORTED_SCHEMAS))
        return (
            f"is of schema {record['schema']!r}: this compilebench reads results of schema {versions} (another "
            "schema was measured differently): rerun the run it belongs to with this compilebench"
        )
    unknown = sorted(set(record) - RESULT_KEYS)
    if unknown:
        return f"holds {', '.join(unknown)}, which no result of schema {record['schema']} has"
    if record["status"] != "ok":
        return None
    missing = sorted(OK_KEYS - set(record))
    if missing:
        return f"is `ok` but lacks {', '.join(missing)}, which every ok result has"
    processes = record.get("processes")
    if not isinstance(processes, list) or (not processes and not record.get("stream")):
        return f"is `ok` but its `processes` is {processes!r}: expected one entry per measuring process"
    return _samples_problem(record)


def foreign_results(expected: dict[str, dict[str, str]]) -> dict[str, str]:
    """The result files on disk that do not carry the fingerprint (`experiment_sha256`) of the experiment they stand
    for, with the one they carry ("unreadable" where none can be read). Cheap enough for every run: the runs table
    takes it as a parameter, so that such a file makes it rerun and refuse the file even when the file kept an
    old mtime (as `cp -p`, `rsync -a` or `tar` leave it)."""
    foreign = {}
    for path, wanted in expected.items():
        if not Path(path).exists():
            continue
        try:
            found = read_json(path).get("experiment_sha256")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            found = "unreadable"
        if found != wanted["experiment_sha256"]:
            foreign[path] = str(found)
    return foreign


# Every timed series a result or a process record holds; a result keeps the first two.
TIMED_SAMPLES = ("latency_ms", "eager_latency_ms", "twin_latency_ms", "alone_latency_ms", "eager_alone_latency_ms")
# What a measuring process measured, as its worker wrote it: `samples_sha256` is the digest of these.
MEASURED_KEYS = ("started_at", *TIMED_SAMPLES, "alone_calls", "warmup_ms", "stream", "generations")


def samples_digest(record: dict) -> str:
    """The digest of what a process measured (`MEASURED_KEYS`), as JSON writes it: a record whose samples were
    edited after its worker wrote them no longer matches its `samples_sha256`."""
    measured = _plain({key: record.get(key) for key in MEASURED_KEYS})
    return hashlib.sha256(json.dumps(measured, sort_keys=True).encode()).hexdigest()


def record_digest(record: dict) -> str:
    """The digest of every figure a process record carries (all of it but this digest), as JSON writes it: a record
    edited after its worker or its job wrote it (a compile time, a peak, a start) no longer matches its
    `record_sha256`."""
    return hashlib.sha256(
        json.dumps(_plain({k: v for k, v in record.items() if k != "record_sha256"}), sort_keys=True).encode()
    ).hexdigest()


def sealed(record: dict) -> dict:
    """`record` with its `record_sha256`: what the worker writes, and what its job writes again after each change."""
    record["record_sha256"] = record_digest(record)
    return record


def write_process_record(path: str | Path, record: dict) -> None:
    write_json(path, sealed(record))


class BadRecord(UserError):
    """A measuring process's record that cannot be summarised as what it says it is."""


def read_process_record(path: str | Path, expected: dict[str, Any]) -> ProcessRecord:
    """A measuring process's record, refused (`BadRecord`, the file named) when it does not parse, is not of this
    compilebench's schema, stands for another experiment or other settings than `expected` (`records.identity`),
    or, `ok`, holds a timed sample that is not a finite number above zero or samples that do not match the digest
    its worker wrote."""
    return _checked(
        path,
        BadRecord,
        _record_problem,
        lambda record: _identity_problem(record, expected, "process record"),
        _edited_problem,
    )


def _record_problem(record: Any) -> str | None:
    if not isinstance(record, dict):
        return f"holds a JSON {type(record).__name__}, not a process record"
    missing = sorted(REQUIRED_KEYS - set(record))
    if missing:
        return f"lacks {', '.join(missing)}, which every process record has"
    if record["schema"] != SCHEMA_VERSION:
        return f"is of schema {record['schema']!r}: this compilebench writes process records of schema {SCHEMA_VERSION}"
    if record["status"] not in STATUSES:
        return f"has status {record['status']!r}: expected one of {', '.join(STATUSES)}"
    if record["status"] != "ok":
        return None
    if problem := _samples_problem(record, stream=bool(record.get("stream"))):
        return problem
    if record.get("samples_sha256") != samples_digest(record):
        return "holds samples that do not match the digest its measuring process wrote (`samples_sha256`)"
    return None


def _edited_problem(record: dict) -> str | None:
    """Why an `ok` record's figures are not those its job wrote (`record_sha256`), or None."""
    if record.get("status") != "ok" or record.get("record_sha256") == record_digest(record):
        return None
    return (
        "holds figures that do not match the digest its job wrote (`record_sha256`): it was edited after it was written"
    )


def _samples_problem(record: dict, stream: bool = False) -> str | None:
    """Why an `ok` result's timed samples cannot be compared (each must be a finite number above zero), or None; a
    stream's process record keeps its calls under `stream`."""
    if not record.get("latency_ms") and not stream:
        return "is `ok` but holds no timed samples (`latency_ms`)"
    for key in TIMED_SAMPLES:
        samples = record.get(key)
        if samples is None:
            continue
        if not isinstance(samples, list):
            return f"holds `{key}` of type {type(samples).__name__}: expected a list of milliseconds"
        bad = [x for x in samples if not _positive_number(x)]
        if bad or (not samples and not stream):
            found = f"{bad[0]!r} among its samples" if bad else "no samples"
            return f"holds `{key}` with {found}: expected finite numbers of milliseconds above 0"
    return None


def _positive_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def read_results(
    paths: list[str | Path], expected: dict[str, dict[str, str]] | None = None, downstream: list[str | Path] = ()
) -> list[Result]:
    """Every result, or one error naming each bad file. The bad ones are moved aside (to `NAME.rejected`) and the
    `downstream` outputs that rest on them are removed: Snakemake redoes a missing result only when something
    that needs it is missing too, so the next run then redoes just those experiments and what follows."""
    return _read_checked(paths, read_result, expected, downstream, "result", "experiments")


def read_starts(
    paths: list[str | Path], expected: dict[str, dict[str, Any]] | None = None, downstream: list[str | Path] = ()
) -> list[dict]:
    """Every starts record, held to what results are: one error naming each bad file, moved aside as a bad result
    is, so that the next run times those starts again."""
    return _read_checked(paths, read_starts_record, expected, downstream, "starts", "starts")


def _read_checked(paths, read_one, expected, downstream, what: str, redone: str) -> list[dict]:
    records, problems = [], []
    for path in paths:
        try:
            records.append(read_one(path, (expected or {}).get(str(path))))
        except BadResult as bad:
            problems.append(str(bad))
            with contextlib.suppress(FileNotFoundError):
                Path(path).replace(f"{path}.rejected")
    if problems:
        for output in downstream:
            Path(output).unlink(missing_ok=True)
        removed = f" and {', '.join(map(str, downstream))} removed" if downstream else ""
        raise BadResult(
            f"Refused {len(problems)} {what} file(s): {'; '.join(problems)}. Each was moved aside to NAME.rejected"
            f"{removed}: run the same command again to redo those {redone} (and only those)."
        )
    return records


STARTS_SCHEMA = 1
STARTS_KEYS = ("schema", "hardware", "model", "mode", "experiment_sha256", "paths", "repeats", "rows")


def read_starts_record(path: str | Path, expected: dict[str, Any] | None = None) -> dict:
    """A starts job's record, refused (the file named) when it does not parse, is not of this compilebench's
    schema or shape, stands for another experiment or plan than `expected` (its identity, `paths` and
    `repeats`), or holds an ok start whose times are not finite and above zero."""
    return _checked(
        path, BadResult, _starts_problem, lambda record: _identity_problem(record, expected, "starts record")
    )


def _starts_problem(record: Any) -> str | None:
    if not isinstance(record, dict):
        return f"holds a JSON {type(record).__name__}, not a starts record"
    missing = [key for key in STARTS_KEYS if key not in record]
    if missing:
        return f"lacks {', '.join(missing)}, which every starts record has"
    if record["schema"] != STARTS_SCHEMA:
        return f"is of schema {record['schema']!r}: this compilebench writes starts records of schema {STARTS_SCHEMA}"
    if not isinstance(record["rows"], list) or not all(isinstance(r, dict) for r in record["rows"]):
        return "holds `rows` that are not a list of starts"
    for k, row in enumerate(record["rows"], 1):
        if row.get("path") not in record["paths"] or row.get("status") not in STATUSES:
            return (
                f"holds start {k} on path {row.get('path')!r} with status {row.get('status')!r}: expected a path of "
                f"{record['paths']} and one of {', '.join(STATUSES)}"
            )
        if row["status"] != "ok":
            continue
        times = {"total_s": row.get("total_s"), **(row.get("parts") or {})}
        bad = {key: value for key, value in times.items() if value is not None and not _time(value, key)}
        if bad or not _positive_number(row.get("total_s")):
            key, value = next(iter(bad.items())) if bad else ("total_s", row.get("total_s"))
            return f"holds start {k} ({row['path']}) with {key} {value!r}: expected finite seconds above 0"
        parts = sum(v for v in (row.get("parts") or {}).values() if v is not None)
        if parts and abs(parts - row["total_s"]) > PARTS_SLACK * row["total_s"] + 0.05:
            return (
                f"holds start {k} ({row['path']}) whose parts add to {parts:.3g} s and whose total_s is "
                f"{row['total_s']:.3g} s: expected the parts to make the total"
            )
    return None


PARTS_SLACK = 0.05  # a start's parts are timed one by one: they make its total within this share (and 50 ms)


def _time(value, key: str) -> bool:
    """A start's part may take no time (a path with nothing to load); its total takes some."""
    return _positive_number(value) or (key != "total_s" and value == 0)


def artifact_bytes(path: str | Path) -> int:
    """An artifact's bytes on disk: the file, and for OpenVINO's IR (an .xml) its weights beside it (the .bin)."""
    path = Path(path)
    weights = path.with_suffix(".bin")
    return path.stat().st_size + (weights.stat().st_size if path.suffix == ".xml" and weights.is_file() else 0)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def scratch_folder(prefix: str) -> tempfile.TemporaryDirectory:
    """A job's scratch folder on the machine's own disk, named with its process id; first, each such folder of this
    user's that a job killed before it could clean up (its process gone) left behind is removed."""
    root = Path(tempfile.gettempdir())
    for stale in root.glob(f"{prefix}*-*"):
        pid = stale.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and stale.is_dir() and stale.stat().st_uid == os.getuid() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    return tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-")
