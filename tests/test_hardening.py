"""Hostile input: what another user or a damaged file can put in compilebench's way is refused, named."""

from __future__ import annotations

import json
import os
import pwd
import re
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from helpers import compilebench, planned_outputs, snakemake, tiny_config

from compilebench import cli
from compilebench.analysis import run_folders, summaries
from compilebench.configuration import config as configuration
from compilebench.core import files
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


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (("a: " + "[" * 5000 + "]" * 5000 + "\n").encode(), "nests its mappings or lists too deeply"),
        ("title: caf\xe9\nmodels: {}\n".encode("latin-1"), "is not UTF-8 text (byte 0xe9 at offset 10)"),
    ],
)
def test_a_config_too_deep_or_not_utf8_is_one_paragraph_naming_the_file(tmp_path, content, said):
    path = tmp_path / "config.yaml"
    path.write_bytes(content)
    done = compilebench("check", "--config", path)
    assert done.returncode == 2 and said in done.stderr and str(path) in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_yaml_merge_key_merges_and_may_override_what_it_merges():
    from compilebench.configuration.yaml_files import read_yaml

    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as handle:
        handle.write("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n")
        handle.flush()
        assert read_yaml(handle.name)["other"] == {"x": 1, "y": 3}


def _records_of(project, name="cpu/llama/eager"):
    """The shared run's process records of one experiment, and that experiment."""
    config = configuration.validate(yaml.safe_load((project / "config" / "config.yaml").read_text()))
    hardware, model, mode = name.split("/")
    exp = configuration.experiment(config, model, mode, hardware)
    return exp, sorted((project / "results" / "processes" / name).glob("[0-9].json"))


@pytest.mark.parametrize(
    "damage, said",
    [
        (lambda r, other: '{"status": "ok", "latency', "cannot be read (JSONDecodeError"),
        (lambda r, other: {**r, "latency_ms": [float("nan"), *r["latency_ms"][1:]]}, "nan among its samples"),
        (lambda r, other: {**r, "twin_latency_ms": [-1.0, *r["twin_latency_ms"][1:]]}, "-1.0 among its samples"),
        (lambda r, other: {**r, "latency_ms": [x / 2 for x in r["latency_ms"]]}, "do not match the digest"),
        (lambda r, other: {**other, "mode": r["mode"]}, "experiment_sha256"),
        (lambda r, other: {**r, "schema": 7}, "schema 7"),
        (lambda r, other: other, "is not the process record of the experiment it stands for"),
        (lambda r, other: {**r, "compile_s": 0.001}, "edited after it was written"),
        (lambda r, other: {**r, "memory": {**r["memory"], "peak_bytes": 1}}, "edited after it was written"),
    ],
    ids=["truncated", "nan", "negative", "edited", "another-experiment", "schema", "copied", "compile", "peak"],
)
def test_a_damaged_process_record_is_refused_named_and_moved_aside_never_summarised(finished, tmp_path, damage, said):
    project = finished[0]
    exp, (first, second) = _records_of(project)
    other = json.loads((project / "results/processes/cpu/llama/compile-default/1.json").read_text())
    kept = tmp_path / "1.json"
    kept.write_bytes(first.read_bytes())
    damaged = tmp_path / "2.json"
    written = damage(json.loads(second.read_text()), other)
    damaged.write_text(written if isinstance(written, str) else json.dumps(written))
    result = tmp_path / "result.json"
    result.write_text("{}")  # an earlier result: gone, so that the next run makes it again
    with pytest.raises(files.BadRecord) as refused:
        summaries.result_job(exp, [kept, damaged], result)
    message = str(refused.value)
    assert str(damaged) in message and said in message and "measure those processes again" in message
    assert not damaged.exists() and (tmp_path / "2.json.rejected").exists() and kept.exists()
    assert not result.exists()


def test_the_same_record_twice_is_one_process_not_two(finished, tmp_path):
    exp, (first, _) = _records_of(finished[0])
    one, copy = tmp_path / "1.json", tmp_path / "2.json"
    one.write_bytes(first.read_bytes())
    copy.write_bytes(first.read_bytes())
    with pytest.raises(files.BadRecord, match=re.escape(f"{copy} holds the same samples as {one}")):
        summaries.result_job(exp, [one, copy], tmp_path / "result.json")


