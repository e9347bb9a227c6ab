"""The paper's sections: each declares the tidy tables it reads and builds its own part of the template's context.

`paper.context` is a loop over `SECTIONS`. Every table is read once for the whole paper (`Inputs.table`), and a
section reads only the tables it declares (`Reader` refuses any other), so the declaration is what the section
shows. The figures come from their one declaration each (`figure_catalog`).
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
from markupsafe import Markup, escape

from ..configuration.config import measure_settings
from ..core.files import read_environment_record, read_json
from ..core.modes import BUILTIN_WORDS, ordered
from ..core.thresholds import (
    CAPACITY_SHIFT,
    COSINE_MIN,
    DEFAULT_THRESHOLD,
    FAULTS_PER_CALL,
    FLOAT32_REL_TOL,
    FLOAT64_MULTIPLIER,
    FLOAT64_TOL,
    LEVEL_SHIFT_TOLERANCE,
)
from . import figure_catalog
from .appendix import asset_checksums, fast_math_note, package_versions, yaml_blocks
from .findings import (
    advice,
    change_findings,
    comparison_findings,
    depth_findings,
    eager_job_findings,
    fidelity_findings,
    instability_findings,
    level_findings,
    memory_sentence,
    pay_off_findings,
    scaling_findings,
    settings_findings,
    start_findings,
    stream_findings,
    training_findings,
)
from .rows import (
    agreeing_means,
    answer,
    at_a_glance,
    capped,
    cluster_jobs,
    compile_traces,
    correct_counts,
    correctness_rules,
    mode_table,
    pay_off_rows,
    pay_off_shown,
    pay_off_untimed,
    quantization_rows,
    records,
    results_rows,
    unguarded,
    where_time_goes,
)
from .runtime_tables import answer_clause, runtime_findings
from .suite_tables import is_suite, model_count
from .tables import inference_only


@dataclass
class Inputs:
    """What the paper is made from: the tables (by name, each read once), the figures drawn and their manifest, the
    environment records, the config and the command that reproduces the run."""

    tables: dict[str, Path]
    figures: list[Path]
    figure_manifest: Path
    env_records: list[Path]
    config: dict
    command: str

    read: dict[str, pd.DataFrame] = field(default_factory=dict, init=False)

    def table(self, name: str) -> pd.DataFrame:
        """The table `name`, read the first time a section asks for it (no table is read twice)."""
        if name not in self.read:
            self.read[name] = pd.read_csv(self.tables[name])
        return self.read[name]

    @functools.cached_property
    def envs(self) -> list[dict]:
        return [read_environment_record(path) for path in self.env_records]


class Reader:
    """One section's view of the inputs: the tables it declares, whole or (`inference`) without training steps,
    which the body leaves to Appendix B."""

    def __init__(self, inputs: Inputs, section: Section):
        self.inputs, self.section = inputs, section
        self.config, self.command = inputs.config, inputs.command

    def table(self, name: str) -> pd.DataFrame:
        if name not in self.section.tables:
            raise KeyError(f"paper section {self.section.name!r} reads table {name!r}, which it does not declare")
        return self.inputs.table(name)

    def inference(self, name: str) -> pd.DataFrame:
        return inference_only(self.table(name))


@dataclass(frozen=True)
class Section:
    name: str
    tables: tuple[str, ...]
    build: Callable[[Reader], dict]


def _use(entry: dict) -> str | None:
    return (entry.get("use") or {}).get("mode")


def front(read: Reader) -> dict:
    """Page 1: the machine in one line, the answer per model with what one call of it is and the runtimes' clause
    beside each, the training steps' results, and what each mode and word on the page means."""
    runs, speedups, runtimes = read.inference("runs"), read.inference("speedups"), read.table("runtimes")
    answered = answer(runs, speedups)
    return {
        "machine": machine_line(read.inputs.envs, read.table("runs")),
        "training_answer": training_answer(read.table("training")),
        "mode_words": mode_words(runs["mode"], read.config),
        "glance": at_a_glance(speedups),
        "title": read.config.get("title", "compilebench"),
        "authors": read.config.get("authors", ""),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "answer": answered,
        "advice": [
            " ".join(filter(None, [advice(e), answer_clause(runtimes, e["hardware"], e["model"], _use(e))]))
            for e in answered
        ],
        "model_count": model_count(runs),
    }


