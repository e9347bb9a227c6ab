"""What every kind's worker implementation shares.

A kind's implementation (`worker/kinds/NAME.py`, beside its declaration `core/kinds/NAME.py`) is a module with:

- `wrap(module, settings, inputs, *, device, dtype, workdir, names) -> (call, preparation)`: the callable that runs
  the model as the mode says, and the seconds each step of preparing it took (required);
- `check(name, settings, record) -> bool`: refuse a setting the installed torch does not know (a `UserError`
  naming the config key), note what it found in `record`; False where the mode's other checks cannot run (optional);
- `save_package(module, inputs, settings, device, dtype, path) -> dict` and `load_package(settings, device, path,
  inputs) -> call`: its package start, where the kind has one (optional);
- `save_precompiled` and `load_precompiled`: its precompiled start, where it has one (optional);
- `explain_failure(settings, message) -> str`: a failed measurement's message, with what it means for the user
  first (optional).
"""

from __future__ import annotations

import contextlib

import torch

from ..models import DTYPES


def precision(device: str, dtype: str) -> contextlib.AbstractContextManager:
    """Reduced precision through autocast, as the ROCm study ran it; float32 runs as is."""
    if dtype == "float32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device, dtype=DTYPES[dtype])


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
