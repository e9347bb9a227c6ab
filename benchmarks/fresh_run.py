"""A full `snakemake --cores 4` of one config in a fresh copy of the project, for the benchmark scripts."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PARTS = ["Snakefile", "rules", "scripts", "src", "config", "envs", "report"]


def run_pipeline(config_path: Path, project: Path) -> Path:
    """Copy the project into `project`, run the pipeline there on `config_path`, return the project folder."""
    project.mkdir(parents=True, exist_ok=True)
    for part in PROJECT_PARTS:
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy2)(ROOT / part, project / part)
    shutil.copy2(config_path, project / "config" / "config.yaml")
    begin = time.perf_counter()
    subprocess.run([sys.executable, "-m", "snakemake", "--cores", "4", "--quiet", "all"], cwd=project, check=True)
    print(f"{project}: the pipeline took {time.perf_counter() - begin:.0f} s", flush=True)
    return project
