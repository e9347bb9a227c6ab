"""A module of the user's own: a Python file (`file`), a callable in it that returns the `nn.Module` (`factory`), and
its inputs from a callable in the same file (`inputs`, given the batch size) or a shape and dtype (`input`).

The file's content is part of the experiment (`file_sha256`, filled in when the config is read): editing the model
measures it again, editing another file does not. The file is read here, never run: whether its names exist is
checked from its syntax; the worker imports it.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from ..errors import ConfigError
from .base import Source

IDENTIFIER = {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}
DTYPES = ("float32", "float16", "bfloat16", "int64", "int32")


class Python(Source):
    name = "python"
    description = "a module of your own, built by `factory` from the Python file `file`"
    arch_words = "factory"
    tasks = ("image-classification", "text-classification", "fill-mask")
    input_axes = ("batch_size",)
    schema = {
        "file": {
            "type": "string",
            "minLength": 1,
            "description": "source python: the Python file that builds the model, relative to the project",
        },
        "factory": {
            **IDENTIFIER,
            "description": "source python: the callable in `file` that returns the torch.nn.Module (called with no "
            "arguments)",
        },
        "inputs": {
            **IDENTIFIER,
            "description": "source python: the callable in `file` that returns the model's inputs, a tensor or a "
            "tuple of tensors, for a batch size it is given",
        },
        "input": {
            "type": "object",
            "additionalProperties": False,
            "required": ["shape"],
            "description": "source python, instead of `inputs`: one seeded random input of this shape (batch first, "
            "from batch_size) and dtype",
            "properties": {
                "shape": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "integer", "minimum": 1},
                    "description": "the input's shape without its batch dimension, a list of integers >= 1",
                },
                "dtype": {
                    "type": "string",
                    "enum": list(DTYPES),
                    "default": "float32",
                    "description": f"the input's dtype: {', '.join(DTYPES)} (integers drawn from 0 to 99)",
                },
            },
        },
        "file_sha256": {"type": "string", "description": "set by compilebench: the SHA-256 of `file`"},
    }

    def complete(self, name: str, entry: dict) -> None:
        """Its `arch` is its factory's name; its file's content joins the experiment."""
        key = f"models.{name}"
        for needed in ("file", "factory"):
            if needed not in entry:
                raise ConfigError(
                    f"Config key `{key}.{needed}` is missing: a model of source python names the Python file that "
                    "builds it (`file`) and the callable in it that returns the module (`factory`)."
                )
        path = Path(entry["file"])
        if not path.is_file():
            raise ConfigError(
                f"Config key `{key}.file` names {entry['file']!r}, which is not a file: expected the path of a Python "
                "file, relative to the project (where snakemake runs)."
            )
        if ("inputs" in entry) == ("input" in entry):
            raise ConfigError(
                f"Config key `{key}` gives {'both `inputs` and `input`' if 'inputs' in entry else 'no input'}: "
                "expected one of `inputs` (a callable in the file, given the batch size) or `input` (a shape and a "
                "dtype)."
            )
        defined = top_level_names(path, f"{key}.file")
        for field in ("factory", "inputs"):
            if field in entry and entry[field] not in defined:
                raise ConfigError(
                    f"Config key `{key}.{field}` is {entry[field]!r}, which {path} does not define at its top level: "
                    f"expected one of {', '.join(sorted(defined)) or 'its functions or classes (it has none)'}."
                )
        entry["arch"] = entry["factory"]
        entry["file_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()


def top_level_names(path: Path, key: str) -> set[str]:
    """The names a Python file defines at its top level (functions, classes, assignments, imports), read from its
    syntax without running it."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError) as exc:
        raise ConfigError(f"Config key `{key}` names {str(path)!r}, which is not valid Python: {exc}") from None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


SOURCE = Python()
