"""Two PyTorch versions side by side: a platform with its own Python environment, built from envs/NAME.txt."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest
import torch
import yaml
from helpers import (
    ASSETS_MIRROR,
    CPU,
    ROOT,
    TINY_MODELS,
    WORKFLOW_MEASURE,
    compilebench,
    copy_project,
    expected_runs,
    planned_outputs,
    snakemake,
    tiny_workflow_config,
    write_config,
)

from compilebench.history import changes, store
from compilebench.parent import pyenv

pytestmark = pytest.mark.slow

# The second torch is the 2.13 CPU wheel (on this machine's disk), as the shipped experiment file
# and envs/torch-2.13.txt have it.
OLD = "torch-2.13"
EXPERIMENT = ROOT / "config" / "experiments" / "torch-versions.yaml"


def two_torch_config() -> dict:
    """The shipped experiment file with one tiny model, quick settings, and a third platform whose
    requirements file does not exist."""
    config = yaml.safe_load(EXPERIMENT.read_text())
    assert config["hardware"]["cpu-torch-2.13"]["python_env"] == OLD and config["report"]["baseline_hardware"] == "cpu"
    config["models"] = {"vit": TINY_MODELS["vit"]}
    config["measure"] = dict(WORKFLOW_MEASURE)
    config["hardware"]["cpu-unbuilt"] = {"device": "cpu", "python_env": "no-such-env"}
    for entry in config["hardware"].values():
        entry.update(threads=CPU["threads"])
    return config


def old_torch_missing() -> str | None:
    """Why pip cannot install the second torch here (it resolves without installing), or None."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--quiet", "torch==2.13.0+cpu"],
        capture_output=True,
        text=True,
    )
    return (
        None if done.returncode == 0 else f"pip finds no torch==2.13.0+cpu here: {pyenv.last_error_line(done.stderr)}"
    )


@pytest.fixture(scope="module")
def two_torches(tmp_path_factory):
    """One run of a tiny model with the installed torch, with torch 2.13, and on the unbuildable platform."""
    if missing := old_torch_missing():
        pytest.skip(missing)
    config = two_torch_config()
    project = copy_project(tmp_path_factory.mktemp("versions"), tiny_workflow_config(ASSETS_MIRROR))
    write_config(project / "config" / "experiments" / "torch-versions.yaml", config)
    done = snakemake(project, "--configfile", "config/experiments/torch-versions.yaml")
    assert "compilebench: 4 ok, 2 failed, 0 timeout, 0 unsupported" in done.stderr
    return project, config


def env_record(project, hardware: str) -> dict:
    return json.loads((project / "results" / "env" / f"{hardware}.json").read_text())


def test_each_platform_measures_with_its_own_torch_and_says_so(two_torches):
    project, config = two_torches
    assert env_record(project, "cpu")["torch"] == torch.__version__
    old = env_record(project, "cpu-torch-2.13")
    assert old["status"] == "ok" and old["torch"].startswith("2.13.0") and old["python_env"] == OLD
    assert old["python_executable"].endswith(f"resources/python_envs/{OLD}/venv/bin/python")
    for path in expected_runs(config, ("cpu", "cpu-torch-2.13")):
        result = json.loads((project / path).read_text())
        assert result["status"] == "ok", result["error"]
        assert result["environment"]["torch"] == env_record(project, result["hardware"])["torch"]
    runs = pd.read_csv(project / "results" / "tables" / "runs.csv")
    assert set(runs.loc[runs["hardware"] == "cpu-torch-2.13", "torch"]) == {old["torch"]}
    html = (project / "results" / "report" / "paper.html").read_text()
    setup = html.split('<section id="setup">')[1].split("</section>")[0]
    assert f"<td>{torch.__version__}</td>" in setup and f"envs/{OLD}.txt" in setup
    assert re.search(rf"<td>{re.escape(old['torch'])}<br>Python environment <code>{OLD}</code>", setup)
    packages = html.split('id="package-table"')[1].split("</table>")[0]
    assert "<th>cpu</th><th>cpu-torch-2.13</th>" in packages and f"<td>{old['torch']}</td>" in packages


def test_the_versions_get_a_verdict_per_experiment_and_a_forest_plot(two_torches):
    project, _ = two_torches
    comparison = pd.read_csv(project / "results" / "tables" / "comparison.csv")
    each = comparison[comparison["scope"] == "experiment"]
    assert set(zip(each["hardware"], each["mode"])) == {
        ("cpu-torch-2.13", "eager"),
        ("cpu-torch-2.13", "compile-default"),
    }
    assert set(each["verdict"]) <= {"faster", "slower", "same", "unclear"}
    assert (each["ratio_ci95_low"] <= each["ratio"]).all() and (each["ratio"] <= each["ratio_ci95_high"]).all()
    assert set(each["torch"]) == {env_record(project, "cpu-torch-2.13")["torch"]}
    assert set(each["base_torch"]) == {torch.__version__}
    assert set(comparison.loc[comparison["scope"] == "geomean", "mode"]) == {"eager", "compile-default"}
    assert (project / "results" / "report" / "figures" / "comparison.svg").stat().st_size > 1000
    html = (project / "results" / "report" / "paper.html").read_text()
    assert (
        f"cpu-torch-2.13 (torch {env_record(project, 'cpu-torch-2.13')['torch']} against {torch.__version__})" in html
    )


