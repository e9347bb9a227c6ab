"""Hostile input: what another user or a damaged file can put in compilebench's way is refused, named."""

from __future__ import annotations

import json
import os
import pwd
import re
import time

import pytest
import yaml
from helpers import tiny_config

from compilebench import cli
from compilebench.configuration import config as configuration
from compilebench.core.errors import UserError
from compilebench.worker import runner

as_root = pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user needs root")


def test_the_probe_folder_is_made_private(tmp_path):
    folder = runner.private_folder(str(tmp_path / "probe"))
    assert os.stat(folder).st_mode & 0o777 == 0o700
    assert runner.private_folder(folder) == folder  # the user's own private folder is taken as it is


def test_a_probe_folder_others_can_write_is_refused_with_its_path(tmp_path):
    folder = tmp_path / "probe"
    folder.mkdir()
    folder.chmod(0o777)
    with pytest.raises(UserError, match=f"{folder} can be written by other users \\(mode 0777\\)"):
        runner.private_folder(str(folder))


@as_root
def test_a_probe_folder_another_user_owns_is_refused_with_its_path(tmp_path):
    folder = tmp_path / "probe"
    folder.mkdir(mode=0o700)
    os.chown(folder, pwd.getpwnam("nobody").pw_uid, -1)
    with pytest.raises(UserError, match=f"{folder} is owned by user id"):
        runner.private_folder(str(folder))


def test_a_probe_folder_that_is_a_link_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (tmp_path / "probe").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UserError, match="is not a folder"):
        runner.private_folder(str(tmp_path / "probe"))


@pytest.mark.slow
def test_a_measuring_process_never_loads_code_from_a_planted_probe_folder(tmp_path, monkeypatch):
    shared_tmp = tmp_path / "tmp"
    planted = shared_tmp / f"compilebench-cpu-probe-{os.getuid()}"
    planted.mkdir(parents=True)
    planted.chmod(0o777)
    (planted / "planted.so").write_bytes(b"not a library")
    monkeypatch.setenv("TMPDIR", str(shared_tmp))
    raw = tiny_config()
    exp = configuration.experiment(configuration.validate(raw), "resnet", "compile-default", "cpu", any_mode=True)
    result = cli.benchmark_job(exp, tmp_path / "r.json")
    assert result["status"] == "failed"
    assert str(planted) in result["error"]["message"] and "mode 0777" in result["error"]["message"]
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "failed"
    assert sorted(p.name for p in planted.iterdir()) == ["planted.so"]  # nothing compiled into it, nothing read


@pytest.mark.parametrize(
    ("env", "key"),
    [({"A=B": "1"}, "hardware.cpu.env"), ({"": "1"}, "hardware.cpu.env"), ({"X": "a\x00b"}, "hardware.cpu.env.X")],
)
def test_an_env_name_or_value_that_cannot_be_set_is_refused_at_check_naming_its_key(env, key):
    with pytest.raises(configuration.ConfigError, match=re.escape(f"`{key}`")):
        configuration.validate(tiny_config(hardware={"cpu": {"device": "cpu", "env": env}}))


@pytest.mark.parametrize("hours", ["-5", "nan", "0", "inf", "soon"])
def test_check_refuses_a_max_hours_that_bounds_nothing(hours, capsys):
    with pytest.raises(SystemExit):
        cli.main(["check", "--max-hours", hours])
    assert "--max-hours: expected a positive number of hours" in capsys.readouterr().err


def test_a_yaml_alias_bomb_is_refused_at_once_naming_the_file(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 10)}]" for k in range(1, 9)]  # 10**9 values, expanded
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\nmodels: {}\n")
    started = time.perf_counter()
    with pytest.raises(configuration.ConfigError, match=f"{re.escape(str(bomb))} expands to more than 1,000,000"):
        configuration.load(bomb)
    assert time.perf_counter() - started < 10
    with pytest.raises(configuration.ConfigError, match="The config expands"):  # as Snakemake hands it over
        configuration.validate(yaml.safe_load(bomb.read_text()))
