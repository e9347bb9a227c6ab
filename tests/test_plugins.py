"""A mode kind and a model source added from outside the package (`tests/toy_plugin.py`, named in
`COMPILEBENCH_PLUGINS`): checked by `compilebench check`, measured by a real worker process, summarised as a result."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import compilebench, tiny_config, write_config

from compilebench.analysis import summaries
from compilebench.configuration import config as configuration
from compilebench.core import kinds, sources
from compilebench.parent import jobs

pytestmark = pytest.mark.slow

TESTS = Path(__file__).parent
TOY_MODEL = {"tiny-toy": {"source": "toy", "arch": "narrow", "image_size": 16, "batch_size": 2}}


@pytest.fixture
def plugged(monkeypatch):
    """The toy plugin named for this process and every process it starts; forgotten afterwards."""
    monkeypatch.setenv("COMPILEBENCH_PLUGINS", "toy_plugin")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
    yield
    kinds.unregister("channels-last")
    sources.unregister("toy")


def toy_config(**definition) -> dict:
    return tiny_config(
        TOY_MODEL,
        modes=["eager", "cl"],
        mode_definitions={"cl": {"kind": "channels-last", **definition}},
    )


def test_a_plugin_kind_and_source_are_checked_measured_in_a_worker_and_summarised(plugged, tmp_path):
    config_path = tmp_path / "toy.yaml"
    write_config(config_path, toy_config())
    checked = compilebench("check", "--config", config_path)
    assert checked.returncode == 0, checked.stderr
    assert "is valid: 1 models, 2 experiments" in checked.stdout

    write_config(config_path, toy_config(**{"channels-last": {"contiguous": True}}))
    refused = compilebench("check", "--config", config_path)
    assert refused.returncode != 0 and "mode_definitions.cl.channels-last" in refused.stderr + refused.stdout

    config = configuration.validate(toy_config())
    exp = configuration.experiment(config, "tiny-toy", "cl", "cpu")
    assert exp.mode_settings.kind == "channels-last" and exp.spec.source == "toy"
    reference = tmp_path / "reference.pt"
    assert jobs.reference_job(exp.reference(), reference) is None
    record = jobs.process_job(exp, tmp_path / "1.json", 1, tmp_path / "caches", reference=reference)
    assert record["status"] == "ok", record.get("error")
    result = summaries.result_job(exp, [tmp_path / "1.json"], tmp_path / "result.json")
    assert json.loads((tmp_path / "result.json").read_text())["status"] == "ok"
    assert result["mode_settings"] == {"kind": "channels-last", "contiguous_inputs": True}
    assert result["correctness"]["passed"] and result["speedup"]["value"] > 0


def test_a_plugin_that_cannot_be_imported_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("COMPILEBENCH_PLUGINS", "no_such_plugin")
    config_path = tmp_path / "toy.yaml"
    write_config(config_path, tiny_config())
    refused = compilebench("check", "--config", config_path)
    assert refused.returncode != 0
    assert "COMPILEBENCH_PLUGINS" in refused.stderr and "no_such_plugin" in refused.stderr
