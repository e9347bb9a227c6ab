"""The two published studies as experiment files: their DAGs, and scaled-down copies run end to end."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from helpers import (
    ASSETS_MIRROR,
    CPU,
    ROOT,
    TINY_MODELS,
    WORKFLOW_MEASURE,
    copy_project,
    expected_runs,
    planned_outputs,
    snakemake,
    word_tokenizer,
    write_config,
)

from compilebench.report import pagefit

pytestmark = pytest.mark.slow

STUDIES = {
    "rocm-torch-compile": ROOT / "config" / "experiments" / "rocm-torch-compile.yaml",
    "graviton-pytorch2": ROOT / "config" / "experiments" / "graviton-pytorch2.yaml",
}
TINY_TRANSFORMERS = {
    "vit": TINY_MODELS["vit"]["config"],
    "llama": TINY_MODELS["llama"]["config"],
    "distilbert": TINY_MODELS["distilbert"]["config"],
    "roberta": {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "vocab_size": 128,
        "max_position_embeddings": 66,
    },
}
AUTO_CLASSES = {
    "image-classification": "AutoModelForImageClassification",
    "text-classification": "AutoModelForSequenceClassification",
    "fill-mask": "AutoModelForMaskedLM",
    "text-generation": "AutoModelForCausalLM",
}


def load_study(name: str) -> dict:
    return yaml.safe_load(STUDIES[name].read_text())


@pytest.mark.parametrize("name", STUDIES)
def test_study_dry_run_has_the_expected_dag(name, tmp_path):
    study = load_study(name)
    project = copy_project(tmp_path, yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))
    planned = planned_outputs(project, "--configfile", f"config/experiments/{name}.yaml")
    hardware = list(study["hardware"])
    assert {o for o in planned if o.startswith("results/runs/")} == expected_runs(study, hardware)
    assert {o for o in planned if o.startswith("resources/weights/")} == {
        f"resources/weights/{m}" for m in study["models"]
    }
    assert {o for o in planned if o.startswith("results/env/")} == {f"results/env/{h}.json" for h in hardware}
    assert {"resources/assets/dog.jpg", "resources/assets/imagenet_classes.txt", "results/report/paper.pdf"} <= planned
    assert study["published"]["source"] in (project / "config" / "experiments" / f"{name}.yaml").read_text()


def save_stand_in(name: str, entry: dict, folder: Path) -> dict:
    """A tiny model of the same source, architecture and task, saved to disk the way real weights are."""
    import torchvision
    import transformers

    torch.manual_seed(0)
    path = folder / name
    tiny = {k: v for k, v in entry.items() if k not in ("hub_id", "revision", "measure")}
    if entry["source"] == "torchvision":
        torch.save(torchvision.models.resnet18(num_classes=10).state_dict(), folder / f"{name}.pt")
        return {
            **tiny,
            "arch": "resnet18",
            "config": {"num_classes": 10},
            "weights": str(folder / f"{name}.pt"),
            "image_size": 32,
        }
    config = transformers.AutoConfig.for_model(entry["arch"], **TINY_TRANSFORMERS[entry["arch"]])
    if entry.get("task") == "text-classification":
        config.num_labels = 3
    getattr(transformers, AUTO_CLASSES[entry.get("task", "image-classification")]).from_config(config).save_pretrained(
        path
    )
    if entry.get("prompt"):
        word_tokenizer(config.vocab_size).save_pretrained(path)
    if entry.get("task") == "text-generation":
        tiny["new_tokens"] = 4
    return {**tiny, "weights": str(path)}


# Per study, the models a scaled-down copy keeps: CI has minutes, and each kept model runs in
# every mode on every hardware entry. The ROCm copy keeps the two models its published figures
# are checked on (a ViT runs in the shared workflow run); the Graviton copy keeps its vision
# model on both platforms. Text models with a prompt and saved tokenizer are covered by
# test_weights.py, fill-mask by test_engine.py.
KEPT_MODELS = {"rocm-torch-compile": ("resnet152", "llama2-7b"), "graviton-pytorch2": ("resnet50",)}


# The Graviton study compares eager with TorchScript; the ROCm one runs compile-default under its bf16 autocast.
SCALED_MODES = {"rocm-torch-compile": ("eager", "compile-default"), "graviton-pytorch2": ("eager", "jit")}


def scaled_down(name: str, folder: Path) -> dict:
    """The study with tiny stand-ins, quick measurement, and the hardware entries this machine has."""
    study = load_study(name)
    scaled = copy.deepcopy(study)
    folder.mkdir(parents=True, exist_ok=True)
    kept = KEPT_MODELS[name]
    scaled["models"] = {m: save_stand_in(m, entry, folder) for m, entry in study["models"].items() if m in kept}
    # A sweep runs its first point only, and of the modes only those the study's own settings bear on
    # (its dtype, weights, env vars): every mode is run by test_engine.py, defined ones by
    # test_workflow.py, and the full DAG is checked by the dry run above.
    scaled["modes"] = [m for m in scaled["modes"] if m in SCALED_MODES[name]]
    for entry in scaled["models"].values():
        entry.get("sweep", {}).update({key: values[:1] for key, values in entry.get("sweep", {}).items()})
    scaled["measure"] = {**WORKFLOW_MEASURE, "profile": True, "profile_iterations": 1}
    scaled["hardware"] = {h: {**entry, **CPU, "conda_env": "cpu"} for h, entry in study["hardware"].items()}
    scaled["assets"]["mirror"] = str(ASSETS_MIRROR)
    return scaled


@pytest.mark.parametrize("name", STUDIES)
def test_scaled_down_study_runs_end_to_end(name, tmp_path):
    scaled = scaled_down(name, tmp_path / "weights")
    project = copy_project(tmp_path / "project", yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))
    write_config(project / "config" / "experiments" / f"{name}.yaml", scaled)
    snakemake(project, "--configfile", f"config/experiments/{name}.yaml")
    runs = pd.read_csv(project / "results" / "tables" / "runs.csv")
    assert {f"results/runs/{r.hardware}/{r.model}/{r.mode}.json" for r in runs.itertuples()} == expected_runs(
        scaled, list(scaled["hardware"])
    )
    assert runs["status"].eq("ok").all(), runs.loc[
        runs["status"] != "ok", ["hardware", "model", "mode", "error"]
    ].to_string()
    limits = pd.read_csv(project / "results" / "tables" / "limits.csv")
    assert len(limits) == (runs["status"] == "ok").sum() and limits["achieved"].gt(0).all()
    top_ops = pd.read_csv(project / "results" / "tables" / "top_ops.csv")
    assert all((project / trace).is_file() for trace in top_ops["trace"].unique())
    html = (project / "results" / "report" / "paper.html").read_text()
    assert (
        scaled["published"]["source"] in html and "Where the time goes" in html and "Distance to the hardware" in html
    )
    if scaled["published"]["values"]:
        assert "published ms" in html and "18.76" in html and "73.90" not in html and "73.9" in html
    if "cpu-bf16-fastmath" in scaled["hardware"]:
        record = yaml.safe_load((project / "results" / "env" / "cpu-bf16-fastmath.json").read_text())
        assert record["kernel_env"]["DNNL_DEFAULT_FPMATH_MODE"] == "BF16"
        assert ("no native bf16 instructions" in html) == (not record["cpu"]["bf16_native"])
    assert (project / "results" / "report" / "paper.pdf").stat().st_size > 10_000
    assert pagefit.outside_margins(project / "results" / "report" / "paper.pdf") == []  # every table fits the page
