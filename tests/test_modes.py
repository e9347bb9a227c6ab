"""Modes defined in config: compile variants, AOTInductor packages, TorchScript settings, and bad definitions."""

from __future__ import annotations

import contextlib
import re

import pytest
import torch
from helpers import TINY_MODELS, measured, tiny_config

from compilebench.configuration import config as configuration
from compilebench.core.errors import ConfigError, UserError
from compilebench.core.experiment import ModeSettings
from compilebench.core.modes import settings as resolved_settings
from compilebench.worker import wrappers


def settings(definition: dict) -> ModeSettings:
    """A definition resolved as a mode runs it, typed."""
    return ModeSettings.from_json(resolved_settings(definition))


DEFINED = {
    "compile-freezing": {"kind": "compile", "compile": {"options": {"freezing": True}}},
    "mat-freezing": {
        "kind": "compile",
        "compile": {"mode": "max-autotune-no-cudagraphs", "options": {"freezing": True}},
    },
    "aoti": {"kind": "export"},
    "script-unfrozen": {"kind": "jit", "jit": {"method": "trace", "freeze": False, "optimize_for_inference": False}},
}


def experiment(mode: str, **overrides) -> dict:
    raw = tiny_config({"resnet": TINY_MODELS["resnet"]}, mode_definitions=DEFINED, **overrides)
    raw["modes"] = ["eager", *DEFINED]
    return configuration.experiment(configuration.validate(raw), "resnet", mode, "cpu")


def test_mode_and_options_merge_the_way_torch_documents():
    merged = wrappers.compile_kwargs(settings(DEFINED["mat-freezing"]))
    assert "mode" not in merged  # torch.compile refuses mode and options together
    assert merged["options"] == {"max_autotune": True, "coordinate_descent_tuning": True, "freezing": True}
    assert wrappers.compile_kwargs(settings({"kind": "compile"}))["mode"] == "default"


