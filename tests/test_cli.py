"""The command line a user runs by hand, as a subprocess."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import compilebench, tiny_config


@pytest.mark.slow
def test_env_record_applies_hardware_settings(config_file, tmp_path):
    raw = tiny_config()
    raw["hardware"]["cpu-fastmath"] = {
        "device": "cpu",
        "threads": 1,
        "env": {"DNNL_DEFAULT_FPMATH_MODE": "BF16", "LRU_CACHE_CAPACITY": 1024},
    }
    out = tmp_path / "env.json"
    done = compilebench("env", "--config", config_file(raw), "--hardware", "cpu-fastmath", "--check", "--out", out)
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    assert record["hardware"] == "cpu-fastmath" and record["threads"] == 1
    assert record["kernel_env"]["DNNL_DEFAULT_FPMATH_MODE"] == "BF16"
    assert record["kernel_env"]["LRU_CACHE_CAPACITY"] == "1024"
    assert record["torch"] == torch.__version__
    assert isinstance(record["cpu"]["bf16_native"], bool) and record["cpu"]["model"]
    assert record["packages"]["torch"]
    # Its settings are checked without `--check` too: a thread count beyond the cores is not recorded as ok.
    raw["hardware"]["cpu-many"] = {"device": "cpu", "threads": 1_000_000}
    done = compilebench("env", "--config", config_file(raw), "--hardware", "cpu-many", "--out", out)
    assert done.returncode == 1 and "`hardware.cpu-many.threads` is 1000000, more threads than" in done.stderr
    assert json.loads(out.read_text())["status"] == "failed"


@pytest.mark.slow
def test_run_with_reference_and_env_record(config_file, tmp_path):
    path = config_file(tiny_config())
    ref, env, out = tmp_path / "ref.pt", tmp_path / "env.json", tmp_path / "run" / "r.json"
    assert compilebench("reference", "--config", path, "--model", "resnet", "--out", ref).returncode == 0
    assert compilebench("env", "--config", path, "--out", env).returncode == 0
    done = compilebench(
        "run",
        "--config",
        path,
        "--model",
        "resnet",
        "--mode",
        "eager",
        "--reference",
        ref,
        "--env-record",
        env,
        "--out",
        out,
    )
    assert done.returncode == 0, done.stderr
    assert "cpu/resnet/eager: ok" in done.stdout
    assert "timing" in done.stderr and "building" in done.stderr  # progress is logged
    result = json.loads(out.read_text())
    assert result["status"] == "ok" and result["correctness"]["max_abs_err"] == 0.0
    assert result["environment"]["record"] == str(env)
    assert [p.name for p in out.parent.iterdir()] == ["r.json"]  # no temporary left behind


@pytest.mark.parametrize(
    "args, key",
    [
        (["--model", "nosuch", "--mode", "eager"], "nosuch"),
        (["--model", "resnet", "--mode", "turbo"], "turbo"),
        (["--model", "resnet", "--mode", "eager", "--hardware", "tpu"], "tpu"),
    ],
)
def test_bad_arguments_fail_cleanly(config_file, tmp_path, args, key):
    out = tmp_path / "r.json"
    done = compilebench("run", "--config", config_file(tiny_config()), "--out", out, *args)
    assert done.returncode == 2
    assert key in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


def test_bad_config_file_names_the_key(config_file, tmp_path):
    raw = tiny_config()
    raw["measure"]["iterations"] = 0
    out = tmp_path / "r.json"
    done = compilebench("run", "--config", config_file(raw), "--model", "resnet", "--mode", "eager", "--out", out)
    assert done.returncode == 2 and "measure.iterations" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


def test_check_states_what_every_shipped_config_plans(capsys):
    """Each experiment file a user may run, checked as the workflow checks it, with its plan: experiments,
    measuring processes, and the least time their timing takes."""
    from golden import SHIPPED
    from helpers import ROOT

    from compilebench import cli
    from compilebench.configuration import config as configuration
    from compilebench.configuration import schema

    for path in SHIPPED:
        assert cli.main(["check", "--config", str(ROOT / path)]) == 0, path
        said = capsys.readouterr().out
        config = configuration.load(ROOT / path)
        experiments = [
            configuration.experiment(config, m, mode, h)
            for h in config["hardware"]
            for m in config["models"]
            for mode in schema.model_modes(config, m)
        ]
        processes = sum(exp.measure.processes for exp in experiments)
        assert f"compilebench plans {len(experiments)} experiments on " in said, (path, said)
        assert f": {processes} measuring processes and " in said and "timing at least " in said, (path, said)


def test_a_config_that_plans_days_is_stated_and_refused_past_max_hours(config_file):
    raw = tiny_config()
    raw["measure"] = {**raw["measure"], "processes": 1000, "min_time_s": 1.0}
    path = config_file(raw)
    done = compilebench("check", "--config", path)
    assert done.returncode == 0 and ": 20000 measuring processes and " in done.stdout, done.stdout
    assert "timing at least 5.9 h" in done.stdout  # 20 x 1000 processes x 1 s, 16 of them + 1.5 x steady_state_s
    refused = compilebench("check", "--config", path, "--max-hours", "5")
    assert refused.returncode == 2 and "--max-hours is 5 hours, but the config plans at least 5.9 h" in refused.stderr
