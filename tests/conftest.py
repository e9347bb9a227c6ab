"""Shared fixtures; the helpers they build on live in helpers.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import copy_project, planned_outputs, shared_run_config, snakemake

# Tests that do not measure compile time share one inductor cache, to keep CI quick.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path.home() / ".cache" / "compilebench-tests-inductor"))


def pytest_collection_modifyitems(items):
    """A test on the shared run waits for that run (minutes): it is slow, whatever else it does, so that
    `pytest -m "not slow and not slurm"` (the fast subset) never starts it."""
    for item in items:
        if "finished" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


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
    assert "compilebench: 18 ok, 2 failed, 0 timeout, 1 unsupported" in done.stderr  # failures are data
    return project, config, runs
