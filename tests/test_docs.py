"""docs/development.md names only what the code has: every module, function, class and file it spells out in
backticks exists, so that a rename the guide does not follow fails here."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from compilebench import codebase

ROOT = Path(__file__).parents[1]
GUIDE = ROOT / "docs" / "development.md"
FILE_ENDINGS = (".py", ".md", ".toml", ".yaml", ".rst", ".j2", ".json", ".smk", ".csv", ".txt", ".html", ".pdf", ".css")
EXTERNAL = ("torch.", "snakemake.", "scipy.", "pandas.")  # other packages' names
DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


def spelled_out() -> list[str]:
    """The guide's backticked names: file paths and dotted names, placeholders (NAME) left out."""
    names = {n.rstrip("/").split("(")[0] for n in re.findall(r"`([^`\s]+)`", GUIDE.read_text())}
    outputs = ("results/", "resources/", "logs/")  # what a run writes, not the tree
    return sorted(
        n
        for n in names
        if ("/" in n or "." in n)
        and "NAME" not in n
        and "…" not in n
        and not n.startswith((".", *outputs))
        and not n.startswith(EXTERNAL)
    )


def file_exists(name: str) -> bool:
    """The path exists from the top of the tree or from the package, or a file of the tree ends with it."""
    if (ROOT / name).exists() or (ROOT / "src" / "compilebench" / name).exists():
        return True
    return any(ROOT.glob(f"[!.]*/**/{name}"))


def resolves(name: str) -> bool:
    """`name` is a module of the package, or an attribute (at any depth) of one, named from the package or from
    any folder down (`worker.runner.measure_process`, `runner.measure_process`, `kinds.of`)."""
    parts = name.split(".")
    modules = codebase.module_names()
    for cut in range(len(parts), 0, -1):
        head = ".".join(parts[:cut])
        found = [m for m in modules if f".{m.removesuffix('.__init__')}".endswith(f".{head}")]
        for module in found:
            target = importlib.import_module(f"compilebench.{module.removesuffix('.__init__')}")
            try:
                for attribute in parts[cut:]:
                    target = getattr(target, attribute)
            except AttributeError:
                continue
            return True
    return False


@pytest.mark.parametrize("name", spelled_out())
def test_every_name_the_development_guide_spells_out_exists(name):
    if "/" in name or name.endswith(FILE_ENDINGS):
        assert file_exists(name), f"docs/development.md names the file `{name}`, which is not in the tree"
    elif DOTTED.match(name):
        assert resolves(name), f"docs/development.md names `{name}`, which no module of compilebench has"


def test_the_guide_check_finds_a_name_that_is_gone():
    assert not resolves("runner.run_everything") and resolves("runner.measure_process")
    assert not file_exists("rules/nothing.smk") and file_exists("rules/common.smk")
