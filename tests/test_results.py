import json

import pytest

from compilebench.core.files import atomic_write, write_json


def test_json_is_strict_and_complete(tmp_path):
    path = tmp_path / "deep" / "r.json"
    write_json(path, {"schema": 1, "value": float("nan"), "nested": {"x": [1.0, float("inf")]}})
    assert json.loads(path.read_text()) == {"schema": 1, "value": None, "nested": {"x": [1.0, None]}}


def test_interrupted_write_leaves_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "r.json"
    write_json(path, {"schema": 1, "status": "ok"})

    def crash(handle):
        handle.write(b'{"schema": 1, "sta')
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, crash)
    assert json.loads(path.read_text())["status"] == "ok"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_bad_results_are_named_and_moved_aside_so_the_next_run_redoes_them(tmp_path):
    from synthetic import synthetic_results

    from compilebench.core.files import BadResult, read_result, read_results

    paths = synthetic_results(tmp_path, hardware=("cpu",))
    good, truncated, foreign = paths[0], paths[1], paths[2]
    record = read_result(good)
    expected = {str(good): {k: record[k] for k in ("hardware", "model", "mode", "experiment_sha256")}}
    expected[str(foreign)] = {**expected[str(good)], "mode": read_result(foreign)["mode"]}  # another experiment's
    truncated.write_bytes(truncated.read_bytes()[:200])
    paper = tmp_path / "paper.pdf"
    paper.write_text("a paper that rests on them")
    with pytest.raises(BadResult) as error:
        read_results([good, truncated, foreign], expected, downstream=[paper])
    message = str(error.value)
    assert "Refused 2 result file(s)" in message and "\n" not in message
    assert not paper.exists() and f"{paper} removed" in message
    assert f"{truncated} cannot be read (JSONDecodeError" in message
    assert f"{foreign} is not the result of the experiment it stands for" in message and "experiment_sha256" in message
    assert good.exists() and not truncated.exists() and not foreign.exists()
    assert truncated.with_name(truncated.name + ".rejected").exists()
    assert read_results([good], expected) == [record]


def test_a_result_carries_the_identity_of_its_experiment():
    from helpers import tiny_config

    from compilebench.configuration import config as configuration
    from compilebench.core.records import result_header

    config = configuration.validate(tiny_config())
    exp = configuration.experiment(config, "resnet", "jit", "cpu")
    header = result_header(exp, "failed", "boom")
    assert {k: header[k] for k in exp.identity()} == exp.identity()
    other = configuration.experiment(config, "resnet", "compile-default", "cpu")
    assert other.identity()["experiment_sha256"] != exp.identity()["experiment_sha256"]


def _refusal(path, record, expected=None) -> str:
    from compilebench.core.files import BadResult, read_result

    write_json(path, record)
    with pytest.raises(BadResult) as error:
        read_result(path, expected)
    return str(error.value)


def test_a_result_that_is_not_what_it_says_is_refused_naming_what_differs(tmp_path):
    """Hand edits that keep the fingerprint: the settings, the schema version, the shape."""
    from synthetic import synthetic_results

    from compilebench.core.files import read_result
    from compilebench.core.records import RECORDED_SETTINGS

    path = synthetic_results(tmp_path, hardware=("cpu",))[1]
    record = read_result(path)
    expected = {k: record[k] for k in ("hardware", "model", "mode", "experiment_sha256", *RECORDED_SETTINGS)}
    assert read_result(path, expected) == record
    message = _refusal(path, {**record, "batch_size": 64}, expected)
    assert "its batch_size differs from what the config asks; batch_size is 64 where the config asks 1" in message
    spec = {**record["spec"], "image_size": 512}
    assert "its spec differs" in _refusal(path, {**record, "spec": spec}, expected)
    assert "is of schema 1: this compilebench reads results of schema 2" in _refusal(path, {**record, "schema": 1})
    assert "holds notes, which no result of schema 2 has" in _refusal(path, {**record, "notes": "edited"})
    assert "its `processes` is []: expected one entry per" in _refusal(path, {**record, "processes": []})
    lacking = {k: v for k, v in record.items() if k != "stats"}
    assert "is `ok` but lacks stats, which every ok result has" in _refusal(path, lacking)
    older = {k: v for k, v in record.items() if k != "spec"}  # results from before `spec` was recorded
    assert read_result(write_json(path, older) or path, expected) == older


def test_the_identity_a_result_must_carry_is_what_its_header_records():
    from helpers import tiny_config

    from compilebench.configuration import config as configuration
    from compilebench.core import records

    config = configuration.validate(tiny_config())
    exp = configuration.experiment(config, "vit", "compile-default", "cpu")
    header = json.loads(json.dumps(records.result_header(exp)))
    identity = records.identity(exp)
    assert {k: header[k] for k in identity} == identity and identity["batch_size"] == 1
