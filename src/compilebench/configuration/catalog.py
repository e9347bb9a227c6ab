"""What a model entry names, checked before any job runs: an architecture the library has, a weights path
that holds a checkpoint.

Architecture names come from the installed torchvision and transformers, listed by a child process once per
installed version when a config names a model of theirs (and skipped where the library is absent: that model's own
job then says so), so that the process validating a config never imports torch. Weights are
checked by their files alone, without loading them.
"""

from __future__ import annotations

import difflib
import functools
import importlib.metadata
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from ..core.errors import ConfigError
from ..core.files import write_json

# What `save_pretrained` writes beside config.json, one file or the index of a sharded checkpoint.
TRANSFORMERS_WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


@functools.cache
def known_architectures(source: str) -> frozenset[str] | None:
    """The names `source` can build here, or None where the library is not installed. Listing them takes a child
    process seconds, paid by every snakemake invocation that validates a config, so the
    names of each installed version are kept in the user's cache."""
    try:
        version = importlib.metadata.version(source)
    except importlib.metadata.PackageNotFoundError:
        return None
    cached = _cache_dir() / f"architectures-{source}-{version}.json"
    try:
        return frozenset(json.loads(cached.read_text()))
    except (OSError, ValueError, TypeError):
        pass
    names = _listed_by_importing(source)
    if names is not None:
        try:
            write_json(cached, sorted(names))
        except OSError:
            pass  # a read-only home only costs the next invocation the import again
    return names


def _cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "compilebench"


# Each library's own list of what it builds, printed as JSON by a child process: the caller never imports it.
LISTING = {
    "torchvision": "import torchvision.models as m; names = m.list_models(module=m)",
    "transformers": "from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES as names",
}


def _listed_by_importing(source: str) -> frozenset[str] | None:
    """The architectures `source` lists, asked of a child interpreter so that torch never loads in this process
    (the Snakemake process validates every config); None where the library does not import."""
    code = f"import json; {LISTING[source]}; print(json.dumps(sorted(names)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return None
    return frozenset(json.loads(done.stdout.strip().splitlines()[-1]))


def check_architectures(models: dict) -> None:
    """Every model's `arch` is one its library has; a sweep's points are checked once, under the model's key."""
    for name, model in {entry.get("sweep_of", name): entry for name, entry in models.items()}.items():
        known = known_architectures(model["source"])
        if known is None or model["arch"] in known:
            continue
        close = difflib.get_close_matches(model["arch"], sorted(known), n=3)
        hint = f"did you mean {' or '.join(close)}?" if close else f"{len(known)} names, such as {_examples(known)}"
        what = "classification model" if model["source"] == "torchvision" else "model_type"
        raise ConfigError(
            f"Config key `models.{name}.arch` is {model['arch']!r}, which the installed {model['source']} has no "
            f"{what} of: expected one it lists ({hint})."
        )


def _examples(known: frozenset[str]) -> str:
    preferred = [n for n in ("resnet18", "resnet50", "vit_b_16", "llama", "bert", "vit") if n in known]
    return ", ".join(preferred or sorted(known)[:3])


def check_weights(key: str, source: str, weights: str) -> None:
    """A weights path is a torch checkpoint (torchvision) or a save_pretrained folder (transformers)."""
    path = Path(weights)
    if not path.exists():
        raise ConfigError(
            f"Config key `{key}` names {weights!r}, which does not exist: expected random, pretrained, or the path "
            "of a state dict file or a save_pretrained directory."
        )
    if source == "transformers":
        found = [name for name in TRANSFORMERS_WEIGHT_FILES if (path / name).is_file()]
        if not path.is_dir() or not (path / "config.json").is_file() or not found:
            raise ConfigError(
                f"Config key `{key}` names {weights!r}, which is not a save_pretrained folder: expected a directory "
                f"with config.json and one of {', '.join(TRANSFORMERS_WEIGHT_FILES)}."
            )
        return
    file = path / "state_dict.pt" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(
            f"Config key `{key}` names the folder {weights!r}, which holds no state_dict.pt: expected a state dict "
            "saved with torch.save, as a file or as state_dict.pt in that folder."
        )
    if not is_torch_checkpoint(file):
        raise ConfigError(
            f"Config key `{key}` names {str(file)!r}, which is not a torch checkpoint (neither torch.save's zip "
            "format nor its legacy pickle): expected a state dict saved with torch.save."
        )


def is_torch_checkpoint(path: Path) -> bool:
    """torch.save's zip archive (a `data.pkl` inside), or its legacy format (a pickle, protocol 2 or later)."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return any(name == "data.pkl" or name.endswith("/data.pkl") for name in archive.namelist())
    with open(path, "rb") as handle:
        return handle.read(1) == b"\x80"
