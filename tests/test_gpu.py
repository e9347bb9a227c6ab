"""GPU code paths: CUDA events, allocator peaks, reduce-overhead's CUDA graphs. Skipped without a GPU."""

from __future__ import annotations

import pytest
import torch
from helpers import measured, tiny_config

from compilebench.configuration import config as configuration
from compilebench.worker import environment_probe

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA or ROCm GPU"),
]


def gpu_experiment(model: str, mode: str, **spec) -> dict:
    raw = tiny_config(hardware={"gpu": {"device": "cuda"}})
    raw["models"][model].update(spec)
    return configuration.experiment(configuration.validate(raw), model, mode, "gpu", any_mode=True)


@pytest.mark.parametrize("mode", ["eager", "compile-default", "compile-reduce-overhead", "compile-max-autotune"])
def test_resnet_on_gpu_with_allocator_peaks(mode):
    result = measured(gpu_experiment("resnet", mode, dtype="bfloat16"))
    assert result["status"] == "ok", result["error"]
    assert result["memory"]["cuda_peak_allocated_bytes"] > 0
    assert result["memory"]["cuda_peak_reserved_bytes"] >= result["memory"]["cuda_peak_allocated_bytes"]
    assert result["correctness"]["passed"], result["correctness"]
    assert all(x > 0 for x in result["latency_ms"])


def test_generation_with_cuda_graphs_matches_eager():
    result = measured(gpu_experiment("llama", "compile-reduce-overhead"))
    assert result["status"] == "ok", result["error"]
    assert result["correctness"]["tokens_match"]
    assert result["generation"]["tokens_per_s"] > 0


def test_environment_names_the_gpu_and_runtime():
    environment_probe.validate("gpu", "cuda")
    record = environment_probe.record("gpu", {"device": "cuda"})
    assert record["accelerator"]["name"] and record["accelerator"]["runtime"] in ("cuda", "hip")


def test_profile_ranks_operators_by_device_time(tmp_path):
    exp = gpu_experiment("resnet", "compile-default", dtype="bfloat16")
    exp = exp.replace(
        measure=exp.measure.replace(profile=True, profile_iterations=2, trace=str(tmp_path / "trace.json"))
    )
    result = measured(exp)
    assert result["status"] == "ok", result["error"]
    assert result["profile"]["time_basis"] == "device" and result["profile"]["top_ops"]
    assert (tmp_path / "trace.json").stat().st_size > 0
    assert result["workload"]["flops_per_call"] > 0 and result["workload"]["compute_dtype"] == "bfloat16"


def test_generation_with_bf16_weights_built_on_the_gpu():
    result = measured(gpu_experiment("llama", "compile-default", weights_dtype="bfloat16"))
    assert result["status"] == "ok", result["error"]
    assert result["workload"]["compute_dtype"] == "bfloat16" and result["correctness"]["passed"], result["correctness"]
