"""The engine on real tiny models, every mode on the CPU."""

from __future__ import annotations

import pytest
import torch
from helpers import measured, tiny_config

from compilebench.configuration import config as configuration

pytestmark = pytest.mark.slow


def experiment(model: str, mode: str, models: dict | None = None, **measure) -> dict:
    raw = tiny_config(models)
    raw["measure"].update(measure)
    config = configuration.validate(raw)
    return configuration.experiment(config, model, mode, "cpu", any_mode=True)


def assert_measured(result: dict, mode: str) -> None:
    assert result["status"] == "ok", result["error"]
    assert result["schema"] == 2 and result["mode"] == mode and len(result["processes"]) == 1
    latency = result["latency_ms"]
    assert len(latency) >= 4 and all(x > 0 for x in latency)
    s = result["stats"]
    assert s["min_ms"] <= s["ci95_ms"][0] <= s["median_ms"] <= s["ci95_ms"][1] <= s["max_ms"]
    assert result["compile_s"] > 0 and result["started_at"] < result["finished_at"]
    assert result["correctness"]["passed"], result["correctness"]
    assert result["correctness"]["cosine"] >= 0.99
    assert result["memory"]["rss_peak_bytes"] > 0
    if mode == "eager":
        assert "speedup" not in result
        noise = result["noise"]  # eager against a second eager callable: should be 1.0
        low, high = noise["ci95"]
        assert low <= noise["ratio"] <= high and 0.5 < noise["ratio"] < 2.0
        assert len(noise["twin_latency_ms"]) == len(latency) and "block" in noise["interval"]
    else:
        low, high = result["speedup"]["ci95"]
        assert low <= result["speedup"]["value"] <= high
        assert len(result["eager_latency_ms"]) == len(latency)


@pytest.mark.parametrize("mode", ["eager", "jit", "compile-default", "compile-reduce-overhead", "compile-max-autotune"])
def test_every_mode_on_a_small_resnet(mode):
    result = measured(experiment("resnet", mode))
    assert_measured(result, mode)
    if mode.startswith("compile-"):
        assert result["compiler"]["graphs"] >= 1
        assert result["compiler"]["graph_breaks"] == 0
        assert result["compile_s"] > 10 * result["stats"]["median_ms"] / 1e3


def test_vit_compiles_and_traces():
    for mode in ("jit", "compile-default"):
        assert_measured(measured(experiment("vit", mode)), mode)


def test_distilbert_text_classification_and_fill_mask():
    assert_measured(measured(experiment("distilbert", "jit")), "jit")
    models = {"mlm": {**tiny_config()["models"]["distilbert"], "task": "fill-mask"}}
    result = measured(experiment("mlm", "eager", models))
    assert_measured(result, "eager")
    assert result["task"] == "fill-mask"


def test_text_generation_compiled_matches_eager_tokens():
    result = measured(experiment("llama", "compile-default"))
    assert_measured(result, "compile-default")
    generation = result["generation"]
    assert generation["new_tokens"] == 4 and len(generation["per_token_ms"]) == 4
    assert generation["ttft_ms"] > 0 and generation["tokens_per_s"] > 0
    assert result["correctness"]["tokens_match"]
    assert result["compiler"]["recompiles"] <= 1  # prefill and decode shapes, nothing more


def test_bfloat16_autocast_is_checked_against_float32():
    result = measured(
        experiment("vit", "eager", models={"vit": {**tiny_config()["models"]["vit"], "dtype": "bfloat16"}})
    )
    assert_measured(result, "eager")
    assert result["dtype"] == "bfloat16"
    assert 0 < result["correctness"]["max_abs_err"]  # reduced precision really ran
    assert "max_abs_err <=" not in result["correctness"]["criterion"]


def test_generation_cannot_be_scripted_is_unsupported():
    result = measured(experiment("llama", "jit"))
    assert result["status"] == "unsupported"
    assert "TorchScript" in result["error"]["message"]


def test_unscriptable_model_is_unsupported_not_a_crash():
    models = {"vit": {**tiny_config()["models"]["vit"], "jit": "script"}}
    result = measured(experiment("vit", "jit", models))
    assert result["status"] == "unsupported"
    assert result["error"]["message"].startswith("TorchScript script failed")
    assert "latency_ms" not in result


def test_forward_that_raises_becomes_failed(monkeypatch):
    def broken(self, x):
        raise RuntimeError("injected failure in forward")

    monkeypatch.setattr(torch.nn.Linear, "forward", broken)
    result = measured(experiment("resnet", "compile-default"))
    assert result["status"] == "failed"
    assert "injected failure in forward" in result["error"]["message"]
    assert "injected failure in forward" in result["error"]["traceback"]
    assert result["finished_at"] >= result["started_at"]


def test_top5_labels_from_a_label_file(tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(f"class-{i}" for i in range(10)) + "\n")
    models = {"resnet": {**tiny_config()["models"]["resnet"], "labels": str(labels)}}
    result = measured(experiment("resnet", "eager", models))
    top5 = result["correctness"]["top5"]
    assert len(top5) == 5 and all(t["label"].startswith("class-") for t in top5)
    assert top5[0]["prob"] >= top5[-1]["prob"]
