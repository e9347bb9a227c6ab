"""The limits of this device, measured on it in a few seconds: the best rate over several kernel families (matrix
products at growing sizes, a linear layer, a convolution, each run long enough to settle), and copy bandwidth."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F

from .timing import Clock

# Square sizes grow while one product takes under CALL_BUDGET_S, so a slow dtype stops early.
MATMUL_SIZES = {"cpu": (512, 1024, 2048), "cuda": (2048, 4096, 8192)}
CALL_BUDGET_S = 0.25
# Each kernel runs this long before its fastest call is taken: the clock and the thread pool settle.
SETTLE_S = {"cpu": 0.3, "cuda": 0.2}
MIN_CALLS = 6
COPY_BYTES = {"cpu": 256 * 2**20, "cuda": 2 * 2**30}
# A convolution as a ResNet's middle stages run it (batch, channels, height and width, 3x3, stride 1, padding 1).
CONV_SHAPES = {"cpu": (4, 256, 28, 28), "cuda": (32, 256, 56, 56)}


def _settled_fastest_ms(clock: Clock, fn: Callable[[], object], budget_s: float, *, once_if_slow: bool = True):
    """The fastest call of `fn` over at least MIN_CALLS calls and `budget_s` seconds of calling it, and how many
    calls that took; with `once_if_slow`, a first call slower than CALL_BUDGET_S is the only one."""
    first = clock.time(fn)[0]
    if once_if_slow and first / 1e3 > CALL_BUDGET_S:
        return first, 1
    times, begin = [first], time.perf_counter()
    while len(times) < MIN_CALLS or time.perf_counter() - begin < budget_s:
        times.append(clock.time(fn)[0])
    return min(times), len(times)


def _kernels(device: str, dtype: torch.dtype, n: int) -> dict[str, tuple[Callable[[], object], float]]:
    """Each kernel family at size n, with the FLOPs of one call."""
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    batch, channels, height, width = CONV_SHAPES[_kind(device)]
    image = torch.randn(batch, channels, height, width, device=device).to(dtype)
    kernel = torch.randn(channels, channels, 3, 3, device=device).to(dtype)
    conv_flops = 2.0 * batch * channels * height * width * channels * 9
    return {
        f"torch.mm {n}x{n}": (lambda: torch.mm(a, b), 2.0 * n**3),
        f"linear {n}x{n}": (lambda: F.linear(a, b), 2.0 * n**3),
        f"conv2d {channels}x{channels}x3x3 on {batch}x{height}x{width}": (
            lambda: F.conv2d(image, kernel, padding=1),
            conv_flops,
        ),
    }


def best_tflops(device: str, dtype: torch.dtype) -> dict:
    """The best TFLOP/s of matrix products over growing square sizes, then of a linear layer and a convolution at
    the size that went furthest, each settled; with the kernel that reached it."""
    clock, kind = Clock(device), _kind(device)
    best = {"tflops": 0.0, "kernel": None}
    size = MATMUL_SIZES[kind][0]
    for n in MATMUL_SIZES[kind]:
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        first_ms = clock.time(partial(torch.mm, a, b))[0]
        size = n
        if first_ms / 1e3 > CALL_BUDGET_S:
            break
    for name, (fn, flops) in _kernels(device, dtype, size).items():
        fastest_ms, _ = _settled_fastest_ms(clock, fn, SETTLE_S[kind])
        rate = flops / (fastest_ms / 1e3) / 1e12
        if rate > best["tflops"]:
            best = {"tflops": rate, "kernel": name}
    return best


def copy_bandwidth_gbs(device: str) -> dict:
    """The best GB/s of copying one large buffer into another: each byte read once and written once."""
    clock = Clock(device)
    count = COPY_BYTES[_kind(device)] // 4
    source = torch.ones(count, device=device)
    target = torch.empty_like(source)
    # The first copy also faults the target's pages in: it runs, and the settled calls follow.
    fastest_ms, calls = _settled_fastest_ms(
        clock, lambda: target.copy_(source), SETTLE_S[_kind(device)], once_if_slow=False
    )
    return {"gbs": 2 * source.nbytes / (fastest_ms / 1e3) / 1e9, "bytes": source.nbytes, "calls": calls}


def measure(device: str) -> dict:
    """The `ceilings` of an environment record: what this device reaches at best, how, and with which kernel."""
    begin = time.perf_counter()
    device_type = _kind(device)
    dtypes = ["float32", "bfloat16"] + (["float16"] if device_type == "cuda" else [])
    with torch.no_grad():
        rates = {dtype: best_tflops(device, getattr(torch, dtype)) for dtype in dtypes}
        copy = copy_bandwidth_gbs(device)
    return {
        "tflops": {dtype: rate["tflops"] for dtype, rate in rates.items()},
        "best_kernel": {dtype: rate["kernel"] for dtype, rate in rates.items()},
        "memory_bandwidth_gbs": copy["gbs"],
        "method": (
            f"the fastest call of each kernel family after {SETTLE_S[device_type]} s of calling it (torch.mm at the "
            f"largest of {', '.join(map(str, MATMUL_SIZES[device_type]))} whose product takes under {CALL_BUDGET_S} s, "
            "a linear layer of that size, a 3x3 convolution); the best of them: "
            + ", ".join(f"{dtype} {rate['kernel']}" for dtype, rate in rates.items())
            + f"; the fastest copy of {copy['bytes'] // 2**20} MiB over {copy['calls']} calls, read and written once"
        ),
        "threads": torch.get_num_threads(),
        "seconds": time.perf_counter() - begin,
    }


def _kind(device: str) -> str:
    return "cuda" if device.startswith("cuda") else "cpu"
