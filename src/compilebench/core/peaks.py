"""The limits of known devices, to say how close a mode gets to them.

Figures are the vendors' datasheet peaks for dense arithmetic (no sparsity),
in GB/s and TFLOP/s. A hardware entry's `peak` in config overrides them.
CPU FLOP rates are per core (scaled by the threads a run used); CPU
bandwidth is the whole socket's.
"""

from __future__ import annotations

import re

KNOWN_DEVICES: list[dict] = [
    # NVIDIA (datasheets; Hopper's bf16/fp16 are tensor-core dense rates)
    {
        "match": r"H200 NVL",
        "name": "NVIDIA H200 NVL",
        "memory_bandwidth_gbs": 4800,
        "tflops": {"float32": 60, "bfloat16": 835, "float16": 835},
    },
    {
        "match": r"H200",
        "name": "NVIDIA H200 SXM",
        "memory_bandwidth_gbs": 4800,
        "tflops": {"float32": 67, "bfloat16": 989, "float16": 989},
    },
    {
        "match": r"H100 NVL",
        "name": "NVIDIA H100 NVL",
        "memory_bandwidth_gbs": 3900,
        "tflops": {"float32": 60, "bfloat16": 835, "float16": 835},
    },
    {
        "match": r"H100 PCIe",
        "name": "NVIDIA H100 PCIe",
        "memory_bandwidth_gbs": 2000,
        "tflops": {"float32": 51, "bfloat16": 756, "float16": 756},
    },
    {
        "match": r"H100",
        "name": "NVIDIA H100 SXM",
        "memory_bandwidth_gbs": 3350,
        "tflops": {"float32": 67, "bfloat16": 989, "float16": 989},
    },
    {
        "match": r"A100.*80GB.*PCIe|A100 80GB PCIe",
        "name": "NVIDIA A100 80GB PCIe",
        "memory_bandwidth_gbs": 1935,
        "tflops": {"float32": 19.5, "bfloat16": 312, "float16": 312},
    },
    {
        "match": r"A100.*80GB",
        "name": "NVIDIA A100 80GB SXM",
        "memory_bandwidth_gbs": 2039,
        "tflops": {"float32": 19.5, "bfloat16": 312, "float16": 312},
    },
    {
        "match": r"A100",
        "name": "NVIDIA A100 40GB",
        "memory_bandwidth_gbs": 1555,
        "tflops": {"float32": 19.5, "bfloat16": 312, "float16": 312},
    },
    {
        "match": r"\bL4\b",
        "name": "NVIDIA L4",
        "memory_bandwidth_gbs": 300,
        "tflops": {"float32": 30.3, "bfloat16": 121, "float16": 121},
    },
    # AMD Instinct (datasheets; float32 is the matrix rate)
    {
        "match": r"MI300X",
        "name": "AMD Instinct MI300X",
        "memory_bandwidth_gbs": 5300,
        "tflops": {"float32": 163.4, "bfloat16": 1307.4, "float16": 1307.4},
    },
    {
        "match": r"MI250X",
        "name": "AMD Instinct MI250X",
        "memory_bandwidth_gbs": 3276.8,
        "tflops": {"float32": 95.7, "bfloat16": 383, "float16": 383},
    },
    {
        "match": r"MI250",
        "name": "AMD Instinct MI250",
        "memory_bandwidth_gbs": 3276.8,
        "tflops": {"float32": 90.5, "bfloat16": 362.1, "float16": 362.1},
    },
    {
        "match": r"MI210",
        "name": "AMD Instinct MI210",
        "memory_bandwidth_gbs": 1638.4,
        "tflops": {"float32": 45.3, "bfloat16": 181, "float16": 181},
    },
    # AWS Graviton (Arm Neoverse cores): socket DRAM bandwidth; float32 per core from FMA width x clock
    {
        "match": r"Neoverse-V2",
        "name": "AWS Graviton4 (Neoverse V2)",
        "memory_bandwidth_gbs": 537.6,
        "per_core_tflops": {"float32": 0.0896},
    },
    {
        "match": r"Neoverse-V1",
        "name": "AWS Graviton3 (Neoverse V1)",
        "memory_bandwidth_gbs": 307.2,
        "per_core_tflops": {"float32": 0.0832},
    },
    {
        "match": r"Neoverse-N1",
        "name": "AWS Graviton2 (Neoverse N1)",
        "memory_bandwidth_gbs": 204.8,
        "per_core_tflops": {"float32": 0.040},
    },
]


