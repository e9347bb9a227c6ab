"""Regional compilation: the repeated stack found and compiled block by block or as a nested region, the model
without one refused in the mode check, cold processes giving compile times an interval, and the depth sweep."""

from __future__ import annotations

from html import unescape

import pandas as pd
import pytest
import torch
from helpers import ROOT, TINY_MODELS, measured, tiny_config

from compilebench.analysis import comparisons, stats
from compilebench.configuration import config as configuration
from compilebench.configuration import yaml_files
from compilebench.core import thresholds
from compilebench.core.errors import ConfigError, UserError
from compilebench.core.files import failure_of, read_json
from compilebench.parent.jobs import mode_check_job
from compilebench.worker import regions

REGIONAL = {
    "c-regional": {"kind": "compile", "compile": {"regional": True}},
    "c-nested": {"kind": "compile", "compile": {"regional": "nested"}},
    "c-layers": {"kind": "compile", "compile": {"regional": "vit.layers"}},
}


def experiment(model: str, mode: str, entry: dict | None = None):
    raw = tiny_config({model: entry or TINY_MODELS[model]}, mode_definitions=REGIONAL)
    raw["modes"] = ["eager", *REGIONAL]
    return configuration.experiment(configuration.validate(raw), model, mode, "cpu")


@pytest.mark.parametrize("mode", ["c-regional", "c-layers"])
def test_a_tiny_vit_compiled_regionally_compiles_one_graph_for_its_block_class_and_passes(mode):
    result = measured(experiment("vit", mode))
    assert result["status"] == "ok", result["error"]
    assert result["regions"] == {"path": "vit.layers", "block_class": "ViTLayer", "blocks": 2, "how": "blocks"}
    assert result["compiler"]["graphs"] == 1  # two blocks, one class: one graph, reused
    assert result["compiler"]["graph_breaks"] == 0
    assert result["correctness"]["passed"] is True
    assert result["compile_s"] > 0 and result["speedup"]["value"] > 0


def test_the_regional_copy_shares_the_weights_and_leaves_the_eager_model_as_it_was():
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 8), torch.nn.Sequential(*(torch.nn.Linear(8, 8) for _ in range(3))), torch.nn.ReLU()
    ).eval()
    x = torch.randn(2, 8)
    expected = model(x)
    compiled, record = regions.compile_regions(model, True, {"backend": "eager"}, "k", "models.m")
    assert record == {"path": "1", "block_class": "Linear", "blocks": 3, "how": "blocks"}
    assert all(type(block) is torch.nn.Linear for block in model[1])  # the eager model keeps its own blocks
    assert compiled[1][0].weight is model[1][0].weight
    assert torch.allclose(compiled(x), expected)


def test_nested_regions_reuse_one_graph_and_keep_each_blocks_own_weights():
    result = measured(experiment("vit", "c-nested"))
    assert result["status"] == "ok", result["error"]
    assert result["regions"]["how"] == "nested" and result["compiler"]["graphs"] == 1
    assert result["correctness"]["passed"] is True  # a region reusing the first block's weights fails here


def test_nested_where_torch_lacks_the_marker_is_unsupported_with_the_reason(monkeypatch):
    monkeypatch.delattr(torch.compiler, "nested_compile_region")
    result = measured(experiment("vit", "c-nested"))
    assert result["status"] == "unsupported"
    assert "torch.compiler.nested_compile_region" in result["error"]["message"]
    assert torch.__version__ in result["error"]["message"]


def test_stacks_that_tie_are_refused_naming_each_and_a_path_that_names_none_lists_them():
    resnet = configuration.experiment(
        configuration.validate(tiny_config({"resnet": TINY_MODELS["resnet"]})), "resnet", "eager", "cpu"
    )
    from compilebench.worker.models import architecture

    built = architecture("resnet", resnet.spec)
    with pytest.raises(UserError, match=r"4 stacks tie at 2 blocks \(layer1 \(2 × BasicBlock\)") as tie:
        regions.find(built, True, "mode_definitions.c.compile.regional", "models.resnet")
    assert "`regional: layer1`" in str(tie.value)
    assert regions.find(built, "layer3", "k", "models.resnet").block_class == "BasicBlock"
    with pytest.raises(UserError, match=r"`mode_definitions.c.compile.regional` is 'layers'.*its stacks: layer1"):
        regions.find(built, "layers", "mode_definitions.c.compile.regional", "models.resnet")


