import json

import pytest

from compilebench.results import atomic_write, write_json


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