def lookup(device_name: str | None, override: dict | None = None, threads: int | None = None) -> dict | None:
    """The peaks for a device: the config's `peak` where given, else the table's, else None (raw figures only)."""
    if override:
        return {
            "name": override.get("name", f"{device_name} (from config)"),
            "source": "config",
            "memory_bandwidth_gbs": override.get("memory_bandwidth_gbs"),
            "tflops": dict(override.get("tflops", {})),
        }
    for entry in KNOWN_DEVICES:
        if isinstance(device_name, str) and re.search(entry["match"], device_name):  # NaN where a run lacks it
            tflops = dict(entry.get("tflops", {}))
            if "per_core_tflops" in entry and threads:
                tflops = {dtype: rate * threads for dtype, rate in entry["per_core_tflops"].items()}
            return {
                "name": entry["name"],
                "source": "datasheet",
                "memory_bandwidth_gbs": entry["memory_bandwidth_gbs"],
                "tflops": tflops,
            }
    return None


# Float32 lanes of a core's widest FMA, by the instruction set its flags name (widest first).
FP32_LANES = (("avx512f", 16), ("avx2", 8), ("asimd", 4))
# FMA pipes per core where the core's name says which core it is (vendors' optimization manuals); else unknown.
FMA_UNITS = (
    (r"Sapphire Rapids|Emerald Rapids|Granite Rapids|Xeon.*Platinum|Xeon.*Gold 6", 2),
    (r"EPYC|Ryzen", 2),
    (r"Neoverse-V1|Neoverse-V2|Neoverse-N1|Neoverse-N2", 2),
)


def computed_cpu_peak(model: str | None, flags: list[str], max_mhz: float | None) -> dict:
    """A float32 peak per core from the CPU's own description: clock x float32 lanes x FMA units x 2, each factor
    with its source; None where a factor is unknown, and which."""
    lanes = next(((flag, n) for flag, n in FP32_LANES if flag in flags), None)
    units = next((n for pattern, n in FMA_UNITS if isinstance(model, str) and re.search(pattern, model)), None)
    factors = {
        "clock_ghz": max_mhz / 1e3 if max_mhz else None,
        "clock_source": "the CPU's maximum frequency (cpufreq)" if max_mhz else None,
        "fp32_lanes": lanes[1] if lanes else None,
        "lanes_source": f"the {lanes[0]} flag" if lanes else None,
        "fma_units": units,
        "fma_source": f"the core named by {model!r}" if units else None,
    }
    unknown = [name for name in ("clock_ghz", "fp32_lanes", "fma_units") if factors[name] is None]
    value = None if unknown else factors["clock_ghz"] * 1e9 * factors["fp32_lanes"] * units * 2 / 1e12
    return {
        "per_core_tflops": {"float32": value} if value else None,
        "formula": "clock x float32 lanes x FMA units x 2 FLOPs, per core",
        "source": None
        if unknown
        else (
            f"computed: {factors['clock_ghz']:.2f} GHz x {factors['fp32_lanes']} lanes x {units} FMA units x 2, "
            "per core"
        ),
        "factors": factors,
        "unknown": unknown,
    }


def computed_lookup(device_name: str | None, per_core_tflops: float, source: str, threads: int | None) -> dict | None:
    """The computed float32 peak of a CPU the table does not list, scaled by the threads a run used, as `lookup`
    gives a peak."""
    if not threads:
        return None
    return {
        "name": f"{device_name} (computed)",
        "source": f"{source}, x {threads} threads",
        "memory_bandwidth_gbs": None,
        "tflops": {"float32": per_core_tflops * threads},
    }
