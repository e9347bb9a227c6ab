"""Downloads: verified by sha256, written atomically, retried with backoff, mirror-aware."""

from __future__ import annotations

import logging
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from ..core import sources
from ..core.errors import UserError
from ..core.files import atomic_write, sha256_of

log = logging.getLogger(__name__)


class AssetError(UserError):
    """A download that cannot be had or does not match its checksum."""


def source_of(url: str, mirror: str | None) -> str:
    """Where to read `url` from: the original host, or the same file name under the mirror."""
    if not mirror:
        return url
    name = Path(urlparse(url).path).name
    if "://" in mirror:
        return mirror.rstrip("/") + "/" + name
    return str(Path(mirror) / name)


def _read(source: str, handle, attempts: int, backoff_s: float) -> None:
    if "://" not in source:
        with open(source, "rb") as src:
            shutil.copyfileobj(src, handle)
        return
    if not source.startswith("https://"):
        raise AssetError(f"Refusing to download {source}: only https URLs are allowed.")
    for attempt in range(1, attempts + 1):
        try:
            with urllib.request.urlopen(source, timeout=60) as response:
                handle.seek(0)
                handle.truncate()
                shutil.copyfileobj(response, handle)
                return
        except urllib.error.HTTPError as exc:
            if exc.code < 500 or attempt == attempts:
                raise
        except (urllib.error.URLError, TimeoutError, ConnectionError):
            if attempt == attempts:
                raise
        log.warning("download of %s failed (attempt %d of %d); retrying", source, attempt, attempts)
        time.sleep(backoff_s * 2 ** (attempt - 1))


def fetch(
    name: str,
    url: str,
    sha256: str,
    dest: str | Path,
    mirror: str | None = None,
    *,
    attempts: int = 3,
    backoff_s: float = 1.0,
) -> Path:
    """Download (or copy from the mirror) one asset to `dest`, verified; on any error nothing is left."""
    dest = Path(dest)
    source = source_of(url, mirror)
    log.info("fetching asset %s from %s", name, source)

    def write(handle) -> None:
        try:
            _read(source, handle, attempts, backoff_s)
        except FileNotFoundError:
            raise AssetError(
                f"Asset `{name}`: the mirror (config key `assets.mirror` = {mirror!r}) has no file {source}."
            ) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise AssetError(
                f"Asset `{name}` could not be downloaded from {source} ({exc}). If this machine is offline, "
                "set config key `assets.mirror` to a local folder or URL base that holds the file, or point "
                "the model's entry at a local path."
            ) from None
        handle.flush()
        actual = sha256_of(Path(handle.name))
        if actual != sha256:
            raise AssetError(
                f"Asset `{name}` from {source} (original URL {url}) has sha256 {actual}, but config key "
                f"`assets.files.{name}.sha256` expects {sha256}; the file was not kept."
            )

    atomic_write(dest, write)
    return dest


def fetch_weights(model: str, spec: dict, dest: str | Path) -> Path:
    """Pretrained weights into `dest`: a Hugging Face snapshot at its pinned revision, or torchvision's file."""
    dest = Path(dest)
    try:
        if sources.get(spec["source"]).pretrained_from_hub:
            from huggingface_hub import snapshot_download

            snapshot_download(repo_id=spec["hub_id"], revision=spec["revision"], local_dir=dest)
        else:
            import torch
            import torchvision

            weights = torchvision.models.get_model_weights(spec["arch"]).DEFAULT
            dest.mkdir(parents=True, exist_ok=True)
            state = torch.hub.load_state_dict_from_url(
                weights.url, model_dir=str(dest), check_hash=True, progress=False
            )
            torch.save(state, dest / "state_dict.pt")
    except Exception as exc:
        shutil.rmtree(dest, ignore_errors=True)
        where = spec.get("hub_id") or spec["arch"]
        raise AssetError(
            f"Pretrained weights of `models.{model}` ({where}) could not be fetched: {type(exc).__name__}: {exc}. "
            f"On an offline machine, download them elsewhere and set `models.{model}.weights` to their local path."
        ) from None
    return dest
