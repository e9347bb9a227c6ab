"""Result records on disk: versioned JSON, written atomically."""

from __future__ import annotations

import json
import math
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
STATUSES = ("ok", "failed", "timeout", "unsupported")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def identity(exp: dict) -> dict:
    """The fields that name a result: which model, mode and hardware, in which dtype and batch."""
    spec = exp["spec"]
    return {
        "schema": SCHEMA_VERSION,
        "model": exp["model"],
        "mode": exp["mode"],
        "hardware": exp["hardware"],
        "device": exp["device"],
        "task": spec["task"],
        "dtype": spec["dtype"],
        "batch_size": spec["batch_size"],
    }


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
