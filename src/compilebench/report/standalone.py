"""The workflow's aggregation and report steps as plain functions, for machines without Snakemake.

The Snakefile's rules call the same table, figure and paper functions one by one;
these run them in order over result files that already exist.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..core.files import run_result_paths
from ..core.layout import FIGURE_MANIFEST, FIGURE_TABLES
from . import figures, paper, tables
from .registry import TABLES, Sources, report_settings, table_names


def write_tables(
    result_paths: list[Path], config: dict, out_dir: Path, start_records: list[Path] = ()
) -> dict[str, Path]:
    """Every tidy table the registry declares, in its order, from the given result and starts files."""
    previous = config["report"].get("compare_with")
    previous_paths = run_result_paths(previous) if previous else []
    sources = Sources(result_paths, {}, previous_paths, report_settings(config), starts=start_records)
    for spec in TABLES.values():
        path = out_dir / f"{spec.name}.csv"
        tables.write_csv(spec.build(sources), path)
        sources.table_paths[spec.name] = path
    return dict(sources.table_paths)


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
    manifest = figure_dir / Path(FIGURE_MANIFEST).name
    figures.render_all(drawn, lambda name: [figure_dir / f"{name}.svg", figure_dir / f"{name}.png"], manifest)
    seconds["figures"] = time.perf_counter() - begin
    paper_tables = {name: table_paths[name] for name in table_names(paper_only=True)}
    template, css = report_dir / "paper.html.j2", report_dir / "paper.css"
    for fmt, images in (("html", "svg"), ("pdf", "png")):
        if fmt == "pdf" and not pdf:
            continue
        begin = time.perf_counter()
        shown = sorted(figure_dir.glob(f"*.{images}"))
        ctx = paper.context(paper_tables, shown, manifest, env_paths, config, command)
        paper.write(ctx, out_dir / f"paper.{fmt}", template, css)
        seconds[fmt] = time.perf_counter() - begin
    return seconds
