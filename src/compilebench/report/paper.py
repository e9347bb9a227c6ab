"""The paper: a jinja2 template filled from the tidy tables, as self-contained HTML and as PDF."""

from __future__ import annotations

import math
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from ..core.files import atomic_write
from .findings import calls
from .sections import SECTIONS, Inputs, Reader, measuring_span_s

__all__ = ["context", "measuring_span_s", "num", "render_html", "write"]


def context(
    tables: dict[str, Path],
    figures: list[Path],
    figure_manifest: Path,
    env_records: list[Path],
    config: dict,
    command: str,
) -> dict:
    """Everything the template shows: each section's part (`sections.SECTIONS`), built from the tables it declares,
    the figures the manifest says were drawn, the environment records, the config and the command."""
    inputs = Inputs(dict(tables), list(figures), Path(figure_manifest), list(env_records), config, command)
    shown: dict = {}
    for section in SECTIONS:
        part = section.build(Reader(inputs, section))
        if twice := set(part) & set(shown):
            raise ValueError(f"paper section {section.name!r} sets {', '.join(sorted(twice))}, which another sets")
        shown.update(part)
    return shown


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
    environment.filters["ms"] = ms
    return environment.get_template(template.name).render(**ctx, css=Path(css).read_text())


def num(value, digits: int = 2) -> str:
    """A table's number: fixed decimals; beyond a million (an interval a near-zero denominator blew up) in three
    significant digits, so that no column is widened past the page."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if abs(value) >= 1e6:
        return f"{value:.3g}"
    return f"{value:.{digits}f}"


def ms(value) -> str:
    """A latency in ms to three significant digits at least (two decimals from 1 ms up), so that a speedup of two
    sub-millisecond medians is the quotient of the figures printed beside it."""
    if value is None or not math.isfinite(value) or value == 0:
        return num(value)
    return num(value, max(2, 2 - math.floor(math.log10(abs(value)))))


def write(ctx: dict, out: str | Path, template: Path, css: Path) -> None:
    """The paper as self-contained HTML, or as PDF when `out` ends in .pdf."""
    html = render_html(ctx, template, css)
    if str(out).endswith(".pdf"):
        from weasyprint import HTML

        atomic_write(out, lambda handle: HTML(string=html, base_url=str(Path(template).parent)).write_pdf(handle))
    else:
        atomic_write(out, lambda handle: handle.write(html.encode()))
