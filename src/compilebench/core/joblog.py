"""A job's log file: every rule's script and the measuring process write to it in one format."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

LOG_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"

log = logging.getLogger(__name__)


def log_to_stderr() -> None:
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr, force=True)


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
        log_to_stderr()
        try:
            yield
        except Exception as exc:
            log.error("%s", exc)
            os.write(saved[1], f"{_plain_message(exc)}\n".encode())  # the console shows why, not only the log
            raise
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _plain_message(exc: Exception) -> str:
    from .errors import UserError

    return str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