def suite(read: Reader) -> dict:
    """A suite's page 1 (its table per hardware × mode, in words for the abstract) and its appendix: every model ×
    mode, and each failure with its message. A run of a few models shows none of it."""
    shown = is_suite(read.table("runs"))
    per_mode, models = read.table("suite"), read.table("suite_models")
    return {
        "is_suite": shown,
        "suite": records(per_mode) if shown else [],
        "suite_sentences": [suite_sentence(r) for r in records(per_mode)] if shown else [],
        "suite_models": records(models) if shown else [],
        "suite_failures": records(models[models["passed"] != True]) if shown else [],  # noqa: E712
    }


def suite_sentence(row: dict) -> str:
    """One mode of a suite in one sentence: pass rate, geomean with its interval and clipped, verdicts, compiles."""
    said = f"{row['mode']} on {row['hardware']}: {row['passed']} of {row['models']} models passed"
    if pd.isna(row.get("geomean_speedup")):
        return said + "."
    verdicts = ", ".join(f"{row[v]} {v}" for v in ("faster", "same", "slower", "unclear"))
    compiles = (
        f"; a cold compile took {row['compile_s_median']:.1f} s at the median ({row['compile_s_p90']:.1f} s at the "
        "90th percentile)"
        if not pd.isna(row.get("compile_s_median"))
        else ""
    )
    return (
        f"{said}, geometric-mean speedup {row['geomean_speedup']:.2f}× ({row['geomean_ci95_low']:.2f}–"
        f"{row['geomean_ci95_high']:.2f}), {row['geomean_speedup_clipped']:.2f}× with every slowdown counted as 1; "
        f"{verdicts}{compiles}."
    )


def machine_line(envs: list[dict], runs: pd.DataFrame) -> str:
    """Where and how the run measured, in one line: each hardware entry's device, cores and threads, the arithmetic's
    precision and torch's version."""
    said = []
    for env in envs:
        cpu, accelerator = env.get("cpu") or {}, env.get("accelerator") or {}
        device = accelerator.get("name") if env.get("device") != "cpu" and accelerator else cpu.get("model")
        cores = f"{cpu['logical_cores']} logical CPU cores, " if cpu.get("logical_cores") else ""
        mine = runs[runs["hardware"] == env["hardware"]]
        dtypes = ", ".join(sorted(set(mine["dtype"].dropna()))) or "no run"
        said.append(
            f"{env['hardware']}: {device or env.get('device')} ({cores}{env.get('threads')} threads), "
            f"{dtypes} arithmetic, torch {env.get('torch')}"
        )
    return "; ".join(said)


def training_answer(training: pd.DataFrame) -> list[str]:
    """Each training step's modes in one sentence for page 1: speedup, interval and verdict (Appendix B has all)."""
    sentences = []
    for (hardware, model), frame in training.groupby(["hardware", "train_of"], sort=False):
        first = frame.iloc[0]
        modes = [
            f"{r['mode']} {r['speedup']:.2f}× ({r['speedup_ci95_low']:.2f}–{r['speedup_ci95_high']:.2f}), "
            f"{r.get('verdict') or 'unclear'}{f' ({w})' if isinstance(w := r.get('verdict_why'), str) else ''}"
            if r["status"] == "ok" and not pd.isna(r.get("speedup"))
            else f"{r['mode']} {r['status']}"
            for r in records(frame)
            if r["mode"] != "eager"
        ]
        if modes:
            sentences.append(
                f"{model}'s training step on {hardware} ({first['optimizer']}, batch {first['batch_size']}, "
                f"one call is one step): {'; '.join(modes)}."
            )
    return sentences


def mode_words(modes: pd.Series, config: dict) -> list[tuple[str, str]]:
    """Each mode on page 1 and what it is: its definition's description, else the built-in's words."""
    defined = config.get("mode_definitions") or {}
    shown = ordered(modes.dropna().unique())
    return [(m, (defined.get(m) or {}).get("description") or BUILTIN_WORDS.get(m, m)) for m in shown]


def findings(read: Reader) -> dict:
    """What the settings did (Table 1 states each mode's effect) and what tells whether to trust a number."""
    runs, speedups = read.inference("runs"), read.inference("speedups")
    return {
        "findings": settings_findings(read.table("mode_effects")) + scaling_findings(read.table("scaling")),
        "trust": level_findings(runs)
        + fidelity_findings(runs)
        + eager_job_findings(speedups)
        + instability_findings(speedups),
        "not_to_quote": not_to_quote(speedups),
    }


