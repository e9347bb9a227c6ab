"""Every experiment of every shipped config and of the tests' own configs, by name, with its fingerprint.

`tests/golden_digests.json` holds what an earlier compilebench computed: an upgrade that changes one of these
fingerprints would measure again every result measured before it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml
from helpers import ASSETS_MIRROR, ROOT, TINY_MODELS, tiny_config, tiny_workflow_config

from compilebench import config as configuration

GOLDEN = Path(__file__).with_name("golden_digests.json")
SHIPPED = [
    "config/config.yaml",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "config" / "experiments").glob("*.yaml")),
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "benchmarks").glob("*.yaml")),
]


def _merged(overlay: str) -> dict:
    """config/config.yaml with an experiment file over it, as `snakemake --configfile FILE` reads them."""
    from snakemake.utils import update_config

    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    if overlay != "config/config.yaml":
        update_config(base, yaml.safe_load((ROOT / overlay).read_text()))
    return base


def _shared_run() -> dict:
    """The shared run's config as tests/conftest.py builds it (its broken model's weights at a fixed path)."""
    config = tiny_workflow_config(ASSETS_MIRROR)
    weights = Path("/tmp/compilebench-golden/other_architecture.pt")
    weights.parent.mkdir(parents=True, exist_ok=True)
    if not weights.is_file():
        import torch

        torch.save({"layer.weight": torch.zeros(2, 2)}, weights)
    config["models"]["broken"] = {**TINY_MODELS["resnet"], "weights": str(weights)}
    config["models"]["broken"]["modes"] = ["eager", "compile-default"]
    config["models"]["resnet"]["measure"] = {"warm_start": True, "compile_trace": True}
    config["models"]["llama"]["measure"] = {"processes": 2}
    config["mode_definitions"].update(
        {
            "compile-int8": {"kind": "compile", "quantize": {"method": "int8_weight_only"}},
            "eager-int8": {"kind": "eager", "quantize": {"method": "int8_weight_only"}},
        }
    )
    config["modes"] += ["compile-int8", "eager-int8"]
    config["models"]["resnet"]["modes"].append("compile-int8")
    config["models"]["llama"]["modes"].append("eager-int8")
    return config


def configs() -> dict[str, dict]:
    named = {path: _merged(path) for path in SHIPPED}
    named["tests:tiny_config"] = tiny_config()
    named["tests:tiny_workflow_config"] = tiny_workflow_config(ASSETS_MIRROR)
    named["tests:shared_run"] = _shared_run()
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
                for mode in configuration.model_modes(config, model):
                    exp = configuration.experiment(config, model, mode, hardware)
                    out[f"{name} {hardware}/{model}/{mode}"] = exp.digest()
    return out


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(digests(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
