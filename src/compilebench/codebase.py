"""The package's own code as the workflow sees it: which modules each job runs, and what that code does.

A job's code is the modules its script (`scripts/NAME.py`) imports, followed through the package (imports inside
functions included; `TYPE_CHECKING` blocks left out, since they never run), and the worker's where that code
starts one. What the code does is fingerprinted by its syntax tree without docstrings, so a comment or a
docstring reworded changes no fingerprint and reruns nothing.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import json
import os
from pathlib import Path

PACKAGE = "compilebench"
HERE = Path(__file__).parent

SCRIPTS = HERE.parents[1] / "scripts"
# Code that reaches this module starts `python -m compilebench.worker`, whose code then runs too.
STARTS_THE_WORKER = "core.supervise"
WORKER = "worker.__main__"
INIT = "__init__"

# Each folder of the package, and the folders its modules may import (its own always): the layers point one way.
LAYERS: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "configuration": frozenset({"core"}),
    "analysis": frozenset({"core"}),
    "parent": frozenset({"core", "configuration", "analysis"}),
    "worker": frozenset({"core"}),
    "report": frozenset({"core", "configuration", "analysis"}),
    "pipeline": frozenset({"core", "configuration", "parent", "report"}),
    "history": frozenset({"core", "analysis"}),
    "": frozenset({"core", "configuration", "analysis", "parent", "worker", "report", "pipeline", "history"}),
}
# Outside the worker, torch is imported only to fetch pretrained weights through torchvision (the download job).
TORCH_OUTSIDE_THE_WORKER = frozenset({"parent.assets"})


def module_names() -> list[str]:
    """Every module of the package by its dotted name under it (`worker.runner`; a folder's own `__init__` as
    `worker.__init__`, the package's as `__init__`)."""
    return sorted(".".join(path.relative_to(HERE).with_suffix("").parts) for path in HERE.rglob("*.py"))


def folder(name: str) -> str:
    """The folder module `name` lives in, "" for the package's top."""
    parts = name.split(".")
    return parts[0] if len(parts) > 1 else ""


def module_of(imported: str) -> str:
    """The module name of `imported` as Python names it in `sys.modules` (`compilebench.worker` is the folder's
    `__init__`, `compilebench` the package's)."""
    rest = imported.removeprefix(PACKAGE).lstrip(".")
    if not rest:
        return INIT
    return rest if (HERE / f"{rest.replace('.', '/')}.py").exists() else f"{rest}.{INIT}"


def path_of(name: str) -> Path:
    return HERE / f"{name.replace('.', '/')}.py"


@functools.cache
def _facts(name: str) -> tuple[frozenset[str], str]:
    """What module `name` imports from the package (any name it imports from it, modules or not, resolved to dotted
    names) and the digest of what it does, kept per module and source text in the user's cache folder: parsing
    every module takes most of a second, and every snakemake invocation needs them."""
    source = path_of(name).read_bytes()
    key = hashlib.sha256(name.encode() + b"\0" + source).hexdigest()
    cached = _cache_dir() / f"{key}.json"
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        known = json.loads(cached.read_text())
        return frozenset(known["imports"]), str(known["meaning"])
    tree = ast.parse(source, filename=str(path_of(name)))
    imports = frozenset(_imported(tree, name))
    meaning = hashlib.sha256(ast.dump(_WithoutDocstrings().visit(tree), include_attributes=False).encode()).hexdigest()
    with contextlib.suppress(OSError):  # a home one cannot write to costs the parse again, nothing else
        cached.parent.mkdir(parents=True, exist_ok=True)
        scratch = cached.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps({"imports": sorted(imports), "meaning": meaning}))
        os.replace(scratch, cached)
    return imports, meaning


def _cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / PACKAGE / "code"


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _resolved(parts: list[str], known: set[str]) -> str | None:
    """The module that dotted `parts` under the package name: a module, a folder's `__init__`, or None."""
    dotted = ".".join(parts)
    if not dotted:
        return INIT
    if dotted in known:
        return dotted
    return f"{dotted}.{INIT}" if f"{dotted}.{INIT}" in known else None


