"""The environment record of a hardware entry: what produced the numbers."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import psutil
import torch

from ..core import peaks
from ..core.errors import UserError

KERNEL_ENV_VARS = (
    "DNNL_DEFAULT_FPMATH_MODE",
    "LRU_CACHE_CAPACITY",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
)
PACKAGES = ("compilebench", "torch", "torchvision", "transformers", "numpy", "scipy", "pandas", "snakemake", "triton",
            "onnxruntime", "openvino", "onnx", "onnxscript")  # fmt: skip
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16", "bf16", "sve_bf16")
# /proc/cpuinfo on Arm names no model, only the core's part number.
ARM_CORES = {
    "0xd0c": "Arm Neoverse-N1",
    "0xd40": "Arm Neoverse-V1",
    "0xd4f": "Arm Neoverse-V2",
    "0xd49": "Arm Neoverse-N2",
}


class HardwareError(UserError):
    """A hardware entry whose device is not there."""


def cpu_info() -> dict:
    """CPU model and the flags that decide whether bf16 fast math is native."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    name = re.search(r"^(?:model name|Model|Hardware)\s*:\s*(.+)$", text, re.M)
    flags_line = re.search(r"^(?:flags|Features)\s*:\s*(.+)$", text, re.M)
    flags = set(flags_line.group(1).split()) if flags_line else set()
    part = re.search(r"^CPU part\s*:\s*(0x[0-9a-f]+)$", text, re.M)
    arm_core = ARM_CORES.get(part.group(1)) if part else None
    model = name.group(1).strip() if name else arm_core or platform.processor() or platform.machine()
    simd = sorted(flags & {flag for flag, _ in peaks.FP32_LANES})
    return {
        "model": model,
        "max_mhz": max_mhz(),
        "simd_flags": simd,
        "computed_peak": peaks.computed_cpu_peak(arm_core or model, simd, max_mhz()),
        "arch": platform.machine(),
        "logical_cores": os.cpu_count(),
        "llc_bytes": last_level_cache_bytes(),
        "bf16_native": bool(flags & set(BF16_CPU_FLAGS)),
        "amx": "amx_tile" in flags,
        "bf16_flags": sorted(flags & set(BF16_CPU_FLAGS)),
        "capability": torch.backends.cpu.get_cpu_capability(),
    }


def last_level_cache_bytes() -> int | None:
    """The largest CPU cache one core reaches (the last level, L3 on most servers), from the kernel's description
    of cpu0's caches; None where it gives none."""
    sizes = {}
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level = int((index / "level").read_text())
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(size[-1:], 1)
        digits = size.rstrip("KMG")
        if digits.isdigit():
            sizes[level] = max(sizes.get(level, 0), int(digits) * scale)
    return sizes[max(sizes)] if sizes else None


def max_mhz() -> float | None:
    """The CPU's maximum frequency where the kernel exposes it (cpufreq); a VM often does not."""
    path = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    try:
        return int(path.read_text()) / 1e3
    except (OSError, ValueError):
        return None


def accelerator_info() -> dict | None:
    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    return {
        "runtime": "hip" if torch.version.hip else "cuda",
        "runtime_version": torch.version.hip or torch.version.cuda,
        "name": props.name,
        "count": torch.cuda.device_count(),
        "memory_bytes": props.total_memory,
        "capability": f"{props.major}.{props.minor}",
    }


def device_present(device: str) -> bool:
    return device != "cuda" or torch.cuda.is_available()


def check_device(hardware: str, device: str) -> None:
    """Fail, naming the entry and what was looked for, when the device is absent."""
    if not device_present(device):
        raise HardwareError(
            f"Hardware entry `hardware.{hardware}` asks for device `cuda`, but torch {torch.__version__} "
            "sees no CUDA or ROCm GPU here (torch.cuda.is_available() is False): run on a machine with "
            f"one, mark the entry `optional: true`, or remove it."
        )


# The oneDNN fast-math modes its environment variable takes (case-insensitive).
FPMATH_MODES = ("STRICT", "BF16", "F16", "TF32", "ANY")


