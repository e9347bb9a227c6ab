"""A static site of a history: an overview of every series with its last change and a sparkline, and a page per
hardware × model with a trend chart per metric (each run's value and interval, change points marked), filterable
by mode. Plain HTML and inline SVG: it opens from disk, without a server or the network."""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

from ..core.files import atomic_write
from .changes import Change, Key, Point

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; width: 100%; } th, td { padding: 3px 8px; border-bottom: 1px solid #ddd; }
th { text-align: left; background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.regression { color: #b00020; font-weight: 600; } .improvement { color: #0a7d32; }
.chart { display: inline-block; margin: 0 1em 1em 0; vertical-align: top; } .chart h3 { font-size: 13px; margin: 0; }
.hidden { display: none; } label { margin-right: 1em; } .note { color: #555; }
"""
FILTER_SCRIPT = """
document.querySelectorAll('input[data-mode]').forEach(function (box) {
  box.addEventListener('change', function () {
    document.querySelectorAll('[data-mode="' + box.dataset.mode + '"]').forEach(function (el) {
      if (el !== box) { el.classList.toggle('hidden', !box.checked); }
    });
  });
});
"""


def page_name(hardware: str, model: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{hardware}__{model}") + ".html"


def write_site(
    series: dict[Key, list[Point]], found: dict[Key, list[Change]], runs: int, out: str | Path
) -> list[Path]:
    """The site in folder `out`: index.html and one page per hardware × model; the files written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "index.html"]
    _write(written[0], _overview(series, found, runs))
    for hardware, model in sorted({(k[0], k[1]) for k in series}):
        keys = sorted(k for k in series if k[:2] == (hardware, model))
        path = out / page_name(hardware, model)
        _write(path, _model_page(hardware, model, keys, series, found))
        written.append(path)
    return written


def _write(path: Path, text: str) -> None:
    atomic_write(path, lambda handle: handle.write(text.encode()))


def _document(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{body}<script>{FILTER_SCRIPT}</script></body></html>\n"
    )


def _said(change: Change | None) -> str:
    if change is None:
        return "no change found"
    css = "regression" if change.regression else ("improvement" if change.verdict == "faster" else "")
    text = (
        f"{change.ratio:.3f}× (95% CI {change.ci95[0]:.3f}–{change.ci95[1]:.3f}): {change.verdict}"
        f"{', REGRESSION' if change.regression else ''} at run {change.at + 1} ({change.finished_at[:10]}"
        f"{', torch ' + change.torch if change.torch else ''})"
    )
    return f'<span class="{css}">{html.escape(text)}</span>'


def _mode_filter(modes: list[str]) -> str:
    boxes = "".join(
        f'<label><input type="checkbox" checked data-mode="{html.escape(m)}"> {html.escape(m)}</label>' for m in modes
    )
    return f"<p>Modes shown: {boxes}</p>"


def _overview(series: dict[Key, list[Point]], found: dict[Key, list[Change]], runs: int) -> str:
    modes = sorted({k[2] for k in series})
    rows = []
    for key in sorted(series):
        hardware, model, mode, metric = key
        points = series[key]
        latest = (found.get(key) or [None])[-1]
        link = page_name(hardware, model)
        rows.append(
            f'<tr data-mode="{html.escape(mode)}"><td>{html.escape(hardware)}</td>'
            f'<td><a href="{link}">{html.escape(model)}</a></td><td>{html.escape(mode)}</td>'
            f"<td>{html.escape(metric)}</td><td class=num>{len(points)}</td>"
            f"<td class=num>{points[-1].value:.4g}</td><td>{sparkline(points, found.get(key) or [])}</td>"
            f"<td>{_said(latest)}</td></tr>"
        )
    regressions = sum(1 for changes in found.values() if changes and changes[-1].regression)
    body = (
        f"<h1>compilebench history</h1><p>{runs} runs, {len(series)} series; {regressions} series whose latest "
        "change is a regression. A change is a change of level found over the runs and confirmed between the runs "
        "before and after it; its ratio is above 1 where the series got better (faster, a higher speedup, less "
        "memory).</p>"
        + _mode_filter(modes)
        + "<table><thead><tr><th>hardware</th><th>model</th><th>mode</th><th>metric</th><th>runs</th><th>last</th>"
        "<th>trend</th><th>latest change</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )
    return _document("compilebench history", body)


def _model_page(hardware: str, model: str, keys: list[Key], series, found) -> str:
    modes = sorted({k[2] for k in keys})
    charts = []
    for key in keys:
        changes = found.get(key) or []
        listed = "".join(f"<li>{_said(c)}</li>" for c in changes) or "<li>no change found</li>"
        charts.append(
            f'<div class="chart" data-mode="{html.escape(key[2])}"><h3>{html.escape(key[2])} · '
            f"{html.escape(key[3])}</h3>{trend_chart(series[key], changes)}<ul>{listed}</ul></div>"
        )
    body = (
        f'<p><a href="index.html">← all series</a></p><h1>{html.escape(model)} on {html.escape(hardware)}</h1>'
        '<p class="note">Each dot is a run (its value, and its 95% interval where it has one), in the order the runs '
        "finished; a red line marks the first run of a new level.</p>" + _mode_filter(modes) + "".join(charts)
    )
    return _document(f"{model} on {hardware}", body)


def _scale(values: list[float], size: float, pad: float) -> tuple[float, float]:
    low, high = min(values), max(values)
    if math.isclose(low, high):
        low, high = low * 0.95 - 1e-12, high * 1.05 + 1e-12
    return low, (size - 2 * pad) / (high - low)


def sparkline(points: list[Point], changes: list[Change], width: int = 120, height: int = 24) -> str:
    values = [p.value for p in points]
    low, per = _scale(values, height, 2)
    step = (width - 4) / max(1, len(values) - 1)
    xy = " ".join(f"{2 + i * step:.1f},{height - 2 - (v - low) * per:.1f}" for i, v in enumerate(values))
    marks = "".join(
        f'<line x1="{2 + c.at * step:.1f}" x2="{2 + c.at * step:.1f}" y1="0" y2="{height}" stroke="#b00020" />'
        for c in changes
    )
    return (
        f'<svg class="sparkline" width="{width}" height="{height}" viewBox="0 0 {width} {height}">{marks}'
        f'<polyline fill="none" stroke="#1f5fa8" stroke-width="1.5" points="{xy}" /></svg>'
    )


def trend_chart(points: list[Point], changes: list[Change], width: int = 480, height: int = 200) -> str:
    left, pad, inset = 56, 12, 10  # the first run's dot clear of the axis
    values = [p.value for p in points]
    spans = [v for p in points for v in (p.ci_low, p.ci_high) if v is not None and math.isfinite(v)]
    low, per = _scale(values + spans, height, pad)
    step = (width - left - pad - inset) / max(1, len(points) - 1)

    def y(v: float) -> float:
        return height - pad - (v - low) * per

    parts = [f'<line x1="{left}" x2="{left}" y1="{pad}" y2="{height - pad}" stroke="#999" />']
    for v in (low + (height - 2 * pad) / per * f for f in (0.0, 0.5, 1.0)):
        parts.append(f'<text x="{left - 4}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end">{v:.3g}</text>')
    for c in changes:
        x = left + inset + c.at * step
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{pad}" y2="{height - pad}" stroke="#b00020" />')
    for i, p in enumerate(points):
        x = left + inset + i * step
        if p.ci_low is not None and p.ci_high is not None:
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y(p.ci_low):.1f}" y2="{y(p.ci_high):.1f}" '
                         'stroke="#7aa6d8" />')  # fmt: skip
        title = html.escape(f"run {i + 1}, {p.finished_at}, torch {p.torch}: {p.value:.4g}")
        parts.append(f'<circle cx="{x:.1f}" cy="{y(p.value):.1f}" r="3" fill="#1f5fa8"><title>{title}</title></circle>')
    return (
        f'<svg class="trend" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'data-points="{len(points)}">{"".join(parts)}</svg>'
    )
