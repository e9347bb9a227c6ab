"""Whether this machine has a GPU for an optional GPU entry, decided without importing torch in the Snakemake
process: a machine without a GPU's device files has none; one with them asks torch in a child process."""

from __future__ import annotations

import functools
import glob
import subprocess
import sys

# Device files a CUDA (NVIDIA), ROCm (AMD) or WSL GPU driver creates; torch sees no GPU where none exists.
GPU_DEVICE_FILES = ("/dev/nvidia[0-9]*", "/dev/kfd", "/dev/dxg")
ASK_TORCH = "import torch; print(torch.cuda.is_available())"


def gpu_device_files(patterns: tuple[str, ...] = GPU_DEVICE_FILES) -> list[str]:
    return sorted(path for pattern in patterns for path in glob.glob(pattern))


@functools.cache
def gpu_visible(python: str = sys.executable) -> bool:
    """Whether torch under `python` sees a CUDA or ROCm GPU here; asked only where a GPU driver's device files
    exist, in a child process, so that the Snakemake process never loads torch."""
    if not gpu_device_files():
        return False
    done = subprocess.run([python, "-c", ASK_TORCH], capture_output=True, text=True, timeout=300)
    return done.returncode == 0 and done.stdout.strip().endswith("True")