def _compiled_effect(definition: dict, *, as_configuration: bool = True) -> dict:
    """Compile a fresh conv-bn model under a definition and report what inductor produced for it."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU()).eval()
    x = torch.randn(1, 3, 16, 16)
    resolved = settings(definition)
    with torch.no_grad(), wrappers.configured(resolved) if as_configuration else contextlib.nullcontext():
        before = wrappers.generated_code()
        compiled, _ = wrappers.wrap(model, resolved, (x,), device="cpu", dtype="float32", workdir=".")
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        return wrappers.settings_effect(resolved, before)


@pytest.mark.slow
def test_freezing_takes_effect_in_what_inductor_produces():
    frozen = _compiled_effect(DEFINED["compile-freezing"])
    assert frozen["configuration"] == {"freezing": True}
    assert frozen["frozen_constants"] > 0 and frozen["checks"]["freezing"]["took_effect"]
    assert _compiled_effect({"kind": "compile"})["frozen_constants"] == 0
    # Passed only as a torch.compile option, freezing never reaches Dynamo: the weights stay graph inputs.
    option_only = _compiled_effect(DEFINED["compile-freezing"], as_configuration=False)
    assert option_only["frozen_constants"] == 0 and not option_only["checks"]["freezing"]["took_effect"]


@pytest.mark.slow
def test_a_defined_freezing_mode_records_its_setting_and_its_effect():
    exp = experiment("compile-freezing")
    exp = exp.replace(measure=exp.measure.replace(private_cache=True))  # a cold compile: inductor generates its code
    result = measured(exp)
    assert result["status"] == "ok", result["error"]
    assert result["mode_settings"] == {
        "kind": "compile", "backend": "inductor", "mode": "default", "options": {"freezing": True},
        "dynamic": False, "fullgraph": False,
    }  # fmt: skip
    assert result["settings_effect"]["checks"]["freezing"]["took_effect"], result["settings_effect"]
    assert not torch._inductor.config.freezing  # the process's configuration is restored after the run
    assert result["correctness"]["passed"] and result["speedup"]["value"] > 0
    steady = result["steady_state"]
    assert steady["median_ms"] > 0 and steady["ci95"][0] <= steady["ratio"] <= steady["ci95"][1]
    assert isinstance(steady["flagged"], bool)
    eager_alone = result["eager_alone"]  # eager timed alone before the mode was built, against eager beside it
    assert eager_alone["median_ms"] > 0 and eager_alone["ci95"][0] <= eager_alone["ratio"] <= eager_alone["ci95"][1]
    assert isinstance(eager_alone["flagged"], bool) and "eager_alone" in result["processes"][0]


@pytest.mark.slow
def test_an_export_mode_builds_loads_and_times_an_aot_inductor_package():
    result = measured(experiment("aoti"))
    assert result["status"] == "ok", result["error"]
    steps = result["preparation"]
    assert steps["export_s"] > 0 and steps["package_s"] > 0 and steps["load_s"] > 0 and steps["package_bytes"] > 1e5
    assert result["compile_s"] == pytest.approx(steps["export_s"] + steps["package_s"])
    assert result["correctness"]["passed"], result["correctness"]
    assert result["compiler"]["graphs"] == 0  # no TorchDynamo at run time: the package runs as built


@pytest.mark.slow
def test_a_model_that_cannot_be_exported_is_unsupported_with_torchs_reason(monkeypatch):
    plain = torch.nn.Linear.forward

    def data_dependent(self, x):
        return plain(self, x) if x.sum() > 0 else plain(self, -x)

    monkeypatch.setattr(torch.nn.Linear, "forward", data_dependent)
    result = measured(experiment("aoti"))
    assert result["status"] == "unsupported"
    assert result["error"]["message"].startswith("torch.export failed:")
    assert "data-dependent" in result["error"]["message"]


def test_jit_settings_reach_torchscript():
    exp = experiment("script-unfrozen")
    module = torch.nn.Sequential(torch.nn.Linear(4, 4)).eval()
    scripted, steps = wrappers.wrap(
        module, exp.mode_settings, (torch.randn(1, 4),), device="cpu", dtype="float32", workdir="."
    )
    assert isinstance(scripted, torch.jit.ScriptModule) and steps["script_s"] > 0
    assert len(list(scripted.parameters())) == 2  # not frozen: the weights are still parameters
    frozen, _ = wrappers.wrap(
        module, settings({"kind": "jit"}), (torch.randn(1, 4),), device="cpu", dtype="float32", workdir="."
    )
    assert len(list(frozen.parameters())) == 0  # the built-in jit freezes them into constants


@pytest.mark.parametrize(
    ("definitions", "key"),
    [
        ({"eager": {"kind": "jit"}}, "mode_definitions.eager"),
        ({"x": {"kind": "turbo"}}, "mode_definitions.x.kind"),
        ({"x": {"kind": "compile", "export": {}}}, "mode_definitions.x.export"),
        ({"x": {"kind": "compile", "compile": {"mode": "fast"}}}, "mode_definitions.x.compile.mode"),
        ({"x/../y": {"kind": "eager"}}, "mode_definitions"),
    ],
)
def test_bad_definitions_fail_before_anything_runs_with_the_key_named(definitions, key):
    raw = tiny_config({"resnet": TINY_MODELS["resnet"]}, mode_definitions=definitions)
    with pytest.raises(ConfigError, match=f"`{key}"):
        configuration.validate(raw)


def test_an_undefined_mode_name_is_refused_with_its_key():
    raw = tiny_config({"resnet": {**TINY_MODELS["resnet"], "modes": ["eager", "compile-fast"]}})
    with pytest.raises(ConfigError, match=r"`models.resnet.modes.1` is 'compile-fast'.*mode_definitions"):
        configuration.validate(raw)


@pytest.mark.parametrize(
    ("definition", "key"),
    [
        ({"kind": "compile", "compile": {"options": {"freezng": True}}}, "mode_definitions.m.compile.options.freezng"),
        ({"kind": "compile", "compile": {"backend": "tensorrt-x"}}, "mode_definitions.m.compile.backend"),
        (
            {"kind": "export", "export": {"options": {"no_such_knob": 1}}},
            "mode_definitions.m.export.options.no_such_knob",
        ),
        (
            {"kind": "compile", "compile": {"options": {"freezing": "yes"}}},
            "mode_definitions.m.compile.options.freezing",
        ),
        (
            {"kind": "compile", "compile": {"options": {"max_autotune_gemm_backends": 3}}},
            "mode_definitions.m.compile.options.max_autotune_gemm_backends",
        ),
    ],
)
def test_settings_the_installed_torch_does_not_know_are_refused_with_the_key(definition, key):
    with pytest.raises(UserError, match=f"`{key}`.*torch {re.escape(torch.__version__)}"):
        wrappers.check("m", settings(definition))
    checked = wrappers.check("m", settings(DEFINED["compile-freezing"]))
    assert checked["inductor_options"] == checked["configuration"] == {"freezing": True}
