"""Shared fixtures; the helpers they build on live in helpers.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Tests that do not measure compile time share one inductor cache, to keep CI quick.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path.home() / ".cache" / "compilebench-tests-inductor"))


@pytest.fixture
def config_file(tmp_path):
    """Write a config dict as YAML and return its path."""
    import yaml

    def write(config: dict, name: str = "config.yaml") -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(config))
        return path

    return write
