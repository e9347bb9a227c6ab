"""What a model entry names, checked before any job runs: an architecture its library has.

Architecture names come from the installed library of each source that lists them (`Source.listing`), listed by a
child process once per installed version when a config names a model of theirs (and skipped where the library is
absent: that model's own job then says so), so that the process validating a config never imports torch. Weights
are checked by their source (`Source.check_weights`), by their files alone, without loading them.
"""

from __future__ import annotations

import difflib
import functools
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

from ..core import sources
from ..core.errors import ConfigError
from ..core.files import write_json


@functools.cache
def known_architectures(source: str) -> frozenset[str] | None:
    """The names `source` can build here, or None where the library is not installed. Listing them takes a child
    process seconds, paid by every snakemake invocation that validates a config, so the
    names of each installed version are kept in the user's cache. None too for a source that lists none."""
    if sources.get(source).listing is None:
        return None
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


def _listed_by_importing(source: str) -> frozenset[str] | None:
    """The architectures `source` lists, asked of a child interpreter so that torch never loads in this process
    (the Snakemake process validates every config); None where the library does not import."""
    listing = sources.get(source).listing
    if listing is None:
        return None
    code = f"import json; {listing}; print(json.dumps(sorted(names)))"
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
        what = sources.get(model["source"]).arch_words
        raise ConfigError(
            f"Config key `models.{name}.arch` is {model['arch']!r}, which the installed {model['source']} has no "
            f"{what} of: expected one it lists ({hint})."
        )


def _examples(known: frozenset[str]) -> str:
    preferred = [n for n in ("resnet18", "resnet50", "vit_b_16", "llama", "bert", "vit") if n in known]
    return ", ".join(preferred or sorted(known)[:3])