def not_to_quote(speedups: pd.DataFrame) -> list[str]:
    """Each speedup the paper prints whose verdict is not one the data support (unclear, two speeds, wrong output):
    its figure and why, for a reader who would quote it."""
    shown = speedups[speedups["verdict"].isin(("unclear", "two speeds", "wrong output"))]
    return [
        f"{r['model']} {r['mode']} on {r['hardware']} ({r['speedup']:.2f}×: {r['verdict']}"
        f"{f', {w}' if isinstance(w := r.get('verdict_why'), str) else ''})"
        for r in records(shown)
        if not pd.isna(r.get("speedup"))
    ]


def settings(read: Reader) -> dict:
    """Sweeps, quantized modes, shape streams and compile traces."""
    scaling, streams, runs = read.table("scaling"), read.table("streams"), read.inference("runs")
    return {
        "scaling": records(scaling),
        "quantized": quantization_rows(runs, read.table("mode_effects")),
        "streams": records(streams),
        "stream_findings": stream_findings(streams),
        "compile_traces": compile_traces(runs),
    }


def comparison(read: Reader) -> dict:
    """Hardware entries against the baseline, and this run against `report.compare_with`."""
    compared, change = read.table("comparison"), read.table("change")
    previous = (read.config.get("report") or {}).get("compare_with")
    return {
        "comparison": records(compared),
        "comparison_findings": comparison_findings(compared),
        "compare_with": previous,
        "change": records(change),
        "change_findings": change_findings(change, previous) if previous else [],
    }


def pay_off(read: Reader) -> dict:
    """When compiling pays for itself, and each start from process start to first output."""
    start_paths = read.table("start_paths")
    rows = pay_off_rows(read.inference("runs"), start_paths)
    shown = pay_off_shown(rows)
    return {
        "pay_off": rows,
        "pay_off_shown": shown,
        "pay_off_untimed": pay_off_untimed(shown),
        "pay_off_findings": pay_off_findings(rows),
        "starts": records(start_paths),
        "start_findings": start_findings(start_paths),
    }


def training(read: Reader) -> dict:
    steps = read.table("training")
    return {"training": records(steps), "training_findings": training_findings(steps)}


def runtimes(read: Reader) -> dict:
    deployed = read.table("runtimes")
    return {"runtimes": records(deployed), "runtime_findings": runtime_findings(deployed)}


def depth(read: Reader) -> dict:
    swept = read.table("compile_depth")
    return {"depth": records(swept), "depth_findings": depth_findings(swept)}


def results(read: Reader) -> dict:
    """Table 1 and what stands behind every row: correctness, compiler health, the published figures, what failed."""
    every_run, runs, speedups = read.table("runs"), read.inference("runs"), read.inference("speedups")
    published = read.config.get("published") or {}
    rows = results_rows(runs, speedups, published)
    return {
        "modes": mode_table(runs),
        "summary": agreeing_means(read.table("summary"), speedups),
        "counts": every_run["status"].value_counts().to_dict(),
        "jobs": len(every_run),
        "dtypes": sorted(runs["dtype"].dropna().unique()),
        "correct_counts": correct_counts(runs),
        "results": rows,
        "correctness_rules": correctness_rules(rows),
        "published": published,
        "published_rows": [
            r for r in rows if any(r[f"published_{k}"] is not None for k in ("median_ms", "compile_s", "tokens_per_s"))
        ],
        "compiler": every_run.to_dict("records"),
        "not_ok": every_run[every_run["status"] != "ok"].to_dict("records"),
        "unguarded": unguarded(every_run),
        "capped": capped(every_run),
        "measuring_span_s": measuring_span_s(every_run),
    }


def hardware(read: Reader) -> dict:
    """Each hardware entry, its limits and costs, the cluster's jobs, where the time goes."""
    every_run = read.table("runs")
    return {
        "hardware": [{**e, "fast_math_note": fast_math_note(e)} for e in read.inputs.envs],
        "limits": records(read.table("limits")),
        "cluster": cluster_jobs(every_run),
        "time_goes": where_time_goes(inference_only(every_run), read.table("top_ops")),
        "costs": records(read.table("hardware_costs").dropna(subset=["cost_per_million"])),
    }