def test_a_damaged_process_record_stops_its_result_job_and_the_next_run_measures_it_again(finished):
    """It damages one record of the shared run, and leaves the run whole again."""
    project = finished[0]
    record = project / "results/processes/cpu/llama/eager/2.json"
    result = project / "results/runs/cpu/llama/eager.json"
    kept = {path: (path.read_bytes(), path.stat()) for path in (record, result)}
    try:
        record.write_text(json.dumps({**json.loads(record.read_text()), "latency_ms": [1.0, -1.0]}))
        done = snakemake(project, str(result.relative_to(project)), check=False)
        said = f"{record.relative_to(project)} holds `latency_ms` with -1.0 among its samples"
        assert done.returncode != 0 and said in done.stderr, done.stderr[-3000:]
        assert not result.exists() and record.with_name("2.json.rejected").exists()
        assert {str(p.relative_to(project)) for p in (record, result)} <= planned_outputs(project)
    finally:
        record.with_name("2.json.rejected").unlink(missing_ok=True)
        for path, (data, stat) in kept.items():
            path.write_bytes(data)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_starts_record_is_held_to_what_a_result_is(finished, tmp_path):
    project = finished[0]
    source = project / "results/starts/cpu/own/compile-default.json"
    good = json.loads(source.read_text())
    expected = {k: good[k] for k in ("hardware", "model", "mode", "experiment_sha256", "paths", "repeats")}
    eager = json.loads((project / "results/runs/cpu/own/eager.json").read_text())
    rows = good["rows"]
    cases = {
        "foreign": ({**good, "experiment_sha256": eager["experiment_sha256"], "mode": "eager"}, "experiment_sha256"),
        "schema": ({**good, "schema": 7}, "schema 7"),
        "negative": ({**good, "rows": [{**rows[1], "total_s": -100}, *rows[2:]]}, "total_s -100"),
        "nan": ({**good, "rows": [{**rows[1], "total_s": float("nan")}, *rows[2:]]}, "total_s nan"),
        "plan": ({**good, "repeats": 9}, "repeats is 9 where the config asks 1"),
        "parts": ({**good, "rows": [{**rows[1], "total_s": 0.01}, *rows[2:]]}, "expected the parts to make the total"),
    }
    downstream = tmp_path / "paper.pdf"
    for name, (record, said) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(record))
        downstream.write_text("rests on it")
        with pytest.raises(files.BadResult, match=re.escape(said)) as refused:
            files.read_starts([path], {str(path): expected}, downstream=[downstream])
        assert str(path) in str(refused.value) and "run the same command again" in str(refused.value)
        assert not path.exists() and path.with_name(f"{name}.json.rejected").exists() and not downstream.exists()
    assert files.read_starts([source], {str(source): expected}) == [good]


def test_compare_reads_a_run_through_the_checks_the_tables_use(finished, tmp_path):
    project = finished[0]
    runs = tmp_path / "run" / "results" / "runs" / "cpu" / "resnet"
    runs.mkdir(parents=True)
    result = json.loads((project / "results/runs/cpu/resnet/jit.json").read_text())
    (runs / "jit.json").write_text(json.dumps({**result, "batch_size": 64}))  # its fingerprint kept
    with pytest.raises(files.BadResult, match=r"batch_size is 64 where its own `experiment` asks"):
        run_folders.run_results(tmp_path / "run")
    (runs / "jit.json").write_text(json.dumps({k: v for k, v in result.items() if k != "processes"}))
    with pytest.raises(files.BadResult, match=r"its `processes` is None"):
        run_folders.run_results(tmp_path / "run")
    (runs / "jit.json").write_text(json.dumps(result))
    assert run_folders.run_results(tmp_path / "run")[("cpu", "resnet", "jit")] == result
    for part in ("starts", "runs"):  # a result whose starts were timed carries them
        own = tmp_path / "timed" / "results" / part / "cpu" / "own" / "compile-default.json"
        own.parent.mkdir(parents=True)
        own.write_bytes((project / "results" / part / "cpu" / "own" / "compile-default.json").read_bytes())
    assert run_folders.run_results(tmp_path / "timed")[("cpu", "own", "compile-default")]["start_rows"]
    default = json.loads((project / "results/runs/cpu/resnet/compile-default.json").read_text())
    (runs / "compile-default.json").write_text(json.dumps(default))
    (runs / "jit.json").replace(runs / "compile-default.json")  # jit's result where compile-default's lies
    with pytest.raises(UserError, match="holds no results"):  # not at its own path: never read as a result
        run_folders.run_results(tmp_path / "run")


def test_a_killed_jobs_scratch_folder_is_removed_by_the_next_job(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stale = tmp_path / "compilebench-starts-999999999-x1"  # no process has this id
    live = tmp_path / f"compilebench-starts-{os.getpid()}-x2"
    stale.mkdir()
    live.mkdir()
    with files.scratch_folder("compilebench-starts-") as scratch:
        assert Path(scratch).name.startswith(f"compilebench-starts-{os.getpid()}-")
    assert not stale.exists() and live.exists()
    # every scratch folder a job or its worker makes is named so: a killed ONNX Runtime job leaves none for good
    made = {"compilebench-job-", "compilebench-starts-", "compilebench-work-", "compilebench-cache-",
            "compilebench-processes-"}  # fmt: skip
    source = "\n".join(path.read_text() for path in Path(files.__file__).parents[1].rglob("*.py"))
    assert set(re.findall(r'scratch_folder\("(compilebench-[a-z]+-)"\)', source)) == made
    assert "TemporaryDirectory(" not in source.replace('tempfile.TemporaryDirectory(prefix=f"{prefix}', "")


@pytest.mark.parametrize("content", ["[1, 2, 3]", '{"hardware": "cpu", "device'])
def test_an_environment_record_that_is_a_list_or_broken_json_is_named_not_a_traceback(tmp_path, content):
    record = tmp_path / "cpu.json"
    record.write_text(content)
    with pytest.raises(UserError, match=f"The environment record {record} (is a JSON list|cannot be read as JSON)"):
        files.read_environment_record(record)
    failed = files.failure_of(record)  # a job upstream of it fails, naming the file, instead of crashing
    assert failed is not None and str(record) in failed["message"]
