"""How the package is layered: the worker alone measures, the parent side runs without torch, the layers point one
way, and each job's code, derived from its imports, is what it runs."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from helpers import ROOT, TINY_MODELS, copy_project, tiny_config

from compilebench import codebase
from compilebench.configuration import config as configuration


def fresh_python(code: str, cwd=ROOT) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def dotted(name: str) -> str:
    """A module's name as `import` spells it."""
    return ".".join(["compilebench", *name.removesuffix(codebase.INIT).split(".")]).strip(".")


LOADED_MODULES = "\nimport sys\nprint(' '.join(sorted(m for m in sys.modules if m.startswith('compilebench'))))"


def loaded_modules(code: str) -> set[str]:
    return {codebase.module_of(name) for name in fresh_python(code + LOADED_MODULES).split()}


def test_every_module_outside_the_worker_and_the_scripts_leave_torch_out():
    outside = [
        name
        for name in codebase.module_names()
        if codebase.folder(name) != "worker" and name not in codebase.TORCH_OUTSIDE_THE_WORKER
    ]
    assert {"core.records", "report.paper", "pipeline.devices", "configuration.config", "cli"} <= set(outside)
    imports = "; ".join(f"import {dotted(name)}" for name in outside)
    scripts = ["table", "figures", "paper", "benchmark_process", "benchmark_result", "reference_output"]
    script_imports = "\n".join(
        line.strip()
        for name in [*scripts, "starts_process"]
        for line in (ROOT / "scripts" / f"{name}.py").read_text().splitlines()
        if line.startswith("from compilebench")
    )
    code = (
        f"{imports}\n{script_imports}\nimport sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    )
    assert fresh_python(code).strip() == "[]"


def _imports_torch(name: str) -> bool:
    tree = ast.parse(codebase.path_of(name).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] in ("torch", "torchvision") for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("torch", "torchvision"):
            return True
    return False


def test_everything_that_imports_torch_is_in_the_worker_folder():
    torch_users = {name for name in codebase.module_names() if _imports_torch(name)}
    assert {name for name in torch_users if codebase.folder(name) != "worker"} == codebase.TORCH_OUTSIDE_THE_WORKER
    # and nothing that states a summary is in what the worker runs: a fix to an estimator reruns no measurement
    assert {codebase.folder(name) for name in codebase.closure((codebase.WORKER,))} == {"", "core", "worker"}


def test_the_package_has_no_import_cycle_and_no_upward_import():
    """Imports inside functions count (the graph sees the worker's lazy import of the runner); `TYPE_CHECKING`
    blocks do not."""
    graph = codebase.import_graph()
    assert "worker.runner" in graph["worker.entry"] and "report.tables" not in graph["analysis.comparisons"]
    assert codebase.cycles() == []
    assert codebase.upward_imports() == []
    assert set(codebase.LAYERS) == {codebase.folder(name) for name in codebase.module_names()}


def test_the_layering_checks_find_an_upward_import_and_a_torch_import_outside_the_worker(tmp_path, monkeypatch):
    for name, body in {
        "__init__": "",
        "core/__init__": "",
        "core/records": "from ..report import tables\n",
        "report/__init__": "",
        "report/tables": "from ..core import records\nimport torch\n",
        "worker/__init__": "",
        "worker/runner": "from ..core.records import X\nimport torch\n",
    }.items():
        (tmp_path / f"{name}.py").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.setattr(codebase, "HERE", tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    codebase.import_graph.cache_clear()
    codebase._facts.cache_clear()
    try:
        assert codebase.upward_imports() == [("core.records", "report.__init__"), ("core.records", "report.tables")]
        assert codebase.cycles() == [["core.records", "report.tables", "core.records"]]
        assert {name for name in codebase.module_names() if _imports_torch(name)} == {"report.tables", "worker.runner"}
    finally:
        codebase.import_graph.cache_clear()
        codebase._facts.cache_clear()


@pytest.mark.slow
def test_the_snakemake_process_of_the_default_config_does_not_import_torch(tmp_path):
    """Planning the default run (its optional GPU entry decided, its architectures checked, every rule's code
    fingerprinted) loads no torch into the Snakemake process: `-X importtime` lists every module it imports."""
    with open(ROOT / "config" / "config.yaml") as handle:
        project = copy_project(tmp_path / "project", yaml.safe_load(handle))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}  # the architecture listing not yet cached
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "snakemake", "-n", "--cores", "1"],
        capture_output=True, text=True, cwd=project, env=env, timeout=600,
    )  # fmt: skip
    said = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 0, "\n".join(said[-40:])
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "compilebench.configuration.catalog" in imported and "snakemake.workflow" in imported
    assert not {name for name in imported if name.split(".")[0] in ("torch", "torchvision")}


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
    source = codebase.path_of("worker.timing")
    copy = tmp_path / "worker" / "timing.py"
    copy.parent.mkdir()
    monkeypatch.setattr(codebase, "HERE", tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def fingerprint(text: str) -> str:
        copy.write_text(text)
        codebase.import_graph.cache_clear()
        codebase._facts.cache_clear()
        return codebase.fingerprint(("worker.timing",))

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
import json
spec = json.loads({json.dumps(specs)!r})
from compilebench.core.experiment import Experiment
from compilebench.core.records import EnvironmentRequest
from compilebench.parent import jobs
from compilebench.worker import entry, runner
jobs.environment_job("cpu", spec["entry"], {str(tmp_path / "env.json")!r}, check=False)
entry.environment(EnvironmentRequest({str(tmp_path / "env.json")!r}, "cpu", spec["entry"]))  # its worker's side
jobs.reference_job(Experiment.from_json(spec["reference"]), {str(tmp_path / "ref.pt")!r})
assert runner.measure_process(Experiment.from_json(spec["benchmark"]))["status"] == "ok"
"""
    loaded = loaded_modules(code)
    scripts = ("environment_record", "reference_output", "benchmark_process")
    derived = set(codebase.closure(tuple(r for name in scripts for r in codebase.script_roots(name))))
    assert loaded <= derived, loaded - derived
    assert {"worker.runner", "worker.entry", "worker.timing", "parent.jobs"} <= loaded
    assert "report" not in {codebase.folder(name) for name in derived}
    # of the analysis, only the level-shift check, which decides whether a process is measured again
    assert {name for name in derived if codebase.folder(name) == "analysis"} == {"analysis.__init__", "analysis.levels"}
    assert codebase.WORKER in codebase.script_roots("benchmark_process")  # started through `supervise`, not imported


@pytest.mark.parametrize("script", ["table", "figures", "paper", "benchmark_result"])
def test_table_report_and_result_rules_run_within_their_derived_code(script):
    roots = codebase.script_roots(script)
    assert codebase.WORKER not in roots
    loaded = loaded_modules("; ".join(f"import {dotted(name)}" for name in roots))
    assert loaded <= set(codebase.closure(roots)), loaded - set(codebase.closure(roots))
    assert "worker" not in {codebase.folder(name) for name in codebase.closure(roots)}


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
