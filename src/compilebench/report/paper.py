"""The paper: a jinja2 template filled from the tidy tables, as self-contained HTML and as PDF."""

from __future__ import annotations

import base64
import math
import re
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from ..configuration.config import measure_settings
from ..core.files import atomic_write, read_json
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
from .appendix import asset_checksums, fast_math_note, package_versions, yaml_blocks
from .findings import (
    advice,
    calls,
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
from .tables import inference_only


def _use(entry: dict) -> str | None:
    return (entry.get("use") or {}).get("mode")


def _data_uri(path: Path) -> str:
    mime = {"svg": "image/svg+xml", "png": "image/png"}[path.suffix.lstrip(".")]
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode()}"


def _caption(path: Path) -> Markup:
    """A caption file's text for the paper, its ``literals`` (reStructuredText, as Snakemake's report reads them)
    set as code."""
    text = str(escape(" ".join(Path(path).read_text().split())))
    return Markup(re.sub(r"``(.+?)``", r"<code>\1</code>", text))


def context(
    tables: dict[str, Path],
    figures: list[Path],
    figure_manifest: Path,
    captions: list[Path],
    env_records: list[Path],
    config: dict,
    command: str,
) -> dict:
    """Everything the template shows, from the tables, figures and records the paper's rule declares; of the
    figures, those the manifest says were drawn, numbered in the order a reader meets them."""
    every_run = pd.read_csv(tables["runs"])
    # The body answers for inference; training steps have their own table and findings (Appendix B).
    runs = inference_only(every_run)
    speedups = inference_only(pd.read_csv(tables["speedups"]))
    training = pd.read_csv(tables["training"])
    runtimes = pd.read_csv(tables["runtimes"])
    summary = pd.read_csv(tables["summary"])
    limits = pd.read_csv(tables["limits"])
    top_ops = pd.read_csv(tables["top_ops"])
    hardware_costs = pd.read_csv(tables["hardware_costs"])
    effects = pd.read_csv(tables["mode_effects"])
    scaling = pd.read_csv(tables["scaling"])
    comparison = pd.read_csv(tables["comparison"])
    change = pd.read_csv(tables["change"])
    streams = pd.read_csv(tables["streams"])
    depth = pd.read_csv(tables["compile_depth"])
    start_paths = pd.read_csv(tables["start_paths"])
    previous = (config.get("report") or {}).get("compare_with")
    pay_off = pay_off_rows(runs, start_paths)
    envs = [read_json(p) for p in env_records]
    published = config.get("published") or {}
    by_name = {Path(f).stem: Path(f) for f in figures}
    drawn = read_json(figure_manifest)["figures"]
    caption_of = {Path(c).stem: Path(c) for c in captions}
    not_ok = every_run[every_run["status"] != "ok"].to_dict("records")
    return {
        "glance": at_a_glance(speedups),
        "title": config.get("title", "compilebench"),
        "authors": config.get("authors", ""),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "answer": (answered := answer(runs, speedups)),
        "advice": [
            " ".join(filter(None, [advice(e), answer_clause(runtimes, e["hardware"], e["model"], _use(e))]))
            for e in answered
        ],
        "model_count": int(runs["sweep_of"].fillna(runs["model"]).nunique()) if "sweep_of" in runs else 0,
        "findings": settings_findings(effects) + scaling_findings(scaling),  # Table 1 states each mode's effect
        "trust": level_findings(runs)
        + fidelity_findings(runs)
        + eager_job_findings(speedups)
        + instability_findings(speedups),
        "scaling": records(scaling),
        "quantized": quantization_rows(runs, effects),
        "streams": records(streams),
        "stream_findings": stream_findings(streams),
        "compile_traces": compile_traces(runs),
        "comparison": records(comparison),
        "comparison_findings": comparison_findings(comparison),
        "compare_with": previous,
        "change": records(change),
        "pay_off": pay_off,
        "pay_off_shown": (shown := pay_off_shown(pay_off)),
        "pay_off_untimed": pay_off_untimed(shown),
        "pay_off_findings": pay_off_findings(pay_off),
        "starts": records(start_paths),
        "start_findings": start_findings(start_paths),
        "training": records(training),
        "runtimes": records(runtimes),
        "runtime_findings": runtime_findings(runtimes),
        "training_findings": training_findings(training),
        "depth": records(depth),
        "depth_findings": depth_findings(depth),
        "change_findings": change_findings(change, previous) if previous else [],
        "modes": mode_table(runs),
        "summary": agreeing_means(summary, speedups),
        "counts": every_run["status"].value_counts().to_dict(),
        "jobs": len(every_run),
        "hardware": [{**e, "fast_math_note": fast_math_note(e)} for e in envs],
        "limits": records(limits),
        "cluster": cluster_jobs(every_run),
        "time_goes": where_time_goes(runs, top_ops),
        "measures": {model: measure_settings(config, model) for model in config["models"]},
        "costs": records(hardware_costs.dropna(subset=["cost_per_million"])),
        "dtypes": sorted(runs["dtype"].dropna().unique()),
        "cosine_min": COSINE_MIN,
        "capacity_shift": CAPACITY_SHIFT,
        "level_shift": LEVEL_SHIFT_TOLERANCE,
        "threshold": (config.get("report") or {}).get("threshold", DEFAULT_THRESHOLD),
        "correct_counts": correct_counts(runs),
        "faults_per_call": FAULTS_PER_CALL,
        "float32_rel_tol": FLOAT32_REL_TOL,
        "float64_multiplier": FLOAT64_MULTIPLIER,
        "float64_tol": FLOAT64_TOL,
        "figures": (
            numbered := [
                {
                    "number": number,
                    "name": f["name"],
                    "section": f["section"],
                    "lead": FIGURE_LEADS.get(f["name"]),
                    "src": _data_uri(by_name[f["name"]]),
                    "caption": _caption(caption_of[f["name"]]),
                }
                for number, f in enumerate((f for f in drawn if f["not_drawn"] is None and f["name"] in by_name), 1)
            ]
        ),  # fmt: skip
        "memory_sentence": memory_sentence(numbered, runs, start_paths),
        "not_drawn": [f for f in drawn if f["not_drawn"] is not None and f["section"] != "appendix"],
        "results": (results := results_rows(runs, speedups, published)),
        "correctness_rules": correctness_rules(results),
        "published": published,
        "published_rows": [
            r
            for r in results
            if any(r[f"published_{k}"] is not None for k in ("median_ms", "compile_s", "tokens_per_s"))
        ],
        "compiler": every_run.to_dict("records"),
        "not_ok": not_ok,
        "unguarded": unguarded(every_run),
        "capped": capped(every_run),
        "config_blocks": yaml_blocks(config),
        "command": command,
        "config_file": (re.search(r"--configfile (\S+)", command) or [None, "config/config.yaml"])[1],
        "measuring_span_s": measuring_span_s(every_run),
        "code": sorted(
            {
                (e["code"]["commit"] or "unknown") + (" (uncommitted changes)" if e["code"]["dirty"] else "")
                for e in envs
            }
        ),
        "packages": package_versions(envs),
        "assets": asset_checksums(config),
        "env_blocks": {e["hardware"]: yaml_blocks(e) for e in envs},
    }


