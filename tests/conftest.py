"""Shared fixtures; the helpers they build on live in helpers.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import copy_project, planned_outputs, shared_run_config, snakemake

# Tests that do not measure compile time share one inductor cache, to keep CI quick.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path.home() / ".cache" / "compilebench-tests-inductor"))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items):
    """A test on the shared run waits for that run (minutes): it is slow, whatever else it does, so that
    `pytest -m "not slow and not slurm"` (the fast subset) never starts it. The tests run in two processes
    (pyproject's `-n 2 --dist loadgroup`): every test on a costly fixture runs in the process that made it (one
    on two such fixtures joins their groups), so that no fixture is made twice."""
    needs = {item: _costly_fixtures(item) for item in items}
    root: dict[str, str] = {}

    def group(name: str) -> str:
        while root.get(name, name) != name:
            name = root[name]
        return name

    for names in needs.values():
        joined = sorted(group(name) for name in names)
        root.update((name, joined[0]) for name in joined)
    for item, names in needs.items():
        if "shared-run" in names:
            item.add_marker(pytest.mark.slow)
        if names:
            item.add_marker(pytest.mark.xdist_group(group(next(iter(names)))))


def _costly_fixtures(item) -> set[str]:
    """ "shared-run" for a test on the shared run, and its module's name for a test on a fixture its module makes
    once."""
    names = getattr(item, "fixturenames", ())
    info = getattr(item, "_fixtureinfo", None)
    defs = [d for name in names for d in (info.name2fixturedefs.get(name, ()) if info else ())]
    found = {"shared-run"} if "finished" in names else set()
    if any(d.scope in ("module", "package", "class") for d in defs):
        found.add(item.module.__name__)
    return found


@pytest.fixture
def config_file(tmp_path):
    """Write a config dict as YAML and return its path."""
    import yaml

    def write(config: dict, name: str = "config.yaml") -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(config))
        return path

    return write


@pytest.fixture(scope="session")
def finished(tmp_path_factory):
    """The one finished tiny run most end-to-end tests assert on: every stage to the paper, a defined mode, a
    sweep, warm starts, compile traces, an unsupported mode, one model whose reference cannot be computed, one
    measured in two processes (in rounds), torchao quantized modes beside their unquantized baselines (a CNN
    compiled, a generator in eager), and a ViT swept over its depth, compiled whole and regionally, every process
    cold, the generator's training step compiled, and the CNN in ONNX Runtime. Tests that change it leave it whole
    again."""
    config = shared_run_config(tmp_path_factory.mktemp("weights"))
    project = copy_project(tmp_path_factory.mktemp("project"), config)
    runs = {o for o in planned_outputs(project) if o.startswith("results/runs/")}
    done = snakemake(project)
    assert "compilebench: 20 ok, 2 failed, 0 timeout, 1 unsupported" in done.stderr  # failures are data
    return project, config, runs