def _imported(tree: ast.Module, name: str | None) -> set[str]:
    """The modules of the package that `tree` (module `name`, or a script outside the package for None) imports
    anywhere, as dotted names, outside `if TYPE_CHECKING:` blocks; `from X import y` counts X and, where it is a
    module or folder, X.y."""
    known = set(module_names())
    package = name.split(".")[:-1] if name else []
    found: set[str] = set()

    def add(parts: list[str], names: list[str]) -> None:
        for dotted in (parts, *([*parts, alias] for alias in names)):
            module = _resolved(dotted, known)
            if module:
                found.add(module)

    def visit(node: ast.AST) -> None:
        if _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            module = (node.module or "").split(".") if node.module else []
            if node.level:
                base = package[: len(package) - (node.level - 1)] if name else None
                if base is not None:
                    add([*base, *module], [alias.name for alias in node.names])
            elif module and module[0] == PACKAGE:
                add(module[1:], [alias.name for alias in node.names])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == PACKAGE:
                    for end in range(1, len(parts) + 1):
                        add(parts[1:end], [])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _enclosing_inits(name: str) -> set[str]:
    """The `__init__` modules Python runs before module `name`: the package's and each folder's above it."""
    parts = name.split(".")[:-1]
    return {INIT} | {".".join([*parts[:end], INIT]) for end in range(1, len(parts) + 1)}


@functools.cache
def import_graph() -> dict[str, frozenset[str]]:
    """Each module of the package, and the package's modules it imports (the folders' `__init__`s it runs
    included)."""
    known = set(module_names())
    return {name: frozenset(((_facts(name)[0] | _enclosing_inits(name)) & known) - {name}) for name in known}


def closure(roots: tuple[str, ...]) -> list[str]:
    """`roots` and every module of the package they import, directly or not."""
    graph, seen, todo = import_graph(), set(), list(roots)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph[name])
    return sorted(seen)


def upward_imports() -> list[tuple[str, str]]:
    """Every import of a module from a folder its own folder may not import (`LAYERS`), as (importer, imported)."""
    return sorted(
        (name, other)
        for name, imported in import_graph().items()
        for other in imported
        if folder(other) != folder(name) and folder(other) and folder(other) not in LAYERS[folder(name)]
    )


def cycles() -> list[list[str]]:
    """Every import cycle of the package, each as the modules along it (empty when the layers point one way).

    Along the imports a module names: a folder's `__init__` that imports its own modules (a registry of kinds) is
    run before them and is no cycle; a module that names its folder's `__init__` back is one."""
    known = set(module_names())
    graph = {name: (_facts(name)[0] & known) - {name} for name in known}
    found, state = [], {}

    def walk(name: str, path: list[str]) -> None:
        state[name] = "open"
        for other in sorted(graph[name]):
            if state.get(other) == "open":
                found.append([*path[path.index(other) :], other])
            elif other not in state:
                walk(other, [*path, other])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])
    return found


class _WithoutDocstrings(ast.NodeTransformer):
    def _strip(self, node):
        self.generic_visit(node)
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
            if isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
        return node

    visit_Module = visit_ClassDef = visit_FunctionDef = visit_AsyncFunctionDef = _strip


def meaning(name: str) -> str:
    """The digest of what module `name` does: its syntax tree, docstrings and comments left out."""
    return _facts(name)[1]


def script_roots(name: str) -> tuple[str, ...]:
    """The package's modules that job script `name` imports, and the worker where their code starts it."""
    tree = ast.parse((SCRIPTS / f"{name}.py").read_text(), filename=f"{name}.py")
    roots = tuple(sorted(_imported(tree, None)))
    return (*roots, WORKER) if STARTS_THE_WORKER in closure(roots) else roots


def script_fingerprint(name: str) -> str:
    """The fingerprint of the code that job script `name` runs: its rule's `code` param."""
    return fingerprint(script_roots(name))


def fingerprint(roots: tuple[str, ...]) -> str:
    """The fingerprint of the code a job with entries `roots` runs: a workflow param, so that the job reruns when
    that code changes what it does, and only then."""
    digest = hashlib.sha256()
    for name in closure(roots):
        digest.update(f"{name}\0{meaning(name)}\0".encode())
    return digest.hexdigest()