# What each figure shows, said in the text before it (the peak-memory figure gets a sentence computed from the run
# instead: findings.memory_sentence).
FIGURE_LEADS = {
    "generation": "shows text generation per mode: tokens a second and the time to the first token",
    "hardware": "sets each hardware entry's p90 latency against the baseline entry's and, where prices are given, "
    "the cost of a million inferences",
    "latency": "draws Table 1's medians with their intervals, each model's modes side by side",
    "scaling": "draws how latency, throughput and the speedup over eager move with the swept setting",
    "streams": "draws each stream's cumulative time, compiles marked where they happened",
    "pay_off": "draws cumulative time against calls: where a mode's line crosses eager's, compiling has paid off",
    "compile_phases": "splits each cold and warm compile into torch's own phases, and what they leave unexplained",
    "distributions": "shows every timed call of each mode: a mode whose calls ran at two levels shows two clusters",
    "starts": "stacks each start path's parts from spawn to first output, eager's start the floor",
    "compile_depth": "draws the cold compile against depth, a trend per layer for each compiling mode",
    "comparison": "sets each experiment on each hardware entry against the baseline entry, verdict by colour",
    "speedup_heatmap": "draws Table 1's speedups as a grid of model against mode",
    "compile_cost": "sets each mode's speedup against its cold compile",
    "training": "stacks each training step's forward, backward and optimizer, eager first",
}


def measuring_span_s(runs: pd.DataFrame) -> float | None:
    """Seconds from the first measuring process's start to the last one's end."""
    times = pd.to_datetime(pd.concat([runs["started_at"], runs["finished_at"]]).dropna(), utc=True, errors="coerce")
    return None if times.dropna().empty else float((times.max() - times.min()).total_seconds())


def render_html(ctx: dict, template: Path, css: Path) -> str:
    template = Path(template)
    environment = Environment(
        loader=FileSystemLoader(template.parent),
        autoescape=select_autoescape(["html", "j2"]),
        undefined=StrictUndefined,
    )
    environment.filters["calls"] = calls
    environment.filters["clip"] = lambda text, limit=240: text if len(str(text)) <= limit else f"{str(text)[:limit]}…"
    environment.filters["num"] = num
    return environment.get_template(template.name).render(**ctx, css=Path(css).read_text())


def num(value, digits: int = 2) -> str:
    """A table's number: fixed decimals; beyond a million (an interval a near-zero denominator blew up) in three
    significant digits, so that no column is widened past the page."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if abs(value) >= 1e6:
        return f"{value:.3g}"
    return f"{value:.{digits}f}"


def write(ctx: dict, out: str | Path, template: Path, css: Path) -> None:
    """The paper as self-contained HTML, or as PDF when `out` ends in .pdf."""
    html = render_html(ctx, template, css)
    if str(out).endswith(".pdf"):
        from weasyprint import HTML

        atomic_write(out, lambda handle: HTML(string=html, base_url=str(Path(template).parent)).write_pdf(handle))
    else:
        atomic_write(out, lambda handle: handle.write(html.encode()))
