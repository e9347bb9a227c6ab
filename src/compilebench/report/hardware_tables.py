"""The hardware tables: how close each run came to its device's limits, and latency and cost per hardware entry."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis.comparisons import baseline_of
from ..core.peaks import computed_lookup, lookup
from .tables import inference_only


def limits(runs: pd.DataFrame, peak_overrides: dict[str, dict | None]) -> pd.DataFrame:
    """How close each run came to its device's limits: the ceiling its environment job measured on the device
    (`fraction_of_measured`) and, where known, the datasheet's or config's peak (`fraction_of_peak`).

    Text generation reads every weight once per decode step, so its limit is memory bandwidth:
    parameter bytes x decode steps per second. Other models report FLOP/s against FLOP/s
    in the dtype the arithmetic ran in. A training step has neither figure: it is left out.
    """
    rows = []
    runs = inference_only(runs)
    for run in runs[runs["status"] == "ok"].to_dict("records"):
        threads = int_or_none(run.get("threads"))
        peak = lookup(run.get("device_name"), peak_overrides.get(run["hardware"]), threads)
        per_core = run.get("computed_peak_per_core_tflops_float32")
        if peak is None and per_core is not None and not pd.isna(per_core):
            peak = computed_lookup(run.get("device_name"), per_core, run["computed_peak_source"], threads)
        row = {k: run.get(k) for k in ("hardware", "model", "mode", "device_name", "compute_dtype")}
        bound = None
        if run["task"] == "text-generation":
            steps_per_s = (run.get("decode_tokens_per_s") or float("nan")) / run["batch_size"]
            achieved, limit = run["parameter_bytes"] * steps_per_s / 1e9, (peak or {}).get("memory_bandwidth_gbs")
            measured = run.get("measured_memory_bandwidth_gbs")
            row.update(metric="memory bandwidth", unit="GB/s")
            if in_cache(run):  # its weights stay in the last-level cache: DRAM does not bound it
                limit = measured = None
                weights, cache = run["parameter_bytes"] / 2**20, run["llc_bytes"] / 2**20
                bound = f"in cache ({weights:.1f} MiB of weights, {cache:.1f} MiB cache): no DRAM bound"
        else:
            achieved = (
                run["flops_per_call"] / (run["median_ms"] / 1e3) / 1e12 if run.get("flops_per_call") else float("nan")
            )
            dtype = run.get("compute_dtype") or "float32"
            limit = (peak or {}).get("tflops", {}).get(dtype)
            measured = run.get(f"measured_tflops_{dtype}")
            row.update(metric="compute", unit="TFLOP/s")
        measured = None if measured is None or pd.isna(measured) else measured
        row.update(
            achieved=achieved,
            measured=measured,
            fraction_of_measured=achieved / measured if measured else None,
            above_measured=bool(measured) and achieved > measured,  # the ceiling does not bound this run
            peak=limit,
            fraction_of_peak=achieved / limit if limit else None,
            above_peak=bool(limit) and achieved > limit,
            peak_device=(peak or {}).get("name") if limit else None,
            peak_source=(peak or {}).get("source") if limit else None,
            bound=bound,
        )
        rows.append(row)
    columns = [
        "hardware",
        "model",
        "mode",
        "device_name",
        "compute_dtype",
        "metric",
        "unit",
        "achieved",
        "measured",
        "fraction_of_measured",
        "above_measured",
        "peak",
        "fraction_of_peak",
        "above_peak",
        "peak_device",
        "peak_source",
        "bound",
    ]
    return pd.DataFrame(rows, columns=columns)


def in_cache(run: dict) -> bool:
    """Whether a run's weights fit in the CPU's last-level cache, so that reading them is no DRAM traffic."""
    cache, weights = run.get("llc_bytes"), run.get("parameter_bytes")
    return not (pd.isna(cache) or pd.isna(weights)) and run.get("device") == "cpu" and weights <= cache


def unbacked_fast_math(fpmath_mode, bf16_native, device) -> bool:
    """oneDNN's BF16 fast math asked for on a CPU without native bf16: its numbers are not a fast-math result."""
    return isinstance(fpmath_mode, str) and fpmath_mode.upper() == "BF16" and bf16_native is False and device == "cpu"


def hardware_costs(
    runs: pd.DataFrame, prices: dict[str, float], baseline: str | None, calls_per_start: int = 100_000
) -> pd.DataFrame:
    """Per run: p90 latency relative to the baseline hardware's same model and mode, and where the hardware
    has a price, the cost of a million inferences (price per hour over inferences per hour at the median),
    and that cost with each process start's compile (cold, or warm from the caches) spread over
    `calls_per_start` calls."""
    ok = runs[runs["status"] == "ok"]
    baseline = baseline_of(ok["hardware"], baseline)
    base = ok[ok["hardware"] == baseline].set_index(["model", "mode"])["p90_ms"]
    frame = ok[["hardware", "model", "mode", "batch_size", "median_ms", "p90_ms"]].copy()
    frame["hardware_label"] = _hardware_labels(ok)
    frame["baseline_hardware"] = baseline
    frame["relative_p90"] = [row.p90_ms / base.get((row.model, row.mode), np.nan) for row in frame.itertuples()]
    frame["price_per_hour"] = frame["hardware"].map(prices)
    per_second = frame["price_per_hour"] / 3600
    frame["cost_per_million"] = per_second * (frame["median_ms"] / 1e3) / frame["batch_size"] * 1e6
    calls = 1e6 / frame["batch_size"]
    for column, start in (
        ("cost_per_million_cold_start", "compile_s"),
        ("cost_per_million_warm_start", "compile_warm_s"),
    ):
        compile_s = ok[start].where(ok["mode"] != "eager", ok["first_call_s"]).fillna(0)
        frame[column] = per_second * calls * (frame["median_ms"] / 1e3 + compile_s / calls_per_start)
    frame["calls_per_start"] = calls_per_start
    return frame.reset_index(drop=True)


def _hardware_labels(runs: pd.DataFrame) -> pd.Series:
    """A hardware entry that asked for bf16 fast math on a CPU without native bf16 says so in its label."""
    unbacked = [unbacked_fast_math(*row) for row in zip(runs["fpmath_mode"], runs["bf16_native"], runs["device"])]
    return runs["hardware"].where(
        ~pd.Series(unbacked, index=runs.index, dtype=bool), runs["hardware"] + " (bf16 requested, not native)"
    )


def int_or_none(value) -> int | None:
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else int(value)
