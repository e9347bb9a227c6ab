"""Training steps (`models.NAME.train`): measured in one process as an inference call is, checked after k steps,
refused where a mode cannot train, and shown in the training table, its figure and the paper's findings."""

from __future__ import annotations

import copy
import math
import sys
import time
from html import unescape

import pandas as pd
import pytest
import torch
from helpers import FAST_MEASURE, TINY_MODELS, measured, tiny_config
from synthetic import resealed, synthetic_results

from compilebench.configuration import config as configuration
from compilebench.core.errors import ConfigError
from compilebench.core.experiment import PINNED_ALLOCATOR
from compilebench.core.files import read_results, write_json
from compilebench.parent import jobs
from compilebench.report import figures, findings, speedup_tables, tables, training_tables
from compilebench.worker import training
from compilebench.worker.models import build

TRAINING_MODES = {
    "compile-step": {"kind": "compile", "compile": {"scope": "step"}},
    "compile-autograd": {"kind": "compile", "compile": {"autograd": True}},
}


def training_config(modes=("eager", "compile-default"), **train) -> dict:
    model = {**TINY_MODELS["vit"], "modes": ["eager"], "train": {"batch_size": 4, "modes": list(modes), **train}}
    config = tiny_config({"vit": model}, modes=["eager"], mode_definitions=copy.deepcopy(TRAINING_MODES))
    config["measure"] = {**FAST_MEASURE, "iterations": 6}
    return configuration.validate(config)


def test_a_model_with_train_is_also_measured_as_its_training_step_and_keeps_its_inference_fingerprint():
    config = training_config(optimizer="adamw", steps_checked=2)
    plain = tiny_config({"vit": {**TINY_MODELS["vit"], "modes": ["eager"]}}, modes=["eager"])
    plain = configuration.validate({**plain, "measure": config["measure"]})
    assert set(config["models"]) == {"vit", "vit.train"}
    assert configuration.model_modes(config, "vit.train") == ["eager", "compile-default"]
    inference = configuration.experiment(config, "vit", "eager", "cpu")
    assert inference.digest() == configuration.experiment(plain, "vit", "eager", "cpu").digest()
    step = configuration.experiment(config, "vit.train", "compile-default", "cpu")
    assert (step.spec.batch_size, step.spec.train.optimizer, step.spec.train.steps_checked) == (4, "adamw", 2)
    assert step.spec.train_of == "vit"


@pytest.mark.parametrize(
    ("mode", "definition", "key"),
    [
        ("jit", None, "models.vit.train.modes.1"),
        ("aot", {"kind": "export"}, "models.vit.train.modes.1"),
        ("int8", {"kind": "compile", "quantize": {"method": "int8_weight_only"}}, "models.vit.train.modes.1"),
    ],
)
def test_a_mode_that_cannot_train_is_refused_at_check_naming_the_key(mode, definition, key):
    config = tiny_config({"vit": {**TINY_MODELS["vit"], "train": {"modes": ["eager", mode]}}}, modes=["eager"])
    if definition:
        config["mode_definitions"] = {mode: definition}
    with pytest.raises(ConfigError, match=rf"`{key}`.*training"):
        configuration.validate(config)


def test_a_step_setting_on_an_inference_mode_is_refused_naming_it():
    config = tiny_config({"vit": TINY_MODELS["vit"]}, modes=["eager", "compile-step"])
    config["mode_definitions"] = {"compile-step": {"kind": "compile", "compile": {"scope": "step"}}}
    with pytest.raises(ConfigError, match=r"`mode_definitions.compile-step.compile.scope`.*train.modes"):
        configuration.validate(config)


