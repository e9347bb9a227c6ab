"""Peak memory of a run: the allocator's peaks on a GPU, peak RSS over a baseline on the CPU; and the peak a forward
pass would need, counted on the meta device before anything is allocated."""

from __future__ import annotations

import resource
import sys
import weakref

import psutil
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


def _peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def device_total_bytes(device: str) -> int | None:
    """The memory a device has: the machine's RAM for the CPU, the first GPU's for cuda (None without one)."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_properties(0).total_memory if torch.cuda.is_available() else None
    return psutil.virtual_memory().total


def device_free_bytes(device: str) -> int | None:
    """The memory free on a device now: available RAM for the CPU, the first GPU's free memory for cuda."""
    if device.startswith("cuda"):
        return torch.cuda.mem_get_info()[0] if torch.cuda.is_available() else None
    return psutil.virtual_memory().available


def process_peak_bytes(device: str) -> int:
    """This process's peak memory so far, as a user running it sees it: the allocator's peak on a GPU; on the CPU
    the peak resident set of the whole process (interpreter, torch, the model, its compile in this process)."""
    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.max_memory_allocated()
    return _peak_rss_bytes()


class PeakMemory:
    """Call `baseline()` before the model is built and `report()` after the run."""

    def __init__(self, device: str):
        self.cuda = device.startswith("cuda")
        self.rss_baseline = 0

    def baseline(self) -> None:
        self.rss_baseline = psutil.Process().memory_info().rss
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()

    def report(self) -> dict:
        record = {
            "rss_baseline_bytes": self.rss_baseline,
            "rss_peak_bytes": _peak_rss_bytes(),
            "rss_peak_over_baseline_bytes": max(0, _peak_rss_bytes() - self.rss_baseline),
        }
        if self.cuda:
            record["cuda_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
            record["cuda_peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        record["peak_bytes"] = record.get("cuda_peak_allocated_bytes", record["rss_peak_over_baseline_bytes"])
        return record


class PeakLiveBytes(TorchDispatchMode):
    """The most bytes of tensors alive at once while the code inside runs, counted op by op: each new tensor (not a
    view, not an input written in place) adds its storage's bytes until it is freed. On the meta device, where
    nothing is allocated, it tells what a forward pass would need before it runs."""

    def __init__(self, *alive: torch.Tensor):
        super().__init__()
        self.live = sum(t.untyped_storage().nbytes() for t in alive)
        self.peak = self.live

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        given = {id(t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        for tensor in tree_leaves(out):
            if isinstance(tensor, torch.Tensor) and id(tensor) not in given and not tensor._is_view():
                size = tensor.untyped_storage().nbytes()
                self.live += size
                self.peak = max(self.peak, self.live)
                weakref.finalize(tensor, self._freed, size)
        return out

    def _freed(self, size: int) -> None:
        self.live -= size
