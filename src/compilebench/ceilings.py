"""The limits of this device, measured on it in a few seconds: the best matmul rate and copy bandwidth."""

from __future__ import annotations

import time

import torch

from .timing import Clock

# Square sizes grow while one product takes under CALL_BUDGET_S, so a slow dtype stops early.
MATMUL_SIZES = {"cpu": (512, 1024, 2048), "cuda": (2048, 4096, 8192)}
CALL_BUDGET_S = 0.25
REPEATS = 5
COPY_BYTES = {"cpu": 256 * 2**20, "cuda": 2 * 2**30}


def matmul_tflops(device: str, dtype: torch.dtype) -> dict:
    """The best TFLOP/s of `torch.mm` over growing square sizes, with the size that reached it."""
    best = {"tflops": 0.0, "n": None}
    for n in MATMUL_SIZES[_kind(device)]:
        first_ms, fastest_ms = _matmul_ms(device, dtype, n)
        rate = 2 * n**3 / (fastest_ms / 1e3) / 1e12
        if rate > best["tflops"]:
            best = {"tflops": rate, "n": n}
        if first_ms / 1e3 > CALL_BUDGET_S:
            break
    return best


def _matmul_ms(device: str, dtype: torch.dtype, n: int) -> tuple[float, float]:
    """The first and the fastest time of an n x n product; a product slower than the budget is timed once."""
    clock = Clock(device)
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    times = [clock.time(lambda: torch.mm(a, b))[0]]
    if times[0] / 1e3 <= CALL_BUDGET_S:
        times += [clock.time(lambda: torch.mm(a, b))[0] for _ in range(REPEATS)]
    return times[0], min(times)


def copy_bandwidth_gbs(device: str) -> dict:
    """The best GB/s of copying one large buffer into another: each byte read once and written once."""
    clock = Clock(device)
    count = COPY_BYTES[_kind(device)] // 4
    source = torch.ones(count, device=device)
    target = torch.empty_like(source)
    fastest_ms = min(clock.time(lambda: target.copy_(source))[0] for _ in range(REPEATS + 1))
    return {"gbs": 2 * source.nbytes / (fastest_ms / 1e3) / 1e9, "bytes": source.nbytes}


def measure(device: str) -> dict:
    """The `ceilings` of an environment record: what this device reaches at best, and how that was measured."""
    begin = time.perf_counter()
    dtypes = ["float32", "bfloat16"] + (["float16"] if _kind(device) == "cuda" else [])
    with torch.no_grad():
        rates = {dtype: matmul_tflops(device, getattr(torch, dtype)) for dtype in dtypes}
        copy = copy_bandwidth_gbs(device)
    return {
        "tflops": {dtype: rate["tflops"] for dtype, rate in rates.items()},
        "memory_bandwidth_gbs": copy["gbs"],
        "method": (
            f"fastest of up to {REPEATS + 1} torch.mm calls of square matrices, n = "
            + ", ".join(f"{dtype} {rate['n']}" for dtype, rate in rates.items())
            + f" (sizes {', '.join(map(str, MATMUL_SIZES[_kind(device)]))} tried, 2n³ FLOPs a call); "
            f"fastest of {REPEATS + 1} copies of {copy['bytes'] // 2**20} MiB, read and written once"
        ),
        "threads": torch.get_num_threads(),
        "seconds": time.perf_counter() - begin,
    }


def _kind(device: str) -> str:
    return "cuda" if device.startswith("cuda") else "cpu"
