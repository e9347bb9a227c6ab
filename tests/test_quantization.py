"""torchao quantized modes: weights quantized by type on a copy, the unquantized mode as baseline, their own
correctness rule, weight bytes, and the clear errors."""

from __future__ import annotations

import sys
from html import unescape
from pathlib import Path

import pandas as pd
import pytest
import torch
from helpers import ROOT, TINY_MODELS, measured, tiny_config

from compilebench.configuration import config as configuration
from compilebench.core import modes
from compilebench.core.errors import ConfigError, Unsupported
from compilebench.core.experiment import Quantize
from compilebench.core.files import read_json
from compilebench.worker import quantization

VERDICTS = {"faster", "slower", "same", "unclear"}

torchao = pytest.importorskip("torchao", reason="needs torchao (pip install -e '.[quant]'; .ci/run installs it)")

QUANTIZED = {
    "eager-int8": {"kind": "eager", "quantize": {"method": "int8_weight_only"}},
    "compile-int8-dynamic": {"kind": "compile", "quantize": {"method": "int8_dynamic_activation_int8_weight"}},
    "eager-int4": {"kind": "eager", "quantize": {"method": "int4_weight_only", "group_size": 32}},
}


def validated(models: dict, mode_names: list[str], **overrides) -> dict:
    raw = tiny_config(models, mode_definitions=QUANTIZED, **overrides)
    raw["modes"] = mode_names
    return configuration.validate(raw)


INT8 = Quantize(method="int8_weight_only", min_cosine=modes.QUANTIZE_MIN_COSINE)


def test_a_quantized_copy_holds_torchao_tensors_and_leaves_the_model_float():
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).eval()
    copy, record = quantization.quantized_copy(model, INT8, "mode_definitions.x.quantize")
    assert isinstance(copy[0].weight, torchao.utils.TorchAOBaseTensor)  # by type, not by name
    assert isinstance(copy[2].weight, torchao.utils.TorchAOBaseTensor)
    assert type(model[0].weight.data) is torch.Tensor and model[0].weight.dtype == torch.float32
    assert record["quantized_tensors"] == 2 and record["quantized_share"] > 0.98  # the biases stay float
    assert record["weight_bytes"] == sum(p.numel() * 4 for p in model.parameters())
    assert record["weight_bytes_quantized"] < 0.3 * record["weight_bytes"]  # int8 data, a scale per row


def test_a_model_torchao_quantizes_nothing_of_is_unsupported_not_labelled_int8():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 3)).eval()
    with pytest.raises(Unsupported) as refused:
        quantization.quantized_copy(model, INT8, "mode_definitions.x.quantize")
    assert "quantized none of the model's weights with int8_weight_only" in str(refused.value)
    assert "this model's weights are in Conv2d" in str(refused.value)


def result(project: Path, model: str, mode: str) -> dict:
    return read_json(project / "results" / "runs" / "cpu" / model / f"{mode}.json")


# The shared run (tests/conftest.py) holds a tiny CNN in compile-int8 beside compile-default, and a tiny generator
# in eager-int8 beside eager, each measured by Snakemake like any other mode.
@pytest.mark.slow
def test_a_quantized_mode_quantizes_only_what_torchao_quantizes_and_is_judged_by_its_own_rule(finished):
    project, _, _ = finished
    cnn, generator = result(project, "resnet", "compile-int8"), result(project, "llama", "eager-int8")
    assert cnn["status"] == "ok" and generator["status"] == "ok", (cnn.get("error"), generator.get("error"))
    assert cnn["quantization"]["tensor_types"] == ["Int8Tensor"] and cnn["quantization"]["quantized_tensors"] == 1
    assert 0 < cnn["quantization"]["quantized_share"] < 0.01  # a CNN: only its classifier is linear
    assert generator["quantization"]["quantized_share"] > 0.5  # a transformer: most of it
    record = generator["quantization"]
    assert record["weight_bytes_quantized"] < 0.6 * record["weight_bytes"]
    assert generator["workload"]["parameter_bytes"] == record["weight_bytes_quantized"]  # decode reads these
    for quantized in (cnn, generator):
        check = quantized["correctness"]
        assert check["rule"] == "quantized" and check["criterion"].startswith("quantized: cosine >= 0.98")
        assert check["passed"] == (check["cosine"] >= 0.98)
    assert "token_agreement" in generator["correctness"] and "top1_agreement" in cnn["correctness"]
    assert result(project, "resnet", "eager")["correctness"]["rule"] != "quantized"