@pytest.mark.slow
def test_a_model_without_a_repeated_stack_is_refused_in_the_mode_check_with_its_name(tmp_path):
    alexnet = {"source": "torchvision", "arch": "alexnet", "image_size": 64, "config": {"num_classes": 10}}
    exp = experiment("alexnet", "c-regional", alexnet)
    vit = experiment("vit", "c-regional")
    models = {"alexnet": exp.spec.to_json(), "vit": vit.spec.to_json()}
    out = tmp_path / "check.json"
    refused = mode_check_job("c-regional", exp.mode_settings.to_json(), {"device": "cpu"}, out, models)
    message = refused["error"]["message"]  # the experiment's jobs write it as their failed result
    assert "`mode_definitions.c-regional.compile.regional`" in message and "`models.alexnet`" in message
    assert "has none" in message and failure_of(out) == refused["error"]
    record = mode_check_job("c-regional", vit.mode_settings.to_json(), {"device": "cpu"}, out, {"vit": models["vit"]})
    assert record["regions"]["vit"]["path"] == "vit.layers" and read_json(out) == record


@pytest.mark.slow
def test_the_workflow_checks_each_model_of_a_regional_mode_before_measuring_it(tmp_path):
    from helpers import copy_project, snakemake

    raw = tiny_config(
        {"alexnet": {"source": "torchvision", "arch": "alexnet", "image_size": 64, "config": {"num_classes": 10}}},
        mode_definitions=REGIONAL,
    )
    raw["modes"] = ["eager", "c-regional"]
    project = copy_project(tmp_path, raw)
    done = snakemake(project, "results/runs/cpu/alexnet/c-regional.json")  # a failed result, not a stopped run
    assert "rule region_check:" in done.stdout + done.stderr and "Traceback" not in done.stderr
    result = read_json(project / "results/runs/cpu/alexnet/c-regional.json")
    message = result["error"]["message"]
    assert result["status"] == "failed" and message.startswith("the check of mode `c-regional` on `alexnet` failed")
    assert "`mode_definitions.c-regional.compile.regional`" in message and "`models.alexnet`" in message
    assert "latency_ms" not in read_json(project / "results/processes/cpu/alexnet/c-regional/1.json")  # never measured


def test_a_regional_path_that_could_name_no_submodule_is_refused_at_check():
    for path in ("__class__", "vit.__dict__"):
        raw = tiny_config(
            {"vit": TINY_MODELS["vit"]}, mode_definitions={"c": {"kind": "compile", "compile": {"regional": path}}}
        )
        with pytest.raises(ConfigError, match=r"`mode_definitions.c.compile.regional`"):
            configuration.validate(raw)


def test_depth_sweeps_set_the_architecture_and_apply_to_transformers_models_with_random_weights():
    raw = tiny_config({"vit": {**TINY_MODELS["vit"], "sweep": {"num_hidden_layers": [1, 3]}}})
    models = configuration.validate(raw)["models"]
    assert list(models) == ["vit.L1", "vit.L3"]
    assert models["vit.L3"]["config"]["num_hidden_layers"] == 3 and models["vit.L3"]["config"]["hidden_size"] == 32
    assert models["vit.L3"]["swept"] == {"num_hidden_layers": 3} and "num_hidden_layers" not in models["vit.L3"]
    bad = tiny_config({"resnet": {**TINY_MODELS["resnet"], "sweep": {"num_hidden_layers": [1, 3]}}})
    with pytest.raises(ConfigError, match=r"`models.resnet.sweep.num_hidden_layers`.*transformers model's `config`"):
        configuration.validate(bad)


def test_cold_processes_need_a_private_cache():
    raw = tiny_config({"vit": TINY_MODELS["vit"]})
    raw["measure"].update(cold_processes=True, private_cache=False)
    with pytest.raises(ConfigError, match=r"`measure.cold_processes`.*private_cache true"):
        configuration.validate(raw)


