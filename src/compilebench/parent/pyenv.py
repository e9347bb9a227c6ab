"""A platform's own Python: a venv built from a pinned requirements file `envs/NAME.txt`.

A hardware entry with `python_env: NAME` runs its environment, reference, mode-check and
benchmark steps in that venv's interpreter, so that one pipeline times two torch versions
side by side. The venv holds the file's pins and what the engine imports besides torch;
the engine itself is not installed there: each job puts the checkout's own `src/` on the
child's PYTHONPATH (`supervise.supervised`), so that the measuring code is always the running
checkout's, and a project moved or copied with its venvs never imports the old one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..core.errors import UserError
from ..core.files import write_json
from ..core.layout import PYTHON_ENV
from ..core.records import now

log = logging.getLogger(__name__)

ENVS_DIR = Path("envs")
# What the engine's modules import besides torch and the standard library; unpinned, so
# that pip picks versions that fit the file's own pins (which win where it names them).
ENGINE_REQUIREMENTS = ("numpy", "scipy", "psutil")
ENGINE_ROOT = Path(__file__).resolve().parents[2]


class BuildError(UserError):
    """A requirements file that does not give a working environment; the message says which step failed."""


def requirements_file(name: str) -> Path:
    return ENVS_DIR / f"{name}.txt"


def folder(name: str) -> Path:
    return Path(PYTHON_ENV.format(python_env=name))


def interpreter(name: str | None) -> str:
    """The interpreter a platform's torch steps run in: its venv's, or the one running compilebench."""
    if not name:
        return sys.executable
    return str((folder(name) / "bin" / "python").absolute())  # not resolved: the venv's own name is what counts


def build(name: str, requirements: str | Path, venv: str | Path, out: str | Path) -> dict:
    """Build the venv and write its record, `ok` with its versions or `failed` with the step and pip's last line."""
    requirements, venv = Path(requirements), Path(venv)
    record = {
        "schema": 1,
        "python_env": name,
        "requirements": str(requirements),
        "requirements_sha256": None,
        "python": str(venv / "bin" / "python"),
        "started_at": now(),
        "status": "ok",
        "error": None,
    }
    try:
        record.update(_build(requirements, venv))
    except BuildError as exc:
        log.error("%s", exc)
        record.update(status="failed", error={"message": str(exc), "traceback": ""})
        venv.mkdir(parents=True, exist_ok=True)  # the workflow's output, even where no venv could be made
    record["finished_at"] = now()
    write_json(out, record)
    return record


def _build(requirements: Path, venv: Path) -> dict:
    if not requirements.is_file():
        raise BuildError(
            f"the requirements file {requirements} does not exist: expected a pip requirements file there "
            "(one pinned package per line, torch among them, e.g. `torch==2.13.0+cpu`)"
        )
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()
    shutil.rmtree(venv, ignore_errors=True)
    _step([sys.executable, "-m", "venv", str(venv)], f"`python -m venv {venv}` failed")
    python = str(venv / "bin" / "python")
    # --no-compile: a module is byte-compiled when first imported, so only what runs pays for it
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--no-compile"]
    _step([*pip, "-r", str(requirements), *ENGINE_REQUIREMENTS], f"pip could not install {requirements}")
    probe = "import platform, torch, compilebench.parent.jobs; print(torch.__version__, platform.python_version())"
    engine = {**os.environ, "PYTHONPATH": str(ENGINE_ROOT)}  # as each job's child has it
    torch_version, python_version = _step([python, "-c", probe], "torch fails to import in it", engine).split()
    freeze = _step([python, "-m", "pip", "freeze", "--all"], "pip freeze failed")
    packages = dict(line.split("==", 1) for line in freeze.splitlines() if "==" in line)
    log.info("built %s: torch %s, Python %s", venv, torch_version, python_version)
    return {
        "requirements_sha256": digest,
        "torch": torch_version,
        "python_version": python_version,
        "packages": packages,
    }


def _step(command: list[str], what: str, env: dict[str, str] | None = None) -> str:
    """Run one build step, its output in the job's log; its stdout, or a BuildError with the tool's last error line."""
    log.info("$ %s", " ".join(command))
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    sys.stderr.write(done.stdout + done.stderr)
    if done.returncode != 0:
        raise BuildError(f"{what}: {last_error_line(done.stderr or done.stdout)}")
    return done.stdout.strip()


def last_error_line(output: str) -> str:
    """The line a reader wants from pip or a traceback: its last `ERROR:` line, else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    return (errors or lines or ["(no output)"])[-1]
