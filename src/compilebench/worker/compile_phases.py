"""Where a compile's time goes, read from torch's own compile metrics rather than timed by hand.

Torch records, per compiled frame, cumulative times that nest: Dynamo's (tracing, guards) holds
AOTAutograd's, which holds inductor's, which holds its code generation. Each phase here is one level
less the next, so the phases never overlap; the C++ or Triton compilation inside code generation and
the autotuning inside lowering are split out where torch times them.
"""

from __future__ import annotations

import torch


def start() -> None:
    """Forget earlier compiles' metrics, so that what `read` finds is this process's compile alone."""
    utils = torch._dynamo.utils
    utils.clear_compilation_metrics()
    utils.compilation_time_metrics.clear()


def read() -> dict[str, float] | None:
    """Seconds per phase (`records.COMPILE_PHASES`) over every frame compiled since `start`; None where
    nothing was compiled or torch keeps no such metrics."""
    utils = torch._dynamo.utils
    metrics = utils.get_compilation_metrics()
    frames = [m for m in metrics if not getattr(m, "is_runtime", False)]
    if not frames:
        return None

    def total(field: str, among=frames) -> float:
        return sum(getattr(m, field, None) or 0 for m in among) / 1e6

    dynamo, aot, inductor, codegen = (
        total(f"{name}_cumulative_compile_time_us")
        for name in ("dynamo", "aot_autograd", "inductor", "inductor_code_gen")
    )
    autotune = min(inductor - codegen, total("compile_time_autotune_time_us"))
    at_first_call = total("runtime_triton_autotune_time_us", metrics)  # Triton's, on the first call of a kernel
    compiled_files = sum(utils.compilation_time_metrics.get("compile_file", []))  # C++ kernels, compiled in-process
    native = min(codegen, max(compiled_files, total("triton_compile_time_us")))
    # A training step's backward graph is compiled at its first backward, outside AOTAutograd's timer: inductor's
    # time then holds it, and AOTAutograd's own is what remains beside the forward graph's.
    outside = backward_compile_s() if inductor > aot else 0.0
    return {
        "dynamo": max(dynamo - aot, 0.0),
        "aot_autograd": max(aot - (inductor - outside), 0.0),
        "inductor_lowering": inductor - codegen - autotune,
        "autotune": autotune + at_first_call,
        "codegen": codegen - native,
        "cpp_triton_compile": native,
    }


# Inductor's compilers of AOTAutograd's forward and backward graphs, as torch's compile-time metrics name them.
PASS_COMPILERS = {"forward": "fw_compiler_base", "backward": "bw_compiler"}


def backward_compile_s() -> float:
    return (graphs_by_pass() or {}).get("backward_compile_s", 0.0)


def graphs_by_pass() -> dict[str, float] | None:
    """Forward and backward graphs inductor compiled since `start`, counted apart with the seconds each pass's
    compiler took (`forward_graphs`, `forward_compile_s`, ...); None where torch's metrics name neither (a graph
    loaded from a cache compiles nothing)."""
    timings = torch._dynamo.utils.compilation_time_metrics
    found = {}
    for name, compiler in PASS_COMPILERS.items():
        seconds = [t for key, values in timings.items() if key.endswith(compiler) for t in values]
        found[f"{name}_graphs"], found[f"{name}_compile_s"] = len(seconds), sum(seconds)
    return found if found["forward_graphs"] or found["backward_graphs"] else None


def cache_hits() -> dict[str, int]:
    """How many compiled graphs came from inductor's FX graph cache and AOTAutograd's cache since `start`."""
    frames = torch._dynamo.utils.get_compilation_metrics()
    return {
        cache: sum(getattr(m, f"{cache}_local_cache_hit_count", None) or 0 for m in frames)
        for cache in ("inductor_fx", "aotautograd")
    }
