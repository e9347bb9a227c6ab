"""The configuration reference (`docs/configuration.md`), written from the schema's own descriptions, so that the
reference says what validation enforces and cannot drift from it. `python -m compilebench.configuration.reference`
prints it."""

from __future__ import annotations

import json
from typing import Any

from .schema import load_schema

HEADER = """# Configuration reference

Every key a config file may hold, as the schema that validates it states them (written by
`python -m compilebench.configuration.reference > docs/configuration.md`; a test keeps the two equal).
`NAME` stands for a name you choose (a model's, a hardware entry's, a mode's); `[]` for each item of a list.
Where a key has a default, a config without it gets the default.
"""


def _resolved(node: dict, definitions: dict) -> dict:
    while "$ref" in node:
        node = {**definitions[node["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _kind(node: dict, definitions: dict) -> str:
    node = _resolved(node, definitions)
    if "enum" in node:
        return " \\| ".join(f"`{json.dumps(value)}`" for value in node["enum"])
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    for key in ("oneOf", "anyOf"):
        if key in node:
            return " or ".join(dict.fromkeys(_kind(option, definitions) for option in node[key]))
    kind = node.get("type", "any")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds and isinstance(node.get("items"), dict):
        return f"list of {_kind(node['items'], definitions)}"
    return " or ".join(kinds)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def rows(node: dict, path: str, definitions: dict) -> list[tuple[str, str, str, str]]:
    """(key, kind, default, description) for `node` at `path` and every key below it."""
    node = _resolved(node, definitions)
    found = []
    if path:
        default = f"`{json.dumps(node['default'])}`" if "default" in node else ""
        found.append((f"`{path}`", _kind(node, definitions), default, _cell(node.get("description", ""))))
    prefix = f"{path}." if path else ""
    for key, child in node.get("properties", {}).items():
        found.extend(rows(child, prefix + key, definitions))
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and (_resolved(extra, definitions).get("properties") or not node.get("properties")):
        if _resolved(extra, definitions).get("properties") or extra.get("description"):
            found.extend(rows(extra, prefix + "NAME", definitions))
    for key in ("oneOf", "anyOf"):
        for option in node.get(key, []):
            if _resolved(option, definitions).get("properties"):
                found.extend(row for row in rows(option, path, definitions) if row[0] != f"`{path}`")
    items = node.get("items")
    if isinstance(items, dict) and _resolved(items, definitions).get("properties"):
        found.extend(rows(items, f"{path}[]", definitions))
    return found


def markdown() -> str:
    root = load_schema()
    definitions = root.get("definitions", {})
    sections: dict[str, list] = {"top level": []}
    for section, node in root["properties"].items():
        found = rows(node, section, definitions)
        sections.setdefault("top level" if len(found) == 1 else f"`{section}`", []).extend(found)
    lines = [HEADER]
    for title, found in sections.items():
        heading = title.capitalize() if title == "top level" else title
        lines += [f"## {heading}\n", "| key | type | default | what it means |", "| --- | --- | --- | --- |"]
        lines += [f"| {key} | {kind} | {default} | {text} |" for key, kind, default, text in dict.fromkeys(found)]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")