@pytest.mark.slow
def test_the_baseline_of_a_quantized_mode_is_the_same_mode_unquantized(finished):
    project, _, _ = finished
    effects = pd.read_csv(project / "results" / "tables" / "mode_effects.csv").set_index(["model", "mode"])
    assert effects.loc[("resnet", "compile-int8"), "base_mode"] == "compile-default"
    assert effects.loc[("llama", "eager-int8"), "base_mode"] == "eager"
    assert effects.loc[("llama", "eager-int8"), "base_speedup"] == 1.0
    row = effects.loc[("resnet", "compile-int8")]
    assert row["differs_in"] == "quantize: int8_weight_only"
    assert row["ratio_ci95_low"] <= row["ratio"] <= row["ratio_ci95_high"] and row["verdict"] in VERDICTS
    runs = pd.read_csv(project / "results" / "tables" / "runs.csv").set_index(["model", "mode"])
    assert runs.loc[("llama", "eager-int8"), "mode_quantize"] == "int8_weight_only"
    assert pd.isna(runs.loc[("llama", "eager"), "weight_bytes"])
    html = unescape((project / "results" / "report" / "paper.html").read_text())
    assert 'id="quantization-table"' in html and "quantized: cosine ≥ 0.98" in html


@pytest.mark.slow
def test_int4_on_this_cpu_is_unsupported_with_torchaos_reason():
    config = validated({"llama": TINY_MODELS["llama"]}, ["eager", "eager-int4"])
    int4 = measured(configuration.experiment(config, "llama", "eager-int4", "cpu"))
    if int4["status"] == "ok":
        pytest.skip("this torchao runs int4 weight-only on this CPU")
    assert int4["status"] == "unsupported"
    assert "torchao" in int4["error"]["message"] and "int4_weight_only" in int4["error"]["message"]


def test_quantization_without_torchao_fails_at_validation_with_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "torchao", None)  # as in a Python without torchao: import fails
    with pytest.raises(ConfigError, match=r"mode_definitions\.eager-int8\.quantize.*pip install -e \"\.\[quant\]\""):
        validated({"resnet": TINY_MODELS["resnet"]}, ["eager", "eager-int8"])
    validated({"resnet": TINY_MODELS["resnet"]}, ["eager"])  # a config that does not quantize does not need it


@pytest.mark.parametrize(
    ("definition", "key"),
    [
        ({"kind": "jit", "quantize": {"method": "int8_weight_only"}}, "mode_definitions.bad.quantize"),
        ({"kind": "eager", "quantize": {"method": "int8_weight_only", "group_size": 32}}, "bad.quantize.group_size"),
        ({"kind": "eager", "quantize": {"method": "int2"}}, "mode_definitions.bad.quantize.method"),
    ],
)
def test_bad_quantize_settings_name_their_key(definition, key):
    raw = tiny_config({"resnet": TINY_MODELS["resnet"]}, mode_definitions={"bad": definition})
    raw["modes"] = ["eager", "bad"]
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        configuration.validate(raw)


def test_the_experiment_file_runs_every_quantized_mode_beside_its_unquantized_baseline():
    config = configuration.load(ROOT / "config" / "experiments" / "quantization.yaml")
    defined = modes.definitions(config)
    for model, entry in config["models"].items():
        names = entry.get("modes", config["modes"])
        for mode in names:
            resolved = modes.settings(defined[mode])
            baseline = modes.unquantized(resolved)
            if resolved.get("quantize"):
                assert any(modes.settings(defined[other]) == baseline for other in names), (model, mode)
