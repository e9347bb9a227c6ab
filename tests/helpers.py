"""Helpers the tests share: tiny models and configs, and real Snakemake runs in a copy of the project."""

from __future__ import annotations

import contextlib
import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from compilebench.configuration.expand import expand_streams, expand_sweeps, expand_training
from compilebench.core.records import START_PATHS

ROOT = Path(__file__).resolve().parents[1]
ASSETS_MIRROR = ROOT.parent / "shared" / "assets"

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TINY_MODELS = {
    "resnet": {"source": "torchvision", "arch": "resnet18", "image_size": 32, "config": {"num_classes": 10}},
    "vit": {
        "source": "transformers",
        "arch": "vit",
        "config": {
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "intermediate_size": 64,
            "image_size": 32,
            "patch_size": 8,
            "num_labels": 10,
        },
    },
    "llama": {
        "source": "transformers",
        "arch": "llama",
        "task": "text-generation",
        "config": {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "vocab_size": 256,
            "max_position_embeddings": 64,
        },
        "seq_len": 8,
        "new_tokens": 4,
    },
    "distilbert": {
        "source": "transformers",
        "arch": "distilbert",
        "task": "text-classification",
        "config": {
            "dim": 32,
            "hidden_dim": 64,
            "n_layers": 2,
            "n_heads": 2,
            "vocab_size": 128,
            "max_position_embeddings": 64,
        },
        "seq_len": 16,
    },
}

# The tests run two at a time on two cores (pyproject's `-n 2`): each measuring process takes one thread, so that
# neither's threads wait on cores the other holds (OpenMP threads that do time each other, not the model).
CPU = {"device": "cpu", "threads": 1}

# The example of a user's own model (`source: python`), as the shipped config names it.
OWN_MODEL = {"source": "python", "file": "examples/own_model.py", "factory": "build_model", "inputs": "example_inputs"}

FAST_MEASURE = {
    "warmup": 1,
    "iterations": 4,
    "min_time_s": 0,
    "interleave_block": 2,
    "block_warmup": 1,
    "min_blocks": 2,
    "steady_state_s": 0.05,
    "bootstrap_resamples": 200,
    "private_cache": False,
    "warm_start": False,  # timed where a test asks for it: each start is another process
    "max_extra_processes": 0,  # measured again only where a test asks for it
}


def tiny_config(models: dict | None = None, **overrides) -> dict:
    """A raw (unvalidated) config with tiny models and quick measurement settings."""
    config = {
        "modes": ["eager", "jit", "compile-default", "compile-reduce-overhead", "compile-max-autotune"],
        "measure": dict(FAST_MEASURE),
        "models": copy.deepcopy(models if models is not None else TINY_MODELS),
        "hardware": {"cpu": dict(CPU)},
    }
    config.update(overrides)
    return config