def test_a_compiled_training_step_runs_through_the_workflow_into_its_table_figure_and_section(finished):
    """The shared run's text generator's training step in compile-default, in two processes: ok with its speedup and
    interval, checked after 3 steps against eager in float64, split into parts, its memory read; in training.csv,
    its figure and Appendix B; and out of page 1's answer, which is inference."""
    project, _, _ = finished
    result = read_results([project / "results" / "runs" / "cpu" / "llama.train" / "compile-default.json"])[0]
    assert result["status"] == "ok", result.get("error")
    low, high = result["speedup"]["ci95"]
    assert low <= result["speedup"]["value"] <= high and result["batch_size"] == 2 and len(result["processes"]) == 2
    check = result["train_correctness"]
    assert check["passed"] and check["k"] == 3 and "float64" in check["rule"] and check["grad_max_rel"] < 1e-3
    assert result["training"]["targets"] == "the next token"
    split = result["training"]["split_ms"]
    assert all(split[side][part] > 0 for side in ("eager", "mode") for part in training.SPLIT_PARTS)
    assert result["training"]["allocator"] == PINNED_ALLOCATOR  # glibc's, pinned for a step on a CPU
    alone = result["training"]["step_memory"]  # each side stepped alone in a process of its own
    assert all(result["training"]["step_peak_bytes"][side] > 0 for side in ("eager", "mode")) and not alone["notes"]
    assert all(alone[side]["process_peak_bytes"] > 100 * 2**20 for side in ("eager", "mode"))
    assert alone["mode"]["first_steps_peak_bytes"] > alone["eager"]["first_steps_peak_bytes"]  # the compile's, apart
    assert alone["mode"]["graphs_compiled_during_steps"] == 0  # its three steps read after every compile
    assert result["compile_s"] > 0 and result["compiler"]["graphs"] >= 1
    passes = result["training"]["compiled_passes"]  # none where AOTAutograd's cache held the step's graphs
    assert passes is None or (passes["forward_graphs"] >= 1 and passes["backward_graphs"] >= 1)
    assert not (project / "results" / "reference" / "cpu" / "llama.train.pt").exists()  # it checks itself
    row = pd.read_csv(project / "results" / "tables" / "training.csv").set_index("mode").loc["compile-default"]
    assert row["train_of"] == "llama" and row["correct"] and row["speedup"] == pytest.approx(result["speedup"]["value"])
    html = unescape((project / "results" / "report" / "paper.html").read_text())
    section = html.split('id="training"')[1].split('id="limits"')[0]
    assert 'id="figure-training"' in section and "On cpu, llama's training step (sgd, batch 2)" in section
    assert "llama.train" not in html.split('id="answer"')[1].split('id="setup"')[0]


def test_a_side_whose_memory_process_cannot_run_leaves_its_figures_empty_and_says_why(tmp_path):
    exp = configuration.experiment(training_config(), "vit.train", "compile-default", "cpu")
    alone = jobs._steps_alone(exp, sys.executable, {}, tmp_path, deadline=time.monotonic())
    assert alone["step_peak_bytes"] == {"eager": None, "mode": None}
    assert alone["step_memory"]["notes"] == [
        f"the {side} side's memory process did not run: measure.timeout_s was spent" for side in ("eager", "mode")
    ]


def test_a_step_on_a_cpu_pins_the_allocator_unless_the_hardware_entry_sets_it(monkeypatch):
    config = training_config()
    monkeypatch.delenv("MALLOC_MMAP_MAX_", raising=False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    step = configuration.experiment(config, "vit.train", "compile-default", "cpu")
    assert jobs.allocator_env(step) == PINNED_ALLOCATOR
    assert jobs.allocator_env(configuration.experiment(config, "vit", "eager", "cpu")) == {}  # inference: as is
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "0")  # as a hardware entry's env sets it: that decides instead
    assert jobs.allocator_env(step) == {}


def test_a_compiled_step_counts_its_forward_and_backward_graphs_apart(monkeypatch):
    """Compiled without caches, a two-layer model's first step compiles one forward and one backward graph, each
    with the seconds its compiler took; before any compile nothing is counted."""
    from compilebench.worker import compile_phases

    monkeypatch.setattr(torch._inductor.config, "fx_graph_cache", False)
    monkeypatch.setattr(torch._functorch.config, "enable_autograd_cache", False)
    torch._dynamo.reset()
    compile_phases.start()
    assert compile_phases.graphs_by_pass() is None
    model = torch.compile(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)))
    model(torch.randn(4, 8)).sum().backward()
    passes = compile_phases.graphs_by_pass()
    assert passes["forward_graphs"] == 1 and passes["backward_graphs"] == 1
    assert passes["forward_compile_s"] > 0 and passes["backward_compile_s"] > 0


def test_a_mode_whose_loss_differs_fails_the_gate_naming_the_tensor():
    """The mode's copy trains on a loss scaled by 1.5: every gradient is 1.5x eager's, and the check says which."""
    config = training_config()
    exp = configuration.experiment(config, "vit.train", "eager", "cpu")
    built = build("vit.train", exp.spec, exp.seed, "cpu")
    runs = training.eager_runs(exp, built)
    scaled = training.Batch(runs.batch.inputs, lambda out: 1.5 * runs.batch.loss(out), "scaled")
    mode = training.Trainee(training.training_copy(built.module), exp.spec.train, scaled, training.EAGER)
    stepped, _ = training.trajectory(mode, exp.spec.train.steps_checked)
    check = training.check_steps(stepped, runs.reference, runs.repeat, runs.float64, 3, "float32")
    assert check["passed"] is False
    assert check["worst_tensor"] in check["reason"] and check["loss_max_rel"] == pytest.approx(0.5, rel=1e-3)


