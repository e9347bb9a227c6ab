"""Processes a job starts, and the job itself, never outlive what should end them.

A job runs its work in a child that leads its own process group (so that stopping it stops
inductor's compile workers too) and that the kernel kills when the job dies. The job in turn
watches the snakemake that started it, which may be killed with SIGKILL: the kernel would
only reparent the job, and an orphan would write its result into the next run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from .records import Request


def death(returncode: int) -> str:
    """How a child that wrote nothing ended, in words."""
    if returncode < 0:
        name = signal.Signals(-returncode).name
        why = " (killed; the OOM killer does this when memory runs out)" if returncode == -signal.SIGKILL else ""
        return f"died of {name}{why} before writing its output"
    return f"died with exit code {returncode} before writing its output"


# Process groups of the children this job started, stopped with it whatever ends it.
_children: set[int] = set()


def supervised(
    request: Request, timeout_s: float | None, python: str = sys.executable, env: dict[str, str] | None = None
) -> int | None:
    """Run one request of `compilebench.worker` under interpreter `python` (a platform's own, or this one), in a child
    process that leads its own process group; its exit code, or None when it ran past `timeout_s`. Either way,
    nothing the child started outlives this call. `env`: variables set for the child alone."""
    return supervised_together([request], timeout_s, python, env)[0]


def supervised_together(
    requests: list[Request], timeout_s: float | None, python: str = sys.executable, env: dict[str, str] | None = None
) -> list[int | None]:
    """`supervised`, for requests whose children run at the same time (none of them timed): each one's exit code,
    or None where it ran past `timeout_s`, counted from the first one's start."""
    package_root = str(Path(__file__).resolve().parents[2])
    child_env = {
        **os.environ,
        "COMPILEBENCH_PARENT_PID": str(os.getpid()),
        "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])),
        **(env or {}),
    }
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    children: list[subprocess.Popen] = []
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        for request in requests:
            child_env["COMPILEBENCH_SPAWNED_AT"] = repr(time.monotonic())  # a start is timed from here
            child = subprocess.Popen(
                [python, "-m", "compilebench.worker"], stdin=subprocess.PIPE, env=child_env, start_new_session=True
            )
            children.append(child)
            _children.add(child.pid)
            child.stdin.write(json.dumps(request.to_json()).encode())
            child.stdin.close()
        return [_waited(child, deadline) for child in children]
    finally:
        for child in children:
            _kill_group(child)  # also on Ctrl-C or SIGTERM
            _children.discard(child.pid)
        signal.signal(signal.SIGTERM, previous)


def _waited(child: subprocess.Popen, deadline: float | None) -> int | None:
    try:
        return child.wait(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return None


def die_with_snakemake(poll_s: float = 0.5) -> None:
    """When the snakemake that started this job is killed (SIGKILL included), stop this job and its children.

    The kernel reparents an orphaned job instead of killing it, so a thread watches every process between this
    job and that snakemake (a shell may sit between them). Outside snakemake it watches nothing.
    """
    launchers = _launchers()
    if not launchers:
        return

    def watch():
        while all(_alive(p) for p in launchers):
            time.sleep(poll_s)
        for group in list(_children):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-snakemake", daemon=True).start()


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _launchers() -> list[psutil.Process]:
    """This process's ancestors up to and including the nearest snakemake, or none when no snakemake started it."""
    chain = []
    for ancestor in psutil.Process().parents():
        chain.append(ancestor)
        try:
            if any(Path(arg).name == "snakemake" for arg in ancestor.cmdline()[:3]):
                return chain
        except (psutil.AccessDenied, psutil.ZombieProcess, psutil.NoSuchProcess):
            continue
    return []


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def _kill_group(child: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


def die_with_parent(parent: int) -> None:
    """On Linux, the kernel kills this process when the job that started it dies, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)