def word_tokenizer(vocab_size: int):
    """A word-level tokenizer for tiny saved models: a few real words, then filler up to `vocab_size`."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "is", "a", "samoyed"]
    vocab = {w: i for i, w in enumerate(words + [f"w{i}" for i in range(vocab_size - len(words))])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]", mask_token="[MASK]")


# Quick settings for real Snakemake runs. They do not measure compile time, so their jobs
# share the tests' inductor cache.
WORKFLOW_MEASURE = {
    "warmup": 1, "iterations": 3, "min_time_s": 0, "interleave_block": 1, "block_warmup": 1, "min_blocks": 2,
    "steady_state_s": 0.05, "bootstrap_resamples": 200, "private_cache": False, "warm_start": False,
    "max_extra_processes": 0,
}  # fmt: skip
# The paper's numbered sections, as its HTML and its PDF show them.
PAPER_SECTIONS = (
    "Abstract",
    "1 Setup",
    "2 Method",
    "3 Results",
    "4 How far to trust these numbers",
    "5 Correctness and compiler health",
    "Appendix A. Method in full",
    "Appendix B. Every measurement",
    "Appendix C. Correctness and compiler health",
    "Appendix D. Figures behind the tables",
    "Appendix E. Reproducibility",
)

DRY_RUNS: list[str] = []
PROJECT_PARTS = ["Snakefile", "rules", "scripts", "src", "config", "envs", "report", "examples"]


def tiny_workflow_config(mirror: Path) -> dict:
    with open(ROOT / "config" / "config.yaml") as handle:
        assets = yaml.safe_load(handle)["assets"]
    assets["mirror"] = str(mirror)
    return {
        "modes": ["eager", "jit", "compile-default", "compile-freezing"],
        "measure": dict(WORKFLOW_MEASURE),
        "models": {
            "resnet": {
                **TINY_MODELS["resnet"],
                "image": "dog.jpg",
                "labels": "imagenet_classes.txt",
                "modes": ["eager", "jit", "compile-default", "compile-freezing"],
            },
            "llama": {**TINY_MODELS["llama"], "modes": ["eager", "jit", "compile-default"]},
            "vit": {**TINY_MODELS["vit"], "modes": ["eager", "compile-default"], "sweep": {"batch_size": [1, 2]}},
        },
        "hardware": {"cpu": dict(CPU), "gpu": {"device": "cuda", "optional": True}},
        "mode_definitions": {"compile-freezing": {"kind": "compile", "compile": {"options": {"freezing": True}}}},
        "assets": assets,
    }


QUANTIZED_MODES = {
    "compile-int8": {"kind": "compile", "quantize": {"method": "int8_weight_only"}},
    "eager-int8": {"kind": "eager", "quantize": {"method": "int8_weight_only"}},
}


def shared_run_config(weights_folder: Path) -> dict:
    """The config of the one finished tiny run most end-to-end tests assert on (conftest's `finished`): its broken
    model's checkpoint (real, but not of a resnet18) is written into `weights_folder`."""
    import torch

    wrong = weights_folder / "other_architecture.pt"
    if not wrong.is_file():
        weights_folder.mkdir(parents=True, exist_ok=True)
        torch.save({"layer.weight": torch.zeros(2, 2)}, wrong)
    config = tiny_workflow_config(ASSETS_MIRROR)
    config["models"]["broken"] = {**TINY_MODELS["resnet"], "weights": str(wrong), "modes": ["eager", "compile-default"]}
    # One model's compiles start again, warm, and keep their TORCH_TRACE log, rendered by tlparse.
    config["models"]["resnet"]["measure"] = {"warm_start": True, "bundle_start": False, "compile_trace": True}
    # The user's own model (the example docs/experiments.md walks through) starts once on every path in
    # compile-default, from process start to first output: small, so its six fresh processes compile quickly.
    config["models"]["own"] = {
        **OWN_MODEL, "modes": ["eager", "compile-default"],
        "measure": {"starts": {"compile-default": list(START_PATHS)}, "start_repeats": 1},
    }  # fmt: skip
    config["models"]["llama"]["measure"] = {"processes": 2}
    config["models"]["llama"]["train"] = {"batch_size": 2, "modes": ["compile-default"]}  # its training step too
    config["mode_definitions"].update(QUANTIZED_MODES)
    config["modes"] += list(QUANTIZED_MODES)
    config["modes"].append("onnxruntime")
    config["models"]["resnet"]["modes"] += ["compile-int8", "onnxruntime"]  # a runtime through the whole pipeline
    config["models"]["llama"]["modes"].append("eager-int8")
    # A depth sweep, compiled whole and block by block, every process cold.
    config["mode_definitions"]["compile-regional"] = {"kind": "compile", "compile": {"regional": True}}
    config["modes"].append("compile-regional")
    config["models"]["vit-deep"] = {
        **TINY_MODELS["vit"],
        "modes": ["compile-default", "compile-regional"],  # their speedups: over eager in their own processes
        "sweep": {"num_hidden_layers": [2, 3]},
        "measure": {"processes": 2, "cold_processes": True, "private_cache": True},
    }
    return config


def copy_project(dest: Path, config: dict) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for part in PROJECT_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, dest / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, dest / part)
    write_config(dest / "config" / "config.yaml", config)
    return dest


def write_config(path: Path, config: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def snakemake(project: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "4", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    return done


def planned_outputs(project: Path, *args: str) -> set[str]:
    """Outputs of the jobs a dry run would run."""
    done = snakemake(project, "-n", *args)
    DRY_RUNS.append(done.stdout[-20000:])
    lines = re.findall(r"^\s*output: (.+)$", done.stdout + done.stderr, re.M)
    return {path for line in lines for path in line.split(", ")}


def expected_runs(config: dict, hardware=("cpu",)) -> set[str]:
    """One result per model (or sweep point) x mode x hardware."""
    models = expand_training(expand_streams(expand_sweeps(copy.deepcopy(config["models"]))))
    return {
        f"results/runs/{h}/{m}/{mode}.json"
        for h in hardware
        for m, entry in models.items()
        for mode in entry.get("modes", config["modes"])
    }


@contextlib.contextmanager
def edited(path: Path, text: str):
    """A file of a project holds `text` for the duration, then its old bytes and modification time again."""
    original, stat = path.read_bytes(), path.stat()
    path.write_text(text)
    try:
        yield path
    finally:
        path.write_bytes(original)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def planned_after_editing(project: Path, relative: str, added: str = "\n") -> set[str]:
    """What a dry run would rerun after `added` is appended to a file of the project."""
    path = project / relative
    with edited(path, path.read_text() + added):
        return planned_outputs(project)


def measured(exp: dict, **run) -> dict:
    """One experiment measured in this process, as its result: the worker's record, summarized."""
    from compilebench.analysis import summaries
    from compilebench.worker import runner

    return summaries.combine(exp, [runner.measure_process(exp, **run)])


def compilebench(*args, cwd=None) -> subprocess.CompletedProcess:
    """`python -m compilebench.cli ARGS`, as a user types it, its output captured."""
    command = [sys.executable, "-m", "compilebench.cli", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=cwd)
