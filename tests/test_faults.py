"""Faults: a job past its time, a child that dies, determinism of inputs and references."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import psutil
import pytest
import torch
import yaml
from helpers import tiny_config

from compilebench import cli
from compilebench.configuration import config as configuration
from compilebench.parent import jobs
from compilebench.worker import runner

pytestmark = pytest.mark.slow


def experiment(model: str, mode: str, **measure) -> dict:
    raw = tiny_config()
    raw["measure"].update(measure)
    return configuration.experiment(configuration.validate(raw), model, mode, "cpu", any_mode=True)


def test_compile_past_the_timeout_is_stopped_with_its_workers(tmp_path):
    out = tmp_path / "r.json"
    begin = time.monotonic()
    # A cold max-autotune compile takes far longer than a second.
    result = cli.benchmark_job(experiment("resnet", "compile-max-autotune", timeout_s=1.0, private_cache=True), out)
    assert time.monotonic() - begin < 15
    assert result["status"] == "timeout" and "measure.timeout_s = 1.0" in result["error"]["message"]
    assert json.loads(out.read_text())["status"] == "timeout"
    assert psutil.Process().children(recursive=True) == []


def test_a_child_that_dies_before_writing_leaves_a_failed_result(tmp_path):
    out = tmp_path / "r.json"
    out.write_text('{"status": "ok"}')  # a stale result from an earlier run must not be read back
    # The child cannot read its environment record, so it exits without writing a result.
    result = cli.benchmark_job(experiment("resnet", "eager"), out, env_record=tmp_path / "missing.json")
    assert result["status"] == "failed"
    assert "died with exit code 1" in result["error"]["message"]
    assert json.loads(out.read_text())["status"] == "failed"


def test_a_failure_inside_the_child_is_its_result(tmp_path):
    exp = experiment("resnet", "eager")
    exp = exp.replace(spec=exp.spec.replace(config={"num_classes": -1}))  # building the model raises in the child
    result = cli.benchmark_job(exp, tmp_path / "r.json")
    assert result["status"] == "failed"
    assert "negative dimension" in result["error"]["message"] and result["error"]["traceback"]


def test_inputs_and_reference_are_deterministic():
    for model in ("resnet", "llama"):
        first = runner.reference_outputs(experiment(model, "eager"))
        second = runner.reference_outputs(experiment(model, "eager"))
        assert first.keys() == second.keys()
        for key in first:
            assert torch.equal(first[key], second[key]), (model, key)


# The example: hidden size 16384, 48 layers, LlamaConfig's other defaults.
HUGE_LLAMA = {
    "hidden_size": 16384,
    "num_hidden_layers": 48,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "intermediate_size": 11008,
    "vocab_size": 32000,
}


def test_a_model_too_big_for_the_device_fails_its_reference_and_each_benchmark_names_it(tmp_path):
    """The size is estimated on the meta device: nothing is allocated, and the failure is data, not a killed job."""
    exp = experiment("llama", "eager")
    exp = exp.replace(spec=exp.spec.replace(config={**exp.spec.config, **HUGE_LLAMA}))
    reference = tmp_path / "ref.pt"
    error = jobs.reference_job(exp.reference(), reference)
    assert "`models.llama`" in error["message"] and "need about 293 GiB" in error["message"]
    assert f"the device (cpu) has {psutil.virtual_memory().total / 2**30:.0f} GiB" in error["message"]
    result = cli.benchmark_job(exp, tmp_path / "r.json", reference)
    assert result["status"] == "failed" and result["finished_at"]
    assert result["error"]["message"].startswith("the eager reference of `llama` on `cpu` failed, so this did not run")
    assert "need about 293 GiB" in result["error"]["message"]


def test_a_batch_whose_activations_cannot_fit_is_refused_before_anything_is_allocated():
    """The weights of the tiny resnet are a few MB; a million images of it are not: the tensors of one forward pass
    are counted on the meta device, op by op, as they are made and freed."""
    from compilebench.worker import models

    spec = experiment("resnet", "eager").spec
    per_image = (3 * 32 * 32 + 64 * 16 * 16) * 4  # the input and the first convolution's output, in float32
    peak = models.estimated_activation_bytes("resnet", spec.replace(batch_size=64))
    assert 64 * per_image <= peak <= 10 * 64 * per_image
    assert models.estimated_activation_bytes("llama", experiment("llama", "eager").spec) > 0  # transformers too
    huge = spec.replace(batch_size=1_000_000)
    with pytest.raises(models.ModelError) as refused:
        models.check_fits("resnet", huge, "cpu")
    message = str(refused.value)
    assert message.startswith("Config key `models.resnet`: one forward pass at batch_size 1000000 needs about")
    assert "smaller batch_size" in message
    models.check_fits("resnet", spec.replace(batch_size=64), "cpu")  # what fits passes


def test_the_memory_guard_counts_in_eval_mode_and_checks_a_streams_largest_shape():
    """Counted in training mode, a ResNet at batch 1 failed (batch norm wants more than one value per channel) and
    the guard switched itself off; a stream must fit at its largest value, before its first call."""
    from compilebench.core.experiment import Stream
    from compilebench.worker import models

    spec = experiment("resnet", "eager").spec.replace(batch_size=1)
    known = models.check_fits("resnet", spec, "cpu")
    assert known["estimated_activation_bytes"] > 3 * 32 * 32 * 4 and known["estimate_unavailable"] is None
    stream = spec.replace(stream=Stream.from_json({"batch_size": [1, 100_000_000]}))
    with pytest.raises(models.ModelError) as refused:
        models.check_fits("resnet", stream, "cpu")
    assert str(refused.value).startswith("Config key `models.resnet`: one forward pass at batch_size 100000000")
    checkpoint = experiment("llama", "eager").spec.replace(weights="some/checkpoint")
    assert models.activation_estimate("llama", checkpoint) == (
        None,
        "a transformers checkpoint is not built without loading its weights",
    )


def test_hardware_settings_that_do_not_hold_fail_the_environment_check_with_both_values(tmp_path):
    from compilebench.worker import environment_probe

    running, cores = torch.get_num_threads(), os.cpu_count()
    environment_probe.check_settings("cpu", {"device": "cpu", "threads": running})  # as configured: passes
    refusals = {
        "hardware.cpu.threads` is 1000000, more threads than the": {"threads": 1_000_000},
        "hardware.cpu.env.OMP_NUM_THREADS` is 'abc', which torch cannot read": {"env": {"OMP_NUM_THREADS": "abc"}},
        "hardware.cpu.env.DNNL_DEFAULT_FPMATH_MODE` is 'FAST'": {"env": {"DNNL_DEFAULT_FPMATH_MODE": "FAST"}},
    }
    if cores > 1:
        other = 1 if running != 1 else 2
        refusals[f"hardware.cpu.threads` is {other}, but torch"] = {"threads": other}
    for expected, entry in refusals.items():
        with pytest.raises(environment_probe.HardwareError) as refused:
            environment_probe.check_settings("cpu", {"device": "cpu", **entry})
        assert expected in str(refused.value), str(refused.value)
    # The environment job checks it in the hardware's own interpreter, before any benchmark job: run from the
    # command line here, since the job sets the thread count of the process it runs in.
    raw = tiny_config(hardware={"cpu": {"device": "cpu", "threads": 1_000_000}})
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw))
    done = subprocess.run(
        [sys.executable, "-m", "compilebench.cli", "env", "--config", tmp_path / "config.yaml", "--check", "--out",
         tmp_path / "env.json"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 1 and json.loads((tmp_path / "env.json").read_text())["status"] == "failed"
    assert f"`hardware.cpu.threads` is 1000000, more threads than the {cores} logical cores" in done.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_a_failed_environment_check_is_a_record_and_its_jobs_say_why_they_did_not_run(tmp_path):
    env_record = tmp_path / "env.json"
    record = jobs.environment_job("gpu", {"device": "cuda"}, env_record)
    assert record["status"] == "failed" and "`hardware.gpu`" in record["error"]["message"]
    assert json.loads(env_record.read_text())["torch"] == torch.__version__  # still says what the platform has
    exp = experiment("resnet", "eager")
    error = jobs.reference_job(exp, tmp_path / "ref.pt", env_record)
    assert error["message"].startswith("the environment check of hardware `cpu` failed")
    result = cli.benchmark_job(exp, tmp_path / "r.json", tmp_path / "ref.pt", env_record)
    assert result["status"] == "failed" and "environment check" in result["error"]["message"]
