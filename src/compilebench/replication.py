"""An experiment measured in several fresh processes: each process's own record, and the result they make together.

The first process is the cold start. The others start from the compile caches it wrote, so their first calls are
warm starts (`compile_warm_samples_s`). Every process takes its own interleaved samples; the result keeps them per
process under `processes`, and pools them in the fields a one-process result has, with each interval over
processes drawn by the two-level bootstrap (`comparisons`).
"""

from __future__ import annotations

import statistics

from . import comparisons, stats

SAMPLE_KEYS = ("latency_ms", "eager_latency_ms")


def process_record(record: dict) -> dict:
    """What one measuring process keeps of its own: its samples and block lengths, its medians, its ratios, its
    first call, its steady state and the machine's load while it measured."""
    entry = {key: record[key] for key in SAMPLE_KEYS if key in record}
    noise, speedup, steady = record.get("noise"), record.get("speedup"), record.get("steady_state")
    if noise:
        entry["twin_latency_ms"] = noise["twin_latency_ms"]
        entry["noise"] = {"ratio": noise["ratio"], "ci95": noise["ci95"]}
    if speedup:
        entry["speedup"] = {"value": speedup["value"], "ci95": speedup["ci95"]}
    if steady:
        entry["steady_state"] = steady
    return {
        **entry,
        "interleave": record["interleave"],
        "median_ms": record["stats"]["median_ms"],
        "first_call_s": record["preparation"]["first_call_s"],
        "compile_s": record["compile_s"],
        "correct": (record.get("correctness") or {}).get("passed"),
        "machine": record.get("machine"),
    }


def combine(exp: dict, results: list[dict], notes: list[str]) -> dict:
    """One result from the ok results of an experiment's processes, the first (cold) one's fields kept where they
    describe one start (compile, correctness, memory, profile, tokens)."""
    first = results[0]
    processes = [p for result in results for p in result["processes"]]
    combined = {**first, "processes": processes, "processes_notes": notes}
    measure = first["measure"]
    latency_ms = [x for p in processes for x in p["latency_ms"]]
    combined["latency_ms"] = latency_ms
    combined["stats"] = stats.summarize(latency_ms, resamples=measure["bootstrap_resamples"], seed=exp["seed"])
    combined["throughput"] = {
        **first["throughput"],
        "samples_per_s": first["batch_size"] / (combined["stats"]["median_ms"] / 1e3),
    }
    combined.update(interleaved_fields(processes, measure, exp["seed"], eager=bool(first.get("noise"))))
    warm = warm_start_samples(results, exp["mode_settings"]["kind"])
    if warm:
        combined["compile_warm_samples_s"] = warm
        combined["compile_warm_s"] = statistics.median(warm)
    if exp["mode_settings"]["kind"] == "compile" and len(results) > 1:
        second, earlier = results[1], first.get("warm_starts") or {}
        combined["warm_starts"] = {
            "warm": {
                "first_call_s": second["preparation"]["first_call_s"],
                "compile_phases": second.get("compile_phases"),
                "settings_effect": second.get("settings_effect"),
                "cache_hits": None,
            },
            "bundle": earlier.get("bundle"),
            "notes": [
                *earlier.get("notes", []),
                f"the warm start shown is process 2 of {len(results)}; compile_warm_s is the median of all "
                f"{len(warm)} later processes' first calls",
            ],
        }
    return combined


def interleaved_fields(processes: list[dict], measure: dict, seed: int, *, eager: bool) -> dict:
    """What a result states of its processes' interleaved samples: an eager result's noise floor (eager against its
    twin), or a mode's speedup over eager and its steady state; pooled samples beside them, each ratio over all the
    processes (two-level where there are several)."""
    pooled = {"processes": processes, "measure": measure}
    resamples = measure["bootstrap_resamples"]
    if eager:
        twin = [x for p in processes for x in p["twin_latency_ms"]]
        fields = comparisons.noise_floor(pooled, seed=seed).record()
        return {"noise": {"ratio": fields.pop("value"), **fields, "n": len(twin), "twin_latency_ms": twin}}
    eager_ms = [x for p in processes for x in p["eager_latency_ms"]]
    alone = [p["steady_state"]["latency_ms"] for p in processes]
    steady = stats.steady_state([p["latency_ms"] for p in processes], alone, resamples=resamples, seed=seed)
    return {
        "eager_latency_ms": eager_ms,
        "speedup": {
            **comparisons.speedup(pooled, seed=seed).record(),
            "eager_median_ms": statistics.median(eager_ms),
            "n": sum(len(p["latency_ms"]) for p in processes),
        },
        "steady_state": {**steady, "latency_ms": [x for a in alone for x in a]},
    }


def warm_start_samples(results: list[dict], kind: str) -> list[float]:
    """The warm starts among an experiment's processes: a compile mode's later processes' first calls, which read
    the caches the first wrote; an export mode's package load and first call, in every process."""
    if kind == "compile":
        return [p["first_call_s"] for result in results[1:] for p in result["processes"]]
    if kind == "export":
        return [result["compile_warm_s"] for result in results if result.get("compile_warm_s") is not None]
    return []
