"""Records on disk: versioned JSON, written atomically, read back with their shape checked."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import UserError
from .records import REQUIRED_KEYS, Result


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


def read_result(path: str | Path) -> Result:
    """A result file, refused with the file named when it does not parse or lacks what every result has."""
    try:
        record = read_json(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(
            f"Result file {path} cannot be read ({type(exc).__name__}: {exc}): "
            "delete it and run again to redo that experiment."
        ) from None
    missing = sorted(REQUIRED_KEYS - set(record)) if isinstance(record, dict) else ["(not a JSON object)"]
    if missing:
        raise UserError(
            f"Result file {path} lacks {', '.join(missing)}, which every result has: "
            "delete it and run again to redo that experiment."
        )
    return record