def test_a_step_that_diverges_after_the_checked_steps_fails_correctness_naming_when():
    """Eager and the mode agree over the checked steps; then a weight is made NaN, as a learning rate too high
    does some steps later: the check after the timed steps fails, naming the step count, and a NaN within the
    checked steps is reported as NaN, not as 0.0."""
    config = training_config()
    exp = configuration.experiment(config, "vit.train", "eager", "cpu")
    built = build("vit.train", exp.spec, exp.seed, "cpu")
    runs = training.eager_runs(exp, built)
    mode = training.Trainee(training.training_copy(built.module), exp.spec.train, runs.batch, training.EAGER)
    stepped, _ = training.trajectory(mode, exp.spec.train.steps_checked)
    check = training.check_steps(stepped, runs.reference, runs.repeat, runs.float64, 3, "float32")
    assert check["passed"] and training.finite_after_timing(check, runs.eager, mode) == check
    for _ in range(4):  # the timed steps
        mode.step()
    with torch.no_grad():
        next(mode.module.parameters()).fill_(float("nan"))
    failed = training.finite_after_timing(check, runs.eager, mode)
    assert failed["passed"] is False and failed["diverged_after_steps"] == 7
    assert failed["reason"].startswith("the mode's weight ") and "after 7 steps, past the 3 checked" in failed["reason"]
    poisoned = training.Trajectory(stepped.losses * float("nan"), stepped.grads, stepped.params)
    check = training.check_steps(poisoned, runs.reference, runs.repeat, runs.float64, 3, "float32")
    assert check["passed"] is False and math.isnan(check["loss_max_rel"])


def test_compiled_autograd_made_absent_is_unsupported_with_the_reason(monkeypatch):
    monkeypatch.delattr(torch._dynamo.compiled_autograd, "_enable")
    result = measured(configuration.experiment(training_config(("compile-autograd",)), "vit.train",
                                               "compile-autograd", "cpu"))  # fmt: skip
    assert result["status"] == "unsupported"
    assert "compiled autograd" in result["error"]["message"] and torch.__version__ in result["error"]["message"]


def test_two_eager_copies_that_disagree_are_eager_two_runs_differ():
    one = training.Trajectory(torch.tensor([2.0, 1.0]), {"w": torch.ones(3)}, {"w": torch.ones(3)})
    other = training.Trajectory(torch.tensor([2.0, 1.0]), {"w": torch.ones(3) * 1.1}, {"w": torch.ones(3)})
    check = training.check_steps(one, one, other, None, 2, "float32")
    assert check["passed"] is False and check["reason"].startswith("eager_two_runs_differ")


def synthetic_training(folder) -> list:
    """Three training results beside the synthetic inference ones: eager, compile-default 1.6x faster with a smaller
    step peak, and a step compiled whole (no split)."""
    paths = synthetic_results(folder, hardware=("cpu",))
    base = {p.parent.name + "/" + p.stem: p for p in paths}
    made = []
    for mode, split_mode in (("eager", True), ("compile-default", True), ("compile-max-autotune", False)):
        record = read_results([base[f"resnet/{mode}"]])[0]
        train = {"optimizer": "sgd", "lr": 0.01, "loss": "cross_entropy", "steps_checked": 3}
        spec = {**record["spec"], "train_of": "resnet", "train": train}
        parts = {"forward_ms": 4.0, "backward_ms": 8.0, "optimizer_ms": 2.0}
        record = resealed(record, model="resnet.train", spec=spec)
        record["train_correctness"] = {"passed": True, "loss_max_rel": 0.0, "grad_max_rel": 1e-6, "param_max_rel": 1e-7}
        record["training"] = {
            "optimizer": "sgd",
            "split_ms": {"eager": parts, "mode": {k: v / 1.6 for k, v in parts.items()} if split_mode else None},
            "step_peak_bytes": {"eager": 200_000_000, "mode": 100_000_000},
        }
        path = folder / "runs" / "cpu" / "resnet.train" / f"{mode}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, record)
        made.append(path)
    return paths + made


def test_the_training_table_figure_and_findings_read_the_training_results(tmp_path):
    paths = synthetic_training(tmp_path)
    runs = tables.runs_table(paths)
    speedups = speedup_tables.speedups(runs)
    table = training_tables.training(read_results(paths), speedups)
    assert set(table["mode"]) == {"eager", "compile-default", "compile-max-autotune"}
    compiled = table.set_index("mode").loc["compile-default"]
    assert compiled["memory_ratio"] == pytest.approx(2.0) and compiled["speedup"] > 1
    saved = compiled["eager_step_ms"] - compiled["step_ms"]
    assert compiled["break_even_steps"] == pytest.approx(compiled["compile_s"] * 1e3 / saved, abs=1)
    assert pd.isna(table.set_index("mode").loc["compile-max-autotune", "mode_forward_ms"])
    # the inference summary leaves the training step out
    summary = speedup_tables.geometric_mean_summary(speedups)
    assert summary["models"].max() == 2
    sentence = " ".join(findings.training_findings(table))
    assert "resnet's training step (sgd" in sentence and "compile-default" in sentence and "95% CI" in sentence
    empty = pd.DataFrame()
    drawn = figures.training_steps(figures.Tables(*[empty] * 10, table))
    labels = {text.get_text() for ax in drawn.axes for text in ax.get_legend().get_texts()}
    assert {"forward + loss", "backward", "optimizer step", "whole step (compiled as one)"} <= labels
