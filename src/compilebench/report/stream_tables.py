"""Shape streams: one row per call of each stream, and one per stream experiment."""

from __future__ import annotations

import pandas as pd

from .start_tables import quotient

STREAM_CALL_COLUMNS = [
    "hardware", "model", "mode", "call", "axis", "value", "latency_ms", "eager_ms", "compiled", "recompiled",
    "compile_s", "after_limit_uncompiled", "recompile_reasons",
]  # fmt: skip


def stream_calls(results: list[dict]) -> pd.DataFrame:
    """One row per call of every shape stream's first pass (the one that compiles), eager's call beside it."""
    rows = []
    for result in results:
        stream = result.get("stream") if result["status"] == "ok" else None
        if not stream:
            continue
        for call, eager_ms in zip(stream["calls"], stream["eager_call_ms"]):
            rows.append({
                **{key: result[key] for key in ("hardware", "model", "mode")}, **call, "eager_ms": eager_ms,
                "recompile_reasons": "; ".join(call["recompile_reasons"]) or None,
            })  # fmt: skip
    return pd.DataFrame(rows, columns=STREAM_CALL_COLUMNS)


STREAM_COLUMNS = [
    "hardware", "model", "stream_of", "mode", "status", "axis", "calls", "distinct", "passes", "compiles",
    "recompiles", "limit_reached", "limit_call", "calls_after_limit_uncompiled", "total_s", "eager_total_s",
    "total_speedup", "steady_total_s", "eager_steady_total_s", "steady_speedup", "overtakes_eager_at_call",
    "correct", "per_value", "recompile_reasons", "error",
]  # fmt: skip


def streams(results: list[dict]) -> pd.DataFrame:
    """One row per shape-stream experiment: compiles, recompiles, the recompile limit, the stream's total time
    against eager's over the same stream (its first pass, compiles included, and its best later pass), and the
    speedup at each distinct value once compiled."""
    rows = []
    for result in results:
        if not str(result["model"]).endswith(".stream"):
            continue
        stream = result.get("stream") or {}
        per_value = "; ".join(
            f"{row['value']}: {row['speedup']:.2f}× ({row['ci95'][0]:.2f}–{row['ci95'][1]:.2f})"
            for row in stream.get("per_value", [])
        )
        rows.append({
            **{key: result[key] for key in ("hardware", "model", "mode", "status")},
            "stream_of": str(result["model"]).removesuffix(".stream"),
            **{key: stream.get(key) for key in (
                "axis", "passes", "compiles", "recompiles", "limit_reached", "limit_call",
                "calls_after_limit_uncompiled", "total_s", "eager_total_s", "steady_total_s",
                "eager_steady_total_s", "overtakes_eager_at_call", "correct",
            )},
            "calls": len(stream.get("values", [])) or None,
            "distinct": len(set(stream.get("values", []))) or None,
            "total_speedup": quotient(stream.get("eager_total_s"), stream.get("total_s")),
            "steady_speedup": quotient(stream.get("eager_steady_total_s"), stream.get("steady_total_s")),
            "per_value": per_value or None,
            "recompile_reasons": "; ".join(dict.fromkeys(stream.get("recompile_reasons", [])))[:500] or None,
            "error": (result.get("error") or {}).get("message"),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=STREAM_COLUMNS)
