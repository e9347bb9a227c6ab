"""The paper's reproducibility appendix: the config and environment records as YAML, package versions, asset
checksums."""

from __future__ import annotations

import yaml

from ..core.files import sha256_of
from ..core.layout import ASSETS_DIR
from .hardware_tables import unbacked_fast_math


def package_versions(envs: list[dict]) -> dict:
    """Package versions per platform, one column per group of platforms that ran the same ones (each
    platform with its own Python environment has its own)."""
    groups: dict[tuple, list[str]] = {}
    for record in envs:
        if record.get("packages"):
            groups.setdefault(tuple(sorted(record["packages"].items())), []).append(record["hardware"])
    names = sorted({name for versions in groups for name, _ in versions})
    columns = [dict(versions) for versions in groups]
    return {"platforms": list(groups.values()), "rows": [(n, [c.get(n) for c in columns]) for n in names]}


def fast_math_note(record: dict) -> str | None:
    """Say plainly when a CPU fast-math mode was asked for on a CPU that cannot do it natively."""
    mode = (record.get("kernel_env") or {}).get("DNNL_DEFAULT_FPMATH_MODE")
    if not mode or record["device"] != "cpu" or not record.get("cpu"):
        return None
    if unbacked_fast_math(mode, record["cpu"]["bf16_native"], record["device"]):
        return (
            f"DNNL_DEFAULT_FPMATH_MODE={mode} was requested, but this CPU has no native bf16 instructions: "
            "its results are not a measurement of bf16 fast math."
        )
    return f"DNNL_DEFAULT_FPMATH_MODE={mode} (native bf16: {', '.join(record['cpu']['bf16_flags']) or 'none'})."


def asset_checksums(config: dict) -> list[dict]:
    rows = []
    for name, entry in config.get("assets", {}).get("files", {}).items():
        path = ASSETS_DIR / name
        actual = sha256_of(path) if path.exists() else None
        rows.append({"name": name, "url": entry["url"], "expected": entry["sha256"], "actual": actual})
    return rows


class _PlainDumper(yaml.SafeDumper):
    """YAML as a reader reads it: a value shared by two keys is written out at each, not as an alias."""

    def ignore_aliases(self, data) -> bool:
        return True


# The mappings of entries the appendix keeps apart, each entry in one block that a column does not split.
ENTRY_BLOCKS = ("models", "hardware", "mode_definitions")


def yaml_blocks(record: dict) -> list[str]:
    """`record` as YAML, in blocks of whole keys: a top-level key each, and each entry of a long mapping apart."""

    def dump(value) -> str:
        return yaml.dump(value, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=100)

    blocks = []
    for key, value in record.items():
        if (
            key in ENTRY_BLOCKS
            and isinstance(value, dict)
            and value
            and all(isinstance(v, dict) for v in value.values())
        ):
            entries = [dump({name: entry}) for name, entry in value.items()]
            indented = ["".join(f"  {line}\n" for line in entry.splitlines()) for entry in entries]
            blocks += [f"{key}:\n{indented[0]}", *indented[1:]]
        elif blocks and "\n" not in (text := dump({key: value})).rstrip("\n") and _one_liners(blocks[-1]):
            blocks[-1] += text  # consecutive one-line keys share a block
        else:
            blocks.append(dump({key: value}))
    return [block.rstrip("\n") for block in blocks]


def _one_liners(block: str) -> bool:
    """A block of top-level keys of one line each."""
    return all(line and not line.startswith((" ", "-")) for line in block.rstrip("\n").split("\n"))
