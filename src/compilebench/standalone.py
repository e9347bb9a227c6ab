"""The workflow's aggregation and report steps as plain functions, for machines without Snakemake.

The Snakefile's rules call the same table, figure and paper functions one by one;
these run them in order over result files that already exist.
"""

from __future__ import annotations

import time
from pathlib import Path

from . import comparisons, figures, paper, tables
from .config import hardware_prices, peak_overrides
from .layout import FIGURE_TABLES, PAPER_TABLES, TABLE_NAMES
from .results import read_results, run_result_paths


def write_tables(result_paths: list[Path], config: dict, out_dir: Path) -> dict[str, Path]:
    """Every tidy table the workflow writes, from the given result files."""
    runs = tables.runs_table(result_paths)
    results, threshold = read_results(result_paths), config["report"]["threshold"]
    sp = tables.speedups(runs, threshold)
    frames = {
        "runs": runs,
        "latency_samples": tables.latency_samples(result_paths),
        "speedups": sp,
        "summary": tables.geometric_mean_summary(sp),
        "limits": tables.limits(runs, peak_overrides(config)),
        "top_ops": tables.top_ops(result_paths),
        "hardware_costs": tables.hardware_costs(
            runs,
            hardware_prices(config),
            config["report"].get("baseline_hardware"),
            config["report"]["calls_per_start"],
        ),
    }
    frames["mode_effects"] = comparisons.mode_effects(results, runs, threshold)
    frames["scaling"] = tables.scaling(runs, results, threshold)
    frames["comparison"] = comparisons.within_run(results, config["report"].get("baseline_hardware"), threshold)
    previous = config["report"].get("compare_with")
    frames["change"] = comparisons.change_against(run_result_paths(previous) if previous else [], results, threshold)
    frames["compile_phases"] = tables.compile_phases(result_paths)
    assert tuple(frames) == TABLE_NAMES
    paths = {name: out_dir / f"{name}.csv" for name in frames}
    for name, frame in frames.items():
        tables.write_csv(frame, paths[name])
    return paths


def write_paper(
    table_paths: dict[str, Path],
    env_paths: list[Path],
    config: dict,
    out_dir: Path,
    command: str,
    report_dir: Path,
    *,
    pdf: bool = True,
) -> dict[str, float]:
    """Figures (SVG and PNG), paper.html and, where asked, paper.pdf; returns seconds per stage."""
    seconds, begin = {}, time.perf_counter()
    drawn = figures.load_tables(*(table_paths[name] for name in FIGURE_TABLES))
    figure_dir = out_dir / "figures"
    for name in figures.FIGURES:
        figures.render(name, drawn, [figure_dir / f"{name}.svg", figure_dir / f"{name}.png"])
    seconds["figures"] = time.perf_counter() - begin
    paper_tables = {name: table_paths[name] for name in PAPER_TABLES}
    captions = sorted((report_dir / "captions").glob("*.rst"))
    template, css = report_dir / "paper.html.j2", report_dir / "paper.css"
    for fmt, images in (("html", "svg"), ("pdf", "png")):
        if fmt == "pdf" and not pdf:
            continue
        begin = time.perf_counter()
        ctx = paper.context(paper_tables, sorted(figure_dir.glob(f"*.{images}")), captions, env_paths, config, command)
        paper.write(ctx, out_dir / f"paper.{fmt}", template, css)
        seconds[fmt] = time.perf_counter() - begin
    return seconds