def check_settings(hardware: str, entry: dict) -> None:
    """The entry's threads and the env values torch parses hold in this interpreter as configured: refused, with
    both values named, where torch runs otherwise or the node has fewer logical cores."""
    key = f"hardware.{hardware}"
    configured = {k: str(v) for k, v in entry.get("env", {}).items()}
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        value = configured.get(name)
        if value is not None and not (value.strip().isdigit() and int(value) >= 1):
            raise HardwareError(
                f"Config key `{key}.env.{name}` is {value!r}, which torch cannot read as a thread count (it would "
                f"run {torch.get_num_threads()} threads instead, silently): expected a whole number >= 1."
            )
    fpmath = configured.get("DNNL_DEFAULT_FPMATH_MODE")
    if fpmath is not None and fpmath.upper() not in FPMATH_MODES:
        raise HardwareError(
            f"Config key `{key}.env.DNNL_DEFAULT_FPMATH_MODE` is {fpmath!r}, which oneDNN does not know (it would "
            f"run in its default, strict, mode): expected one of {', '.join(FPMATH_MODES)}."
        )
    wanted_key, wanted = (
        (f"{key}.threads", entry["threads"]) if entry.get("threads")
        else (f"{key}.env.OMP_NUM_THREADS", int(configured["OMP_NUM_THREADS"])) if "OMP_NUM_THREADS" in configured
        else (None, None)
    )  # fmt: skip
    if wanted is None:
        return
    cores = os.cpu_count() or 1
    if wanted > cores:
        raise HardwareError(
            f"Config key `{wanted_key}` is {wanted}, more threads than the {cores} logical cores of host "
            f"{platform.node()}: expected at most {cores} (threads beyond the cores time each other, not the model)."
        )
    if torch.get_num_threads() != wanted:
        raise HardwareError(
            f"Config key `{wanted_key}` is {wanted}, but torch {torch.__version__} runs {torch.get_num_threads()} "
            f"intra-op threads here (torch.get_num_threads()): the result would differ from what the config says."
        )


def validate(hardware: str, device: str) -> None:
    """torch >= 2.0, the device present, and a tiny torch.compile that gives the right answer there."""
    major = int(torch.__version__.split(".")[0])
    if major < 2:
        raise HardwareError(
            f"Hardware entry `hardware.{hardware}` runs torch {torch.__version__}: expected torch >= 2.0."
        )
    check_device(hardware, device)
    x = torch.arange(8.0, device=device)
    compiled = torch.compile(lambda t: torch.sin(t) * 2 + 1, backend="inductor")
    if not torch.allclose(compiled(x), torch.sin(x) * 2 + 1, atol=1e-5):
        raise HardwareError(
            f"Hardware entry `hardware.{hardware}`: a tiny torch.compile gave a wrong answer on {device}."
        )


def code_revision() -> dict:
    root = Path(__file__).resolve().parents[3]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
        ).stdout
        return {"commit": commit, "dirty": bool(dirty.strip())}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}


def package_versions() -> dict:
    """Installed versions; compilebench's own is the checkout's, which a platform's venv imports uninstalled."""
    from .. import __version__

    return {"compilebench": __version__, **{name: installed_version(name) for name in PACKAGES[1:]}}


def installed_version(name: str) -> str | None:
    """A package's installed version, read without importing it; None where it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def slurm_info() -> dict | None:
    if "SLURM_JOB_ID" not in os.environ:
        return None
    return {key: os.environ.get(f"SLURM_{key.upper()}") for key in ("job_id", "job_partition", "job_nodelist")}


def record(hardware: str, entry: dict) -> dict:
    """Everything about this machine that can change a measurement."""
    device = entry["device"]
    return {
        "schema": 1,
        "hardware": hardware,
        "device": device,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "python_env": entry.get("python_env"),
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "memory_bytes": psutil.virtual_memory().total,
        "hostname": platform.node(),
        "cpu": cpu_info(),
        "accelerator": accelerator_info(),
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "configured_env": {k: str(v) for k, v in entry.get("env", {}).items()},
        "kernel_env": {k: os.environ.get(k) for k in KERNEL_ENV_VARS},
        "inductor_env": {k: v for k, v in os.environ.items() if k.startswith("TORCHINDUCTOR_")},
        "packages": package_versions(),
        "code": code_revision(),
        "slurm": slurm_info(),
    }


def summary(full: dict) -> dict:
    """What a result file carries inline; the full record is a file beside it."""
    accelerator = full.get("accelerator") or {}
    on_gpu = full["device"] == "cuda" and accelerator
    fpmath = (full.get("kernel_env") or {}).get("DNNL_DEFAULT_FPMATH_MODE")  # as torch loaded with it
    return {
        "hardware": full["hardware"],
        "torch": full["torch"],
        "device_name": accelerator["name"] if on_gpu else full["cpu"]["model"],
        "threads": full["threads"],
        "bf16_native": full["cpu"]["bf16_native"],
        "fpmath_mode": fpmath,
        "code": full["code"]["commit"],
        "ceilings": full.get("ceilings"),
        "computed_peak": (full.get("cpu") or {}).get("computed_peak"),
        "llc_bytes": None if on_gpu else (full.get("cpu") or {}).get("llc_bytes"),
    }
