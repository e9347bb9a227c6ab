"""Downloads against the local mirror: verified, atomic, retried, clear when they cannot be had."""

from __future__ import annotations

import urllib.request

import pytest
from helpers import ASSETS_MIRROR

from compilebench.core.files import sha256_of
from compilebench.parent import assets
from compilebench.parent.assets import AssetError, fetch, fetch_weights

DOG_URL = "https://github.com/pytorch/hub/raw/master/images/dog.jpg"
DOG_SHA = "f3f87bb8ab3c26c7ecfd3ac60421d7f32b0503d1d6c5baf8bac42ed93d86351a"

needs_mirror = pytest.mark.skipif(not (ASSETS_MIRROR / "dog.jpg").exists(), reason="needs the shared asset mirror")


@needs_mirror
def test_mirror_copy_is_verified(tmp_path):
    dest = fetch("dog.jpg", DOG_URL, DOG_SHA, tmp_path / "assets" / "dog.jpg", str(ASSETS_MIRROR))
    assert sha256_of(dest) == DOG_SHA
    assert [p.name for p in dest.parent.iterdir()] == ["dog.jpg"]


@needs_mirror
def test_checksum_mismatch_names_url_expected_actual_and_leaves_nothing(tmp_path):
    wrong = "0" * 64
    with pytest.raises(AssetError) as error:
        fetch("dog.jpg", DOG_URL, wrong, tmp_path / "dog.jpg", str(ASSETS_MIRROR))
    message = str(error.value)
    assert DOG_URL in message and wrong in message and DOG_SHA in message
    assert list(tmp_path.iterdir()) == []


def test_mirror_without_the_file(tmp_path):
    with pytest.raises(AssetError, match="assets.mirror"):
        fetch("dog.jpg", DOG_URL, DOG_SHA, tmp_path / "out" / "dog.jpg", str(tmp_path))
    assert list((tmp_path / "out").iterdir()) == []


def test_unreachable_host_is_retried_then_explained(tmp_path, monkeypatch):
    calls = []
    real = urllib.request.urlopen

    def counting(url, *args, **kwargs):
        calls.append(url)
        return real(url, *args, **kwargs)

    monkeypatch.setattr(urllib.request, "urlopen", counting)
    with pytest.raises(AssetError) as error:
        fetch("dog.jpg", "https://127.0.0.1:9/dog.jpg", DOG_SHA, tmp_path / "dog.jpg", attempts=3, backoff_s=0)
    assert len(calls) == 3
    assert "`dog.jpg`" in str(error.value) and "assets.mirror" in str(error.value)
    assert list(tmp_path.iterdir()) == []


def test_plain_http_is_refused(tmp_path):
    with pytest.raises(AssetError, match="only https"):
        fetch("dog.jpg", "http://example.org/dog.jpg", DOG_SHA, tmp_path / "dog.jpg")


def test_mirror_url_base_keeps_the_file_name():
    assert assets.source_of(DOG_URL, "https://mirror.example/assets/") == "https://mirror.example/assets/dog.jpg"
    assert assets.source_of(DOG_URL, None) == DOG_URL


def test_offline_hub_download_is_explained_and_cleaned(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spec = {"source": "transformers", "hub_id": "google/vit-base-patch16-224", "revision": "3f49326"}
    dest = tmp_path / "weights" / "vit"
    with pytest.raises(AssetError) as error:
        fetch_weights("vit", spec, dest)
    assert "models.vit" in str(error.value) and "google/vit-base-patch16-224" in str(error.value)
    assert not dest.exists()
