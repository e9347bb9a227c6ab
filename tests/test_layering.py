"""How the package is layered: the report side runs without torch, and the engine is exactly what measures."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from helpers import ROOT, TINY_MODELS, tiny_config

import compilebench
from compilebench import config as configuration

REPORT_SIDE = [
    "compilebench.tables",
    "compilebench.comparisons",
    "compilebench.figures",
    "compilebench.paper",
    "compilebench.standalone",
    "compilebench.registry",
]


def fresh_python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_report_side_modules_and_scripts_leave_torch_out():
    imports = "; ".join(f"import {name}" for name in REPORT_SIDE)
    scripts = ["table", "figures", "paper"]
    script_imports = "\n".join(
        line.strip()
        for name in scripts
        for line in (ROOT / "scripts" / f"{name}.py").read_text().splitlines()
        if line.startswith("from compilebench")
    )
    code = (
        f"{imports}\n{script_imports}\nimport sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    )
    assert fresh_python(code).strip() == "[]"


def test_engine_modules_are_exactly_what_a_measurement_imports(tmp_path):
    """An environment record, a reference and a benchmark, each job's side and its child's, in one fresh
    process: the compilebench modules they load are the engine sources whose change reruns measurements,
    no more and no fewer."""
    config = configuration.validate(tiny_config({"resnet": TINY_MODELS["resnet"]}))
    jobs = {
        "entry": config["hardware"]["cpu"],
        "reference": configuration.reference_experiment(config, "resnet", "cpu"),
        "benchmark": configuration.experiment(config, "resnet", "eager", "cpu"),
    }
    code = f"""
import json, sys
spec = json.loads({json.dumps(jobs)!r})
from compilebench import jobs, runner
jobs.environment_job("cpu", spec["entry"], {str(tmp_path / "env.json")!r}, check=False)
jobs._environment_in_child("cpu", spec["entry"], {str(tmp_path / "env.json")!r}, True, False)  # its child's side
jobs.reference_job(spec["reference"], {str(tmp_path / "ref.pt")!r})
assert runner.run(spec["benchmark"])["status"] == "ok"
print(json.dumps(sorted(m.split(".")[1] for m in sys.modules if m.startswith("compilebench."))))
"""
    loaded = set(json.loads(fresh_python(code).strip().splitlines()[-1]))
    assert loaded == set(compilebench.ENGINE_MODULES)


@pytest.mark.parametrize(
    ("imports", "declared"),
    [
        (["compilebench.registry"], compilebench.TABLE_MODULES),
        (REPORT_SIDE, compilebench.REPORT_MODULES),
    ],
)
def test_table_and_report_rules_declare_exactly_the_code_they_run(imports, declared):
    code = "; ".join(f"import {name}" for name in imports)
    code += (
        "\nimport sys\nprint(' '.join(sorted(m.split('.')[1] for m in sys.modules if m.startswith('compilebench.'))))"
    )
    assert set(fresh_python(code).split()) == set(declared)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="needs ruff (the test extra installs it)")
def test_python_and_snakemake_files_are_lint_clean():
    for command in (
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["snakefmt", "--check", "."],
        [sys.executable, "-m", "snakemake", "--lint", "--cores", "1"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