def test_a_platform_whose_environment_cannot_be_built_fails_alone_naming_its_key(two_torches):
    project, _ = two_torches
    record = env_record(project, "cpu-unbuilt")
    assert record["status"] == "failed"
    message = record["error"]["message"]
    assert "`hardware.cpu-unbuilt.python_env`" in message and "envs/no-such-env.txt does not exist" in message
    for mode in ("eager", "compile-default"):
        result = json.loads((project / "results" / "runs" / "cpu-unbuilt" / "vit" / f"{mode}.json").read_text())
        assert result["status"] == "failed" and "`hardware.cpu-unbuilt.python_env`" in result["error"]["message"]
    assert "`hardware.cpu-unbuilt.python_env`" in (project / "results" / "report" / "paper.html").read_text()


def test_editing_the_requirements_file_rebuilds_that_environment_and_reruns_only_its_platform(two_torches):
    project, _ = two_torches
    requirements = project / "envs" / f"{OLD}.txt"
    before = requirements.stat()
    requirements.write_text(requirements.read_text() + "# pinned again\n")
    try:
        planned = planned_outputs(project, "--configfile", "config/experiments/torch-versions.yaml")
    finally:
        requirements.write_text(requirements.read_text().removesuffix("# pinned again\n"))
        os.utime(requirements, ns=(before.st_atime_ns, before.st_mtime_ns))
    measured = {o for o in planned if o.startswith(("results/runs/", "results/env/", "resources/"))}
    assert f"resources/python_envs/{OLD}/build.json" in measured
    assert {o for o in measured if o.startswith("results/runs/")} == {
        "results/runs/cpu-torch-2.13/vit/eager.json",
        "results/runs/cpu-torch-2.13/vit/compile-default.json",
    }
    assert "results/env/cpu.json" not in measured


def test_a_moved_project_reruns_nothing_and_its_environment_imports_the_moved_checkout(two_torches):
    project, _ = two_torches
    moved = project.with_name(project.name + "-moved")
    project.rename(moved)  # as `mv` moves it; a copy keeps the old one, which nothing in the venv names
    try:
        assert planned_outputs(moved, "--configfile", "config/experiments/torch-versions.yaml") == set()
        python = str(moved / "resources" / "python_envs" / OLD / "venv" / "bin" / "python")
        probe = "import compilebench, torch; print(compilebench.__file__, torch.__version__)"
        child = {**os.environ, "PYTHONPATH": str(moved / "src")}  # what every job gives its measuring child
        where, version = subprocess.run(
            [python, "-c", probe], env=child, capture_output=True, text=True, check=True
        ).stdout.split()
        assert where.startswith(str(moved / "src")) and version.startswith("2.13")
        alone = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        bare = subprocess.run([python, "-c", "import compilebench"], env=alone, capture_output=True, text=True)
        assert "No module named 'compilebench'" in bare.stderr  # no path into any checkout is kept in the venv
    finally:
        moved.rename(project)


def test_a_requirement_pip_cannot_resolve_fails_the_build_with_pips_last_error_line(tmp_path):
    (tmp_path / "bad.txt").write_text("compilebench-no-such-package==1.0\n")
    record = pyenv.build("bad", tmp_path / "bad.txt", tmp_path / "venv", tmp_path / "build.json")
    assert record["status"] == "failed"
    assert record["error"]["message"].startswith(f"pip could not install {tmp_path / 'bad.txt'}: ERROR: ")
    assert "compilebench-no-such-package==1.0" in record["error"]["message"]
    assert json.loads((tmp_path / "build.json").read_text()) == record


def test_an_environment_without_torch_fails_the_build_saying_torch_does_not_import(tmp_path):
    (tmp_path / "no-torch.txt").write_text("psutil\n")
    record = pyenv.build("no-torch", tmp_path / "no-torch.txt", tmp_path / "venv", tmp_path / "build.json")
    assert record["status"] == "failed"
    assert record["error"]["message"] == "torch fails to import in it: ModuleNotFoundError: No module named 'torch'"


def test_the_shipped_requirements_pin_every_package():
    lines = [line for line in (ROOT / "envs" / f"{OLD}.txt").read_text().splitlines() if not line.startswith("#")]
    assert "torch==2.13.0+cpu" in lines and all("==" in line for line in lines)


def test_the_two_torches_filed_as_one_entry_make_two_point_series_of_a_history(two_torches, tmp_path):
    """Each platform added alone and filed under `cpu` gives every series of the history a point per torch, each
    with its processes' values; two points confirm no change, and the dashboard labels them by torch version."""
    project, _ = two_torches
    path = tmp_path / "history.sqlite"
    for entry in ("cpu-torch-2.13", "cpu"):
        done = compilebench("history", "add", project, "--store", path, "--hardware", entry, "--as", "cpu")
        assert done.returncode == 0 and "added run" in done.stdout, done.stderr
    with store.opened(path) as connection:
        series = changes.read_series(connection)
    assert {hardware for hardware, *_ in series} == {"cpu"}
    points = series[("cpu", "vit", "compile-default", "speedup")]
    old = env_record(project, "cpu-torch-2.13")["torch"]
    assert sorted(p.torch for p in points) == sorted([old, torch.__version__])
    assert all(p.replicates for p in points)
    done = compilebench("history", "regressions", "--store", path, "--fail-on-regression")
    assert done.returncode == 0 and "REGRESSION" not in done.stdout, done.stdout + done.stderr
    site = tmp_path / "site"
    assert compilebench("history", "report", "--store", path, site).returncode == 0
    pages = [p.read_text() for p in site.glob("*.html") if p.name != "index.html"]
    assert len(pages) == 1 and old in pages[0] and torch.__version__ in pages[0]  # one page: cpu × vit
    unknown = compilebench("history", "add", project, "--store", path, "--hardware", "gpu")
    assert unknown.returncode == 2 and "--hardware 'gpu'" in unknown.stderr and "cpu-torch-2.13" in unknown.stderr
