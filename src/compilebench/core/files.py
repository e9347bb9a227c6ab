"""Records on disk: versioned JSON, written atomically, read back with their shape checked."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import UserError
from .records import OK_KEYS, REQUIRED_KEYS, RESULT_KEYS, SCHEMA_VERSION, SUPPORTED_SCHEMAS, ErrorInfo, Result


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
    output is what the step makes. A reference's tensors are a torch zip archive, never JSON."""
    if path is None or not Path(path).is_file():
        return None
    with open(path, "rb") as handle:
        if handle.read(1) != b"{":
            return None
    record = read_json(path)
    return record.get("error") if record.get("status") == "failed" else None


def run_result_paths(folder: str | Path) -> list[Path]:
    """The result files of one run: `folder` is a project folder or its `results/` folder."""
    folder = Path(folder)
    root = next((r for r in (folder / "results" / "runs", folder / "runs") if r.is_dir()), None)
    return sorted(root.glob("*/*/*.json")) if root else []


class BadResult(UserError):
    """A result file that does not parse, lacks what every result has, or stands for another experiment."""


def read_result(path: str | Path, expected: dict[str, Any] | None = None) -> Result:
    """A result file, refused with the file named when it does not parse, is not of a schema version this
    compilebench reads, is not of a result's shape (keys missing or unknown, no timed samples, no processes), or
    carries another identity or other settings than `expected` (`records.identity` of the experiment it stands
    for)."""
    try:
        record = read_json(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadResult(f"{path} cannot be read ({type(exc).__name__}: {exc})") from None
    if problem := _shape_problem(record):
        raise BadResult(f"{path} {problem}")
    differs = [key for key, value in (expected or {}).items() if key in record and record[key] != value]
    if differs:
        found = "/".join(str(record[k]) for k in ("hardware", "model", "mode"))
        settings = [k for k in differs if _scalar(record[k]) and _scalar(expected[k])]
        values = "".join(f"; {k} is {record[k]!r} where the config asks {expected[k]!r}" for k in settings)
        raise BadResult(
            f"{path} is not the result of the experiment it stands for (it records {found}, and its "
            f"{', '.join(differs)} differ{'s' if len(differs) == 1 else ''} from what the config asks{values})"
        )
    return record


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
    processes = record.get("processes", [None])
    if not isinstance(processes, list) or (not processes and not record.get("stream")):
        return f"is `ok` but its `processes` is {processes!r}: expected one entry per measuring process"
    return _samples_problem(record)


def foreign_results(expected: dict[str, dict[str, str]]) -> dict[str, str]:
    """The result files on disk that do not carry the fingerprint (`experiment_sha256`) of the experiment they stand
    for, with the one they carry ("unreadable" where none can be read). Cheap enough for every run: the runs table
    takes it as a parameter, so that such a file makes it rerun and refuse the file even when the file kept an
    old mtime (as `cp -p`, `rsync -a` or `tar` leave it)."""
    foreign = {}
    for path, identity in expected.items():
        if not Path(path).exists():
            continue
        try:
            found = read_json(path).get("experiment_sha256")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            found = "unreadable"
        if found != identity["experiment_sha256"]:
            foreign[path] = str(found)
    return foreign


TIMED_SAMPLES = ("latency_ms", "eager_latency_ms")


def _samples_problem(record: dict) -> str | None:
    """Why an `ok` result's timed samples cannot be compared (each must be a finite number above zero), or None."""
    if not record.get("latency_ms"):
        return "is `ok` but holds no timed samples (`latency_ms`)"
    for key in TIMED_SAMPLES:
        samples = record.get(key)
        if samples is None:
            continue
        if not isinstance(samples, list):
            return f"holds `{key}` of type {type(samples).__name__}: expected a list of milliseconds"
        bad = [x for x in samples if not _positive_number(x)]
        if bad or not samples:
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
    results, problems = [], []
    for path in paths:
        try:
            results.append(read_result(path, (expected or {}).get(str(path))))
        except BadResult as bad:
            problems.append(str(bad))
            with contextlib.suppress(FileNotFoundError):
                Path(path).replace(f"{path}.rejected")
    if problems:
        for output in downstream:
            Path(output).unlink(missing_ok=True)
        removed = f" and {', '.join(map(str, downstream))} removed" if downstream else ""
        raise BadResult(
            f"Refused {len(problems)} result file(s): {'; '.join(problems)}. Each was moved aside to NAME.rejected"
            f"{removed}: run the same command again to redo those experiments (and only those)."
        )
    return results


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