def test_cold_starts_of_every_process_give_the_compile_time_an_interval_and_a_verdict():
    def result(cold):
        return {"status": "ok", "mode_settings": {"kind": "compile"}, "compile_cold_samples_s": cold, "processes": []}

    whole, regional = result([10.2, 9.8, 10.5, 10.1]), result([2.1, 1.9, 2.0, 2.2])
    row = comparisons.compile_times(whole, regional, thresholds.COMPILE_THRESHOLD)
    assert row["compile_cold_samples"] == 4 and row["compile_cold_verdict"] == "faster"
    assert 4.5 < row["compile_cold_ratio_ci95_low"] <= row["compile_cold_ratio"] <= row["compile_cold_ratio_ci95_high"]
    one = comparisons.compile_times(whole, result([2.0]), thresholds.COMPILE_THRESHOLD)
    assert one["compile_cold_verdict"] == "unclear (1 samples)"


def test_the_depth_trend_recovers_a_known_slope_with_an_interval_that_holds_it():
    depths, rng = [2, 4, 8], __import__("numpy").random.default_rng(0)
    samples = [list(3.0 + 1.5 * d + rng.normal(0, 0.2, 5)) for d in depths]
    trend = stats.slope(depths, samples, resamples=500)
    assert trend["method"] == "bootstrap" and trend["ci95"][0] < 1.5 < trend["ci95"][1]
    single = stats.slope(depths, [[s[0]] for s in samples])
    assert single["method"] == "t" and single["ci95"][0] < single["slope"] < single["ci95"][1]
    assert stats.slope([2, 4], [[5.0], [8.0]])["ci95"] == [None, None]


def test_the_shipped_regional_study_sweeps_depth_whole_against_regional():
    config = configuration.validate(yaml_files.read_yaml(ROOT / "config" / "experiments" / "regional.yaml"))
    defined = config["mode_definitions"]
    assert {"compile-whole", "compile-regional", "compile-nested"} <= set(config["modes"])
    whole = {k: v for k, v in defined["compile-regional"]["compile"].items() if k != "regional"}
    assert whole == defined["compile-whole"]["compile"]  # they differ in `regional` alone
    depths = sorted(m["config"]["num_hidden_layers"] for m in config["models"].values() if m.get("sweep_of"))
    assert depths == [2, 4, 8] and config["measure"]["cold_processes"] and config["measure"]["processes"] >= 3


@pytest.mark.slow
def test_the_finished_run_draws_compile_time_against_depth_and_sets_regional_against_whole(finished):
    project, _, _ = finished
    tables = project / "results" / "tables"
    depth = pd.read_csv(tables / "compile_depth.csv")
    assert set(depth["mode"]) == {"compile-default", "compile-regional"}
    assert sorted(depth["num_hidden_layers"].unique()) == [2, 3]
    assert (depth["compile_samples"] == 2).all()  # every process compiled cold
    assert depth["slope_s_per_layer"].notna().all()
    runs = pd.read_csv(tables / "runs.csv").set_index(["model", "mode"])
    regional = runs.loc[("vit-deep.L3", "compile-regional")]
    assert regional["regions"] == "vit.layers: 3 × ViTLayer, compiled block by block" and regional["graphs"] == 1
    result = read_json(project / "results" / "runs" / "cpu" / "vit-deep.L3" / "compile-regional.json")
    assert len(result["compile_cold_samples_s"]) == 2 and "compile_warm_samples_s" not in result
    effects = pd.read_csv(tables / "mode_effects.csv").set_index(["model", "mode"])
    row = effects.loc[("vit-deep.L3", "compile-regional")]
    assert row["base_mode"] == "compile-default" and row["verdict"] in {"faster", "slower", "same", "unclear"}
    assert row["compile_cold_verdict"] == "unclear (2 samples)" and row["compile_cold_ratio"] > 0
    html = (project / "results" / "report" / "paper.html").read_text()
    assert "Compile time against depth" in html and 'id="figure-compile_depth"' in html
    assert "compile-regional's cold compile of vit-deep went from" in unescape(html)
