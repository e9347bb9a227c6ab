"""Every experiment of every shipped config and of the tests' own configs, by name, with its fingerprint.

`tests/golden_digests.json` holds what an earlier compilebench computed: an upgrade that changes one of these
fingerprints would measure again every result measured before it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml
from helpers import ASSETS_MIRROR, ROOT, shared_run_config, tiny_config, tiny_workflow_config

from compilebench.configuration import config as configuration
from compilebench.configuration import schema

GOLDEN = Path(__file__).with_name("golden_digests.json")
SHIPPED = [
    "config/config.yaml",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "config" / "experiments").glob("*.yaml")),
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "benchmarks" / "gpu").glob("*.yaml")),
]


def _as_run(path: str) -> dict:
    """A shipped config file as `snakemake --configfile FILE` runs it: alone (the Snakefile then reads no
    config/config.yaml beside it)."""
    return yaml.safe_load((ROOT / path).read_text())


def configs() -> dict[str, dict]:
    named = {path: _as_run(path) for path in SHIPPED}
    named["tests:tiny_config"] = tiny_config()
    named["tests:tiny_workflow_config"] = tiny_workflow_config(ASSETS_MIRROR)
    # the shared run's broken checkpoint at a fixed path, so that its fingerprints do not depend on a tmp folder
    named["tests:shared_run"] = shared_run_config(Path("/tmp/compilebench-golden"))
    return named


def digests() -> dict[str, str]:
    """`CONFIG HARDWARE/MODEL/MODE` → experiment_sha256, and `CONFIG HARDWARE/MODEL reference` → the digest of the
    reference experiment (a Snakemake param: a change there redoes the reference and all that follows). The file
    was written by the compilebench before experiments were typed, from their plain dicts."""
    out = {}
    for name, raw in configs().items():
        config = configuration.validate(copy.deepcopy(raw))
        for hardware in config["hardware"]:
            for model in config["models"]:
                reference = configuration.reference_experiment(config, model, hardware)
                out[f"{name} {hardware}/{model} reference"] = reference.digest()
                for mode in schema.model_modes(config, model):
                    exp = configuration.experiment(config, model, mode, hardware)
                    out[f"{name} {hardware}/{model}/{mode}"] = exp.digest()
    return out


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(digests(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
