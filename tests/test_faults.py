"""Faults: a job past its time, a child that dies, determinism of inputs and references."""

from __future__ import annotations

import json
import time

import psutil
import pytest
import torch
from helpers import tiny_config

from compilebench import config as configuration
from compilebench import jobs, runner

pytestmark = pytest.mark.slow


def experiment(model: str, mode: str, **measure) -> dict:
    raw = tiny_config()
    raw["measure"].update(measure)
    return configuration.experiment(configuration.validate(raw), model, mode, "cpu", any_mode=True)


def test_compile_past_the_timeout_is_stopped_with_its_workers(tmp_path):
    out = tmp_path / "r.json"
    begin = time.monotonic()
    # A cold max-autotune compile takes far longer than a second.
    result = jobs.benchmark_job(experiment("resnet", "compile-max-autotune", timeout_s=1.0, private_cache=True), out)
    assert time.monotonic() - begin < 15
    assert result["status"] == "timeout" and "measure.timeout_s = 1.0" in result["error"]["message"]
    assert json.loads(out.read_text())["status"] == "timeout"
    assert psutil.Process().children(recursive=True) == []


def test_a_child_that_dies_before_writing_leaves_a_failed_result(tmp_path):
    out = tmp_path / "r.json"
    out.write_text('{"status": "ok"}')  # a stale result from an earlier run must not be read back
    # The child cannot read its environment record, so it exits without writing a result.
    result = jobs.benchmark_job(experiment("resnet", "eager"), out, env_record=tmp_path / "missing.json")
    assert result["status"] == "failed"
    assert "died with exit code 1" in result["error"]["message"]
    assert json.loads(out.read_text())["status"] == "failed"


def test_a_failure_inside_the_child_is_its_result(tmp_path):
    exp = experiment("resnet", "eager")
    exp["spec"]["config"] = {"num_classes": -1}  # building the model raises inside the child
    result = jobs.benchmark_job(exp, tmp_path / "r.json")
    assert result["status"] == "failed"
    assert "negative dimension" in result["error"]["message"] and result["error"]["traceback"]


def test_inputs_and_reference_are_deterministic():
    for model in ("resnet", "llama"):
        first = runner.reference_outputs(experiment(model, "eager"))
        second = runner.reference_outputs(experiment(model, "eager"))
        assert first.keys() == second.keys()
        for key in first:
            assert torch.equal(first[key], second[key]), (model, key)
