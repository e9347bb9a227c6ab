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
STARTS_THE_WORKER = "supervise"


def module_names() -> list[str]:
    return sorted(path.stem for path in HERE.glob("*.py"))


@functools.cache
def _facts(name: str) -> tuple[frozenset[str], str]:
    """What module `name` imports from the package (any name it imports from it, modules or not) and the digest
    of what it does, kept per source text in the user's cache folder: parsing every module takes most of a
    second, and every snakemake invocation needs them."""
    source = (HERE / f"{name}.py").read_bytes()
    cached = _cache_dir() / f"{hashlib.sha256(source).hexdigest()}.json"
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        known = json.loads(cached.read_text())
        return frozenset(known["imports"]), str(known["meaning"])
    tree = ast.parse(source, filename=f"{name}.py")
    imports = frozenset(_imported(tree))
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


def _imported(tree: ast.Module) -> set[str]:
    """The names that `tree` imports from the package anywhere (modules, and names that may be modules), outside
    `if TYPE_CHECKING:` blocks."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level == 0 and not base.startswith(f"{PACKAGE}.") and base != PACKAGE:
                return
            base = base.removeprefix(PACKAGE).lstrip(".")
            if base:
                found.add(base.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == PACKAGE and len(parts) > 1:
                    found.add(parts[1])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


@functools.cache
def import_graph() -> dict[str, frozenset[str]]:
    """Each module of the package, and the package's modules it imports."""
    known = set(module_names())
    return {name: frozenset((_facts(name)[0] & known) - {name}) for name in known}


def closure(roots: tuple[str, ...]) -> list[str]:
    """`roots` and every module of the package they import, directly or not."""
    graph, seen, todo = import_graph(), set(), list(roots)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph[name])
    return sorted(seen)


def cycles() -> list[list[str]]:
    """Every import cycle of the package, each as the modules along it (empty when the layers point one way)."""
    graph, found, state = import_graph(), [], {}

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
    roots = tuple(sorted(_imported(tree) & set(module_names())))
    return (*roots, "worker") if STARTS_THE_WORKER in closure(roots) else roots


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
