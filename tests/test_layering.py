"""How the package is layered: the worker alone measures, the parent side runs without torch, the layers point one
way, and each job's code, derived from its imports, is what it runs."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys

import pytest
from helpers import ROOT, TINY_MODELS, tiny_config

from compilebench import codebase
from compilebench import config as configuration

PARENT_SIDE = [
    "compilebench.jobs",
    "compilebench.starts",
    "compilebench.summaries",
    "compilebench.stats",
    "compilebench.tables",
    "compilebench.comparisons",
    "compilebench.figures",
    "compilebench.paper",
    "compilebench.standalone",
    "compilebench.registry",
    "compilebench.cli",
    "compilebench.config",
    "compilebench.codebase",
]
# Outside the worker, torch is imported only to fetch pretrained weights through torchvision (the download job) and
# to list torchvision's architectures once per installed version (config validation, cached).
TORCH_OUTSIDE_THE_WORKER = {"assets", "catalog"}


def fresh_python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_parent_side_and_its_scripts_leave_torch_out():
    imports = "; ".join(f"import {name}" for name in PARENT_SIDE)
    scripts = [
        "table",
        "figures",
        "paper",
        "benchmark_process",
        "benchmark_result",
        "reference_output",
        "starts_process",
    ]
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


def _imports_torch(name: str) -> bool:
    tree = ast.parse((codebase.HERE / f"{name}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] in ("torch", "torchvision") for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("torch", "torchvision"):
            return True
    return False


def test_everything_that_imports_torch_is_on_the_worker_side():
    worker_side = set(codebase.closure(("worker",)))
    torch_users = {name for name in codebase.module_names() if _imports_torch(name)}
    assert torch_users - worker_side == TORCH_OUTSIDE_THE_WORKER
    # and nothing that states a summary is there: a fix to an estimator reruns no measurement
    assert not worker_side & {"stats", "summaries", "comparisons", "tables", "registry", "figures", "paper"}


def test_the_package_has_no_import_cycle():
    """Imports inside functions count (the graph sees the worker's lazy import of the runner); `TYPE_CHECKING`
    blocks do not."""
    graph = codebase.import_graph()
    assert "runner" in graph["worker"] and "pandas" not in graph["comparisons"]
    assert codebase.cycles() == []


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path, monkeypatch):
    for name, body in {
        "a": "from . import b\n",
        "b": "def f():\n    from .c import g\n",
        "c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\nfrom . import a\n",
    }.items():
        (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.setattr(codebase, "HERE", tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    codebase.import_graph.cache_clear()
    codebase._facts.cache_clear()
    try:
        assert codebase.cycles() == [["a", "b", "c", "a"]]
    finally:
        codebase.import_graph.cache_clear()
        codebase._facts.cache_clear()


def test_a_docstring_or_comment_changes_no_fingerprint_and_code_does(tmp_path, monkeypatch):
    source = codebase.HERE / "timing.py"
    copy = tmp_path / "timing.py"
    monkeypatch.setattr(codebase, "HERE", tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def fingerprint(text: str) -> str:
        copy.write_text(text)
        codebase.import_graph.cache_clear()
        codebase._facts.cache_clear()
        return codebase.fingerprint(("timing",))

    text = source.read_text()
    try:
        original = fingerprint(text)
        assert fingerprint(text.replace("Device-synchronized clocks", "Device-synchronised clocks")) == original
        assert fingerprint(text.replace("import math\n", "import math  # for ceil\n\n")) == original
        assert fingerprint(text.replace("min_time_s * 1e3", "min_time_s * 1e3 + 0")) != original
    finally:
        codebase.import_graph.cache_clear()
        codebase._facts.cache_clear()


@pytest.mark.slow
def test_measuring_jobs_run_exactly_within_their_derived_code(tmp_path):
    """An environment record, a reference and a measuring process, each job's parent side and its worker's, in
    one fresh process: the compilebench modules they load lie within the code whose change reruns them, and that
    code holds no report or statistics module."""
    config = configuration.validate(tiny_config({"resnet": TINY_MODELS["resnet"]}))
    specs = {
        "entry": config["hardware"]["cpu"],
        "reference": configuration.reference_experiment(config, "resnet", "cpu").to_json(),
        "benchmark": configuration.experiment(config, "resnet", "eager", "cpu").to_json(),
    }
    code = f"""
import json, sys
spec = json.loads({json.dumps(specs)!r})
from compilebench import jobs, runner, worker
from compilebench.experiment import Experiment
from compilebench.records import EnvironmentRequest
jobs.environment_job("cpu", spec["entry"], {str(tmp_path / "env.json")!r}, check=False)
worker.environment(EnvironmentRequest({str(tmp_path / "env.json")!r}, "cpu", spec["entry"]))  # its worker's side
jobs.reference_job(Experiment.from_json(spec["reference"]), {str(tmp_path / "ref.pt")!r})
assert runner.run(Experiment.from_json(spec["benchmark"]))["status"] == "ok"
print(json.dumps(sorted(m.split(".")[1] for m in sys.modules if m.startswith("compilebench."))))
"""
    loaded = set(json.loads(fresh_python(code).strip().splitlines()[-1]))
    scripts = ("environment_record", "reference_output", "benchmark_process")
    derived = set(codebase.closure(tuple(r for name in scripts for r in codebase.script_roots(name))))
    assert loaded <= derived, loaded - derived
    assert {"runner", "worker", "timing", "jobs"} <= loaded
    assert "worker" in codebase.script_roots("benchmark_process")  # started through `supervise`, not imported


@pytest.mark.parametrize("script", ["table", "figures", "paper", "benchmark_result"])
def test_table_report_and_result_rules_run_within_their_derived_code(script):
    roots = codebase.script_roots(script)
    assert "worker" not in roots
    code = "; ".join(f"import compilebench.{name}" for name in roots)
    code += (
        "\nimport sys\nprint(' '.join(sorted(m.split('.')[1] for m in sys.modules if m.startswith('compilebench.'))))"
    )
    loaded = set(fresh_python(code).split())
    assert loaded <= set(codebase.closure(roots)), loaded - set(codebase.closure(roots))
    assert not set(codebase.closure(roots)) & {"worker", "runner", "timing"}


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
