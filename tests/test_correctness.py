"""Correctness as PyTorch's benchmark harness judges it: against the model's float64 output."""

from __future__ import annotations

import pytest
import torch
from helpers import TINY_MODELS, tiny_config

from compilebench.configuration import config as configuration
from compilebench.worker import correctness, runner


def small_network():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 10)).eval()
    x = torch.randn(8, 64)
    with torch.no_grad():
        eager = net(x)
        float64 = net.double()(x.double())
    return eager, float64


def test_float32_rounding_passes_the_float64_rule_and_a_perturbation_fails_it():
    eager, float64 = small_network()
    # The same arithmetic in another order differs from eager at float32 rounding level.
    rounded = (eager.double() + (float64 - eager.double()) * 0.5).float()
    passed = correctness.compare(eager, rounded, "float32", float64=float64, eager=eager)
    assert passed["passed"] and passed["rule"] == "float64" and passed["float64_multiplier"] == 2.0
    assert passed["float64_rmse"] <= passed["eager_float64_rmse"]
    # A perturbation the float32 tolerance lets through (1e-3 of the largest value) but float64 does not.
    perturbed = eager + 3e-4 * torch.randn_like(eager)
    loose = correctness.compare(eager, perturbed, "float32")
    assert loose["passed"] and loose["rule"] == "float32 reference"
    strict = correctness.compare(eager, perturbed, "float32", float64=float64, eager=eager)
    assert not strict["passed"] and strict["float64_rmse"] > 2 * strict["eager_float64_rmse"] + 1e-5
    assert "RMSE against float64" in strict["criterion"]


def test_reduced_precision_allows_three_times_eagers_error():
    eager, float64 = small_network()
    bf16 = eager.bfloat16().float()
    check = correctness.compare(eager, bf16, "bfloat16", float64=float64, eager=bf16)
    assert check["passed"] and check["float64_multiplier"] == 3.0


def test_without_a_float64_output_the_float32_rule_applies_and_says_why():
    eager, _ = small_network()
    check = correctness.compare(eager, eager, "float32", float64_missing="the model does not run in float64")
    assert check["passed"] and check["rule"] == "float32 reference"
    assert check["float64_missing"] == "the model does not run in float64"


def test_reference_carries_the_float64_output_of_classifiers_and_language_models():
    config = configuration.validate(tiny_config({name: TINY_MODELS[name] for name in ("resnet", "llama")}))
    for model in ("resnet", "llama"):
        outputs = runner.reference_outputs(configuration.reference_experiment(config, model, "cpu"))
        assert outputs["float64"].dtype == torch.float64 and outputs["float64"].shape == outputs["output"].shape
        assert torch.allclose(outputs["float64"].float(), outputs["output"], atol=1e-3)


def test_generated_tokens_report_agreement_and_the_first_disagreement():
    reference = torch.tensor([[1, 2, 3, 4, 5, 6]])
    assert correctness.compare_tokens(reference, reference)["first_disagreement"] is None
    drifted = torch.tensor([[1, 2, 3, 9, 9, 6]])
    check = correctness.compare_tokens(reference, drifted)
    assert not check["tokens_match"] and check["first_disagreement"] == 3
    assert check["token_agreement"] == pytest.approx(4 / 6)
