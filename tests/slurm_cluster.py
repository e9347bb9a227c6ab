"""A one-node SLURM cluster on this machine, started and stopped by the tests that need one.

Needs root and Debian's slurmctld, slurmd, slurm-client and munge (.ci/run installs them).
Partitions `cpu` (default) and `gpu` share the one node. Daemons are stopped by the PIDs
in their PID files, which are removed afterwards.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

BINARIES = ("slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "munged", "munge")
MUNGE_PID = Path("/run/munge/munged.pid")
# Job steps (srun inside a job) find the config only at the default path, whatever SLURM_CONF says.
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")
MARK = "# written by compilebench's tests"


def missing() -> str | None:
    """Why no cluster can start here, or None."""
    absent = [b for b in BINARIES if not shutil.which(b)]
    if absent:
        return (
            f"SLURM is not installed ({', '.join(absent)} missing; apt-get install slurmctld slurmd slurm-client munge)"
        )
    if os.geteuid() != 0:
        return "starting SLURM daemons needs root"
    if SYSTEM_CONF.exists() and MARK not in SYSTEM_CONF.read_text():
        return f"{SYSTEM_CONF} exists: this machine has its own SLURM, which the tests leave alone"
    return None


def _munge_answers() -> bool:
    try:
        return subprocess.run(["munge", "-n"], capture_output=True, timeout=10).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _node_line() -> str:
    described = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, timeout=30, check=True).stdout
    line = next(line for line in described.splitlines() if line.startswith("NodeName="))
    fields = dict(field.split("=", 1) for field in line.split())
    fields["RealMemory"] = str(int(fields["RealMemory"]) - 1024)  # leave the OS some room
    fields["NodeAddr"] = "127.0.0.1"  # no name lookup between the daemons and the commands
    return " ".join(f"{k}={v}" for k, v in fields.items()) + " State=UNKNOWN"


class Cluster:
    def __init__(self, folder: Path):
        self.folder = folder
        self.conf = SYSTEM_CONF
        self.pid_files: list[Path] = []

    def write_conf(self) -> None:
        host = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
        f = self.folder
        for sub in ("state", "spool", "log"):
            (f / sub).mkdir(parents=True, exist_ok=True)
        node = _node_line()
        node_name = node.split()[0].split("=", 1)[1]
        self.conf.parent.mkdir(parents=True, exist_ok=True)
        self.conf.write_text(f"""\
{MARK}
ClusterName=compilebench-test
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={f}/state
SlurmdSpoolDir={f}/spool
SlurmctldPidFile={f}/slurmctld.pid
SlurmdPidFile={f}/slurmd.pid
SlurmctldLogFile={f}/log/slurmctld.log
SlurmdLogFile={f}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
MinJobAge=300
{node}
PartitionName=cpu Nodes={node_name} Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes={node_name} MaxTime=INFINITE State=UP
""")

    def start(self) -> None:
        self.write_conf()
        subprocess.run(["install", "-d", "-o", "munge", "-g", "munge", "/run/munge"], check=True, timeout=30)
        if not _munge_answers():
            # A munged killed with its machine leaves its PID file behind: one that does not answer is started anew.
            MUNGE_PID.unlink(missing_ok=True)
            subprocess.run(["runuser", "-u", "munge", "--", "munged", "--force"], check=True, timeout=30)
            self.pid_files.append(MUNGE_PID)
            if not _munge_answers():
                raise RuntimeError("munged started but does not answer `munge -n`")
        for daemon in ("slurmctld", "slurmd"):
            subprocess.run([daemon, "-f", str(self.conf)], check=True, timeout=60)
            self.pid_files.append(self.folder / f"{daemon}.pid")
        deadline = time.monotonic() + 240  # a busy machine brings the controller and the node up slowly
        state: list[str] | str = "nothing yet"
        while time.monotonic() < deadline:
            try:
                state = subprocess.run(
                    ["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=30
                ).stdout.split()
            except subprocess.TimeoutExpired:  # the controller is not answering yet
                state = "no answer within 30 s"
                continue
            if state and all(s == "idle" for s in state):
                return
            time.sleep(1)
        log = self.folder / "log" / "slurmctld.log"
        tail = "".join(log.read_text().splitlines(keepends=True)[-20:]) if log.exists() else "(no log)"
        raise RuntimeError(f"SLURM did not come up: sinfo says {state}; slurmctld.log ends:\n{tail}")

    def stop(self) -> None:
        for pid_file in reversed(self.pid_files):
            try:
                pid = int(pid_file.read_text().strip())
                os.kill(pid, signal.SIGTERM)
                for _ in range(50):
                    os.kill(pid, 0)
                    time.sleep(0.1)
                os.kill(pid, signal.SIGKILL)
            except (FileNotFoundError, ValueError, ProcessLookupError):
                pass
            pid_file.unlink(missing_ok=True)
        self.conf.unlink(missing_ok=True)
