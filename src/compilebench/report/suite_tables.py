"""A run as a suite, as the field reports torch.compile over many models: per hardware and mode, how many models
pass (ran, and passed the accuracy rule) and why the others did not, and the geometric-mean speedup over the
passing ones with an interval that resamples the models (`stats.population_geomean`), beside the verdict counts
every experiment's own interval gives, what compiling cost, graph breaks and memory."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis import stats
from ..analysis.stats import missing
from ..core import layout
from ..core.thresholds import SUITE_MIN_MODELS
from .tables import inference_only

# Why a model × mode did not pass: its model could not run even in eager (build), the mode could not compile or
# run it (compile, `unsupported` included), it ran out of time (timeout), its output failed the accuracy rule, or
# no accuracy rule could judge it (unchecked: no reference).
CAUSES = ("build", "compile", "timeout", "accuracy", "unchecked")
VERDICTS = ("faster", "same", "slower", "unclear")
# The verdict every table prints (`verdicts.verdict_in_words`) as the suite counts it.
COUNTED_AS = {"no detectable difference": "same", "two speeds": "unclear"}

SUITE_MODEL_COLUMNS = [
    "hardware", "model", "mode", "status", "passed", "cause", "error", "speedup", "speedup_ci95_low",
    "speedup_ci95_high", "verdict", "compile_s", "graph_breaks", "memory_ratio", "command",
]  # fmt: skip


def suite_models(runs: pd.DataFrame, speedups: pd.DataFrame, command: str = "snakemake --cores 4") -> pd.DataFrame:
    """One row per model × mode (eager's own rows left out; the models' inference, not their training steps): its
    status, whether it passed and why not, its speedup with interval and verdict, its cold compile, graph breaks,
    eager's peak memory over the mode's, and the one command that measures that experiment alone."""
    runs = inference_only(runs)
    eager = runs[runs["mode"] == "eager"].set_index(["hardware", "model"])
    verdicts = speedups.set_index(["hardware", "model", "mode"])["verdict"] if len(speedups) else pd.Series()
    rows = []
    for run in runs[runs["mode"] != "eager"].to_dict("records"):
        at = (run["hardware"], run["model"])
        eager_status = eager["status"].get(at)
        cause = _cause(run, eager_status)
        target = layout.RUN.format(hardware=run["hardware"], model=run["model"], mode=run["mode"])
        eager_memory = eager["peak_memory_bytes"].get(at)
        rows.append({
            **{key: run[key] for key in ("hardware", "model", "mode", "status", "speedup", "speedup_ci95_low",
                                         "speedup_ci95_high", "compile_s", "graph_breaks")},
            "passed": cause is None, "cause": cause, "error": None if missing(run.get("error")) else run["error"],
            "verdict": COUNTED_AS.get(said := verdicts.get((*at, run["mode"])), said) if cause is None else None,
            "memory_ratio": _ratio(eager_memory, run.get("peak_memory_bytes")),
            "command": f"{command} {target}",
        })  # fmt: skip
    return pd.DataFrame(rows, columns=SUITE_MODEL_COLUMNS)


SUITE_COLUMNS = [
    "hardware", "mode", "models", "passed", "pass_rate", *(f"failed_{cause}" for cause in CAUSES),
    "geomean_speedup", "geomean_ci95_low", "geomean_ci95_high", "geomean_speedup_clipped", *VERDICTS,
    "compile_s_median", "compile_s_p90", "graph_breaks", "models_with_graph_breaks", "memory_ratio_median",
]  # fmt: skip


def suite(models: pd.DataFrame, resamples: int = 2000) -> pd.DataFrame:
    """Per hardware × mode over `suite_models`' rows: models, passed and the pass rate, failures by cause, the
    geometric-mean speedup of the passing models with its 95% interval and with every slowdown counted as 1.0
    (as PyTorch's dashboard reports it), the verdict counts, the cold compile's median and 90th percentile (of the
    models that ran), graph breaks in all and the models with any, and the median of eager's peak memory over the
    mode's."""
    rows = []
    for (hardware, mode), group in models.groupby(["hardware", "mode"], sort=False):
        passing = group[group["passed"] == True]  # noqa: E712
        speedups = passing["speedup"].astype(float)
        value, low, high = stats.population_geomean(
            list(speedups), list(passing["speedup_ci95_low"]), list(passing["speedup_ci95_high"]), resamples=resamples
        )
        compiled = group.loc[group["status"] == "ok", "compile_s"].dropna().astype(float)  # those that compiled
        breaks = group["graph_breaks"].dropna().astype(float)
        rows.append({
            "hardware": hardware, "mode": mode, "models": len(group), "passed": len(passing),
            "pass_rate": len(passing) / len(group),
            **{f"failed_{cause}": int((group["cause"] == cause).sum()) for cause in CAUSES},
            "geomean_speedup": value, "geomean_ci95_low": low, "geomean_ci95_high": high,
            "geomean_speedup_clipped": float(np.exp(np.log(speedups.clip(lower=1.0)).mean())) if len(passing) else None,
            **{verdict: int((passing["verdict"] == verdict).sum()) for verdict in VERDICTS},
            "compile_s_median": compiled.median() if len(compiled) else None,
            "compile_s_p90": compiled.quantile(0.9) if len(compiled) else None,
            "graph_breaks": int(breaks.sum()), "models_with_graph_breaks": int((breaks > 0).sum()),
            "memory_ratio_median": group["memory_ratio"].dropna().median() if group["memory_ratio"].notna().any()
            else None,
        })  # fmt: skip
    return pd.DataFrame(rows, columns=SUITE_COLUMNS)


def model_count(runs: pd.DataFrame) -> int:
    """How many models the run measured for inference, a sweep's points counted as one model."""
    runs = inference_only(runs)
    named = runs["sweep_of"].where(runs["sweep_of"].notna(), runs["model"]) if "sweep_of" in runs else runs["model"]
    return int(named.nunique())


def is_suite(runs: pd.DataFrame) -> bool:
    """Whether the run is a suite: at least SUITE_MIN_MODELS models."""
    return model_count(runs) >= SUITE_MIN_MODELS


def _cause(run: dict, eager_status: str | None) -> str | None:
    """Why the row did not pass, or None where it passed."""
    if run["status"] == "timeout":
        return "timeout"
    if run["status"] != "ok":
        return "build" if eager_status != "ok" else "compile"
    if missing(run.get("correct")):
        return "unchecked"
    return None if run["correct"] == True else "accuracy"  # noqa: E712


def _ratio(numerator, denominator) -> float | None:
    if missing(numerator) or missing(denominator) or not denominator:
        return None
    return float(numerator) / float(denominator)
