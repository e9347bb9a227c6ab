"""`source: python`, a model of the user's own: checked without running it, fingerprinted by its file's content,
built and measured from the user's factory and inputs, and failing as data where the user's code fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import CPU, FAST_MEASURE, OWN_MODEL, ROOT, measured

from compilebench.configuration import config as configuration
from compilebench.configuration.yaml_files import read_yaml
from compilebench.core.errors import ConfigError
from compilebench.parent import jobs

EXAMPLE = ROOT / OWN_MODEL["file"]


def own(tmp_path: Path, source: str | None = None, **entry) -> dict:
    """A config with one model of source python, its file a copy of the shipped example (or `source`)."""
    file = tmp_path / "model.py"
    file.write_text(source if source is not None else EXAMPLE.read_text())
    model = {**OWN_MODEL, "file": str(file), **entry}
    return {
        "modes": ["eager", "compile-default"],
        "measure": dict(FAST_MEASURE),
        "models": {"mine": {k: v for k, v in model.items() if v is not None}},
        "hardware": {"cpu": dict(CPU)},
    }


def experiment(raw: dict, mode: str = "eager"):
    return configuration.experiment(configuration.validate(raw), "mine", mode, "cpu")


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"file": "no/such/model.py"}, "`models.mine.file` names 'no/such/model.py', which is not a file"),
        ({"factory": "build"}, "`models.mine.factory` is 'build', which"),
        ({"inputs": "make_inputs"}, "`models.mine.inputs` is 'make_inputs', which"),
        ({"input": {"shape": [64]}}, "gives both `inputs` and `input`"),
        ({"inputs": None}, "gives no input"),
        ({"factory": None}, "`models.mine.factory` is missing"),
    ],
)
def test_a_python_model_that_cannot_be_built_is_named_at_check_without_running_it(tmp_path, entry, said):
    with pytest.raises(ConfigError, match=said.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        experiment(own(tmp_path, **entry))


def test_a_python_models_keys_are_refused_on_another_source(tmp_path):
    raw = own(tmp_path)
    raw["models"]["other"] = {"source": "torchvision", "arch": "resnet18", "factory": "build_model"}
    with pytest.raises(ConfigError, match=r"`models\.other\.factory` does not apply to a model of source torchvision"):
        configuration.validate(raw)


def test_editing_the_models_file_measures_it_again_and_editing_another_file_does_not(tmp_path):
    before = experiment(own(tmp_path)).digest()
    (tmp_path / "elsewhere.py").write_text("x = 1\n")
    assert experiment(own(tmp_path)).digest() == before
    edited = EXAMPLE.read_text().replace("nn.GELU()", "nn.ReLU()")
    after = experiment(own(tmp_path, edited))
    assert after.digest() != before and after.spec.arch == "build_model" and len(after.spec.file_sha256) == 64


@pytest.mark.slow
def test_the_shipped_example_is_measured_in_a_worker_and_compiled(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    raw = read_yaml(ROOT / "config" / "experiments" / "own_model.yaml")
    raw["measure"] = dict(FAST_MEASURE)
    config = configuration.validate(raw)
    exp = configuration.experiment(config, "own-classifier", "compile-default", "cpu")
    reference = tmp_path / "reference.pt"
    assert jobs.reference_job(exp.reference(), reference) is None
    record = jobs.process_job(exp, tmp_path / "1.json", 1, tmp_path / "caches", reference=reference)
    assert record["status"] == "ok", record.get("error")
    assert record["compiler"]["graphs"] >= 1 and record["correctness"]["passed"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("def build_model():\n    raise RuntimeError('no weights here')\n", "raised RuntimeError: no weights here"),
        ("def build_model():\n    return 42\n", "returned a int: expected a torch.nn.Module"),
        ("import no_such_package\ndef build_model():\n    pass\n", "raised ModuleNotFoundError when imported"),
    ],
)
def test_a_factory_that_raises_or_returns_no_module_is_a_failed_result_quoting_it(tmp_path, source, said):
    result = measured(experiment(own(tmp_path, source, inputs=None, input={"shape": [8]})))
    assert result["status"] == "failed" and said in result["error"]["message"]
    assert "models.mine" in result["error"]["message"]


@pytest.mark.slow
def test_an_input_shape_and_dtype_stand_in_for_an_inputs_callable(tmp_path):
    source = "import torch\ndef build_model():\n    return torch.nn.Embedding(100, 8)\n"
    result = measured(experiment(own(tmp_path, source, inputs=None, input={"shape": [5], "dtype": "int64"})))
    assert result["status"] == "ok", result.get("error")


def timm_config(**entry) -> dict:
    model = {"source": "timm", "arch": "test_resnet", "batch_size": 2, **entry}
    return {"modes": ["eager"], "measure": dict(FAST_MEASURE), "models": {"small": model}}


def test_a_timm_name_timm_does_not_list_is_named_at_check_with_the_closest_ones():
    pytest.importorskip("timm")
    with pytest.raises(ConfigError, match=r"`models\.small\.arch` is 'test_resnett'.*did you mean test_resnet"):
        configuration.validate(timm_config(arch="test_resnett"))


def test_a_timm_model_takes_its_image_size_from_its_own_config():
    raw = timm_config(sweep={"image_size": [64, 96]})
    with pytest.raises(ConfigError, match=r"takes its image size from `config\.img_size`"):
        configuration.validate(raw)


@pytest.mark.slow
def test_a_timm_test_model_is_built_offline_at_the_size_it_declares_and_measured():
    pytest.importorskip("timm")
    exp = configuration.experiment(configuration.validate(timm_config()), "small", "eager", "cpu")
    result = measured(exp)
    assert result["status"] == "ok", result.get("error")
    assert result["correctness"]["passed"] and result["stats"]["median_ms"] > 0

    from compilebench.worker import models

    built = models.build("small", exp.spec, 0, "cpu")
    assert built.inputs[0].shape == (2, 3, 160, 160)  # test_resnet declares 160 x 160


@pytest.mark.slow  # measures a real model
def test_a_model_the_flop_counter_cannot_follow_is_measured_without_its_flops():
    """timm's test_vit3 hands a parameter to a submodule, which torch's FLOP counter cannot hook without autograd:
    the count is left out, and the experiment is measured."""
    pytest.importorskip("timm")
    import torch

    from compilebench.worker import profiling

    exp = configuration.experiment(configuration.validate(timm_config(arch="test_vit3")), "small", "eager", "cpu")
    result = measured(exp)
    assert result["status"] == "ok", result.get("error")
    assert "flops_per_call" not in result["workload"]
    with torch.no_grad():
        assert profiling.flops_per_call(torch.nn.Linear(4, 2), (torch.randn(3, 4),)) == 2 * 3 * 4 * 2