def figures(read: Reader) -> dict:
    """The figures the manifest says were drawn, numbered in the order a reader meets them, each with the lead and
    caption of its declaration; the peak-memory figure's lead computed from the run."""
    by_name = {Path(f).stem: Path(f) for f in read.inputs.figures}
    drawn = read_json(read.inputs.figure_manifest)["figures"]
    shown = (f for f in drawn if f["not_drawn"] is None and f["name"] in by_name)
    numbered = [
        {
            "number": number,
            "name": f["name"],
            "section": f["section"],
            "lead": figure_catalog.BY_NAME[f["name"]].lead,
            "src": _data_uri(by_name[f["name"]]),
            "caption": _caption(figure_catalog.BY_NAME[f["name"]].caption),
        }
        for number, f in enumerate(shown, 1)
    ]
    return {
        "figures": numbered,
        "memory_sentence": memory_sentence(numbered, read.inference("runs"), read.table("start_paths")),
        "not_drawn": [f for f in drawn if f["not_drawn"] is not None and f["section"] not in ("appendix", "suite")],
    }


def method(read: Reader) -> dict:
    """The measurement settings and every threshold the method section states."""
    config = read.config
    return {
        "measures": {model: measure_settings(config, model) for model in config["models"]},
        "cosine_min": COSINE_MIN,
        "capacity_shift": CAPACITY_SHIFT,
        "level_shift": LEVEL_SHIFT_TOLERANCE,
        "threshold": (config.get("report") or {}).get("threshold", DEFAULT_THRESHOLD),
        "faults_per_call": FAULTS_PER_CALL,
        "float32_rel_tol": FLOAT32_REL_TOL,
        "float64_multiplier": FLOAT64_MULTIPLIER,
        "float64_tol": FLOAT64_TOL,
    }


def appendix(read: Reader) -> dict:
    """What reproduces the run: its config, command, code revision, packages, assets and environments."""
    envs, command = read.inputs.envs, read.command
    revisions = {
        (e["code"]["commit"] or "unknown") + (" (uncommitted changes)" if e["code"]["dirty"] else "") for e in envs
    }
    return {
        "config_blocks": yaml_blocks(read.config),
        "command": command,
        "config_file": (re.search(r"--configfile (\S+)", command) or [None, "config/config.yaml"])[1],
        "code": sorted(revisions),
        "packages": package_versions(envs),
        "assets": asset_checksums(read.config),
        "env_blocks": {e["hardware"]: yaml_blocks(e) for e in envs},
    }


SECTIONS: tuple[Section, ...] = (
    Section("suite", ("runs", "suite", "suite_models"), suite),
    Section("front", ("runs", "speedups", "runtimes", "training"), front),
    Section("findings", ("runs", "speedups", "mode_effects", "scaling"), findings),
    Section("settings", ("runs", "scaling", "streams", "mode_effects"), settings),
    Section("comparison", ("comparison", "change"), comparison),
    Section("pay-off", ("runs", "start_paths"), pay_off),
    Section("training", ("training",), training),
    Section("runtimes", ("runtimes",), runtimes),
    Section("compile-depth", ("compile_depth",), depth),
    Section("results", ("runs", "speedups", "summary"), results),
    Section("hardware", ("runs", "limits", "top_ops", "hardware_costs"), hardware),
    Section("figures", ("runs", "start_paths"), figures),
    Section("method", (), method),
    Section("appendix", (), appendix),
)


def measuring_span_s(runs: pd.DataFrame) -> float | None:
    """Seconds from the first measuring process's start to the last one's end."""
    times = pd.to_datetime(pd.concat([runs["started_at"], runs["finished_at"]]).dropna(), utc=True, errors="coerce")
    return None if times.dropna().empty else float((times.max() - times.min()).total_seconds())


def _data_uri(path: Path) -> str:
    mime = {"svg": "image/svg+xml", "png": "image/png"}[path.suffix.lstrip(".")]
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode()}"


def _caption(text: str) -> Markup:
    """A caption for the paper, its ``literals`` (reStructuredText, as Snakemake's report reads them) set as code."""
    escaped = str(escape(" ".join(text.split())))
    return Markup(re.sub(r"``(.+?)``", r"<code>\1</code>", escaped))
