"""A static site of a history: an overview of every series with its last change and a sparkline, and a page per
hardware × model with a trend chart per metric (each run's value and interval, change points marked), filterable
by mode. Plain HTML and inline SVG: it opens from disk, without a server or the network."""

from __future__ import annotations

import dataclasses
import hashlib
import html
import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path

from ..core.errors import UserError
from .changes import Change, Key, Point
from .store import metric_kind

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; width: 100%; } th, td { padding: 3px 8px; border-bottom: 1px solid #ddd; }
th { text-align: left; background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.regression { color: #b00020; font-weight: 600; } .improvement { color: #0a7d32; }
.chart { display: inline-block; margin: 0 1em 1em 0; vertical-align: top; } .chart h3 { font-size: 13px; margin: 0; }
.hidden { display: none; } label { margin-right: 1em; } .note { color: #555; }
body[data-x="date"] .x-torch, body[data-x="torch"] .x-date { display: none; }
"""
FILTER_SCRIPT = """
document.querySelectorAll('input[data-mode]').forEach(function (box) {
  box.addEventListener('change', function () {
    document.querySelectorAll('[data-mode="' + box.dataset.mode + '"]').forEach(function (el) {
      if (el !== box) { el.classList.toggle('hidden', !box.checked); }
    });
  });
});
document.querySelectorAll('input[name="x-axis"]').forEach(function (radio) {
  radio.addEventListener('change', function () { document.body.dataset.x = radio.value; });
});
"""
X_AXES = {"date": "run date", "torch": "torch version"}


def page_name(hardware: str, model: str) -> str:
    """A page per hardware × model, named so that no two pairs share a page (`cpu__a`/`b` and `cpu`/`a__b` would
    under a plain join): the readable name, then a digest of the pair itself."""
    readable = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{hardware}__{model}")
    digest = hashlib.sha256(json.dumps([hardware, model]).encode()).hexdigest()[:8]
    return f"{readable}-{digest}.html"


# The file a site this module wrote holds, so that `report OUT` replaces its own site and nothing else.
SITE_MARK = ".compilebench-history-site"


def shown(series: dict[Key, list[Point]]) -> dict[Key, tuple[str, list[Point]]]:
    """Each series as the site shows it: its metric's label and its points, memory in MB rather than bytes."""
    out = {}
    for key, points in series.items():
        if metric_kind(key[3]) == "peak_bytes":
            scaled = [dataclasses.replace(p, value=p.value / 1e6, replicates=[]) for p in points]
            out[key] = (f"{key[3]} (MB)", scaled)
        else:
            out[key] = (key[3], points)
    return out


def write_site(
    series: dict[Key, list[Point]], found: dict[Key, list[Change]], runs: int, out: str | Path
) -> list[Path]:
    """The site in folder `out`: index.html and one page per hardware × model; the files written. Written whole into
    a folder beside `out`, then put in its place, so that a full disk or a kill leaves the earlier site or none,
    never half of one; `out` must be missing, empty, or a site this wrote (its `SITE_MARK`)."""
    out = Path(out)
    refuse_foreign_out(out)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent if out.parent.is_dir() else None))
    try:
        series = shown(series)
        pages = {"index.html": _overview(series, found, runs)}
        for hardware, model in sorted({(k[0], k[1]) for k in series}):
            keys = sorted(k for k in series if k[:2] == (hardware, model))
            pages[page_name(hardware, model)] = _model_page(hardware, model, keys, series, found)
        for name, text in pages.items():
            (staging / name).write_text(text)
        (staging / SITE_MARK).write_text("written by compilebench history report\n")
        staging.chmod(0o755)
        if out.is_dir():
            shutil.rmtree(out)
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [out / name for name in pages]


def refuse_foreign_out(out: Path) -> None:
    """`report OUT` writes only where it may replace what is there: nothing, an empty folder, or its own site."""
    if out.is_symlink():
        raise UserError(f"{out} is a link: expected a folder to write the history site into (or nothing there yet).")
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file: expected a folder to write the history site into (or nothing there yet).")
    if out.is_dir() and any(out.iterdir()) and not (out / SITE_MARK).is_file():
        raise UserError(
            f"{out} holds files that `compilebench history report` did not write: expected an empty folder, a "
            "path that does not exist yet, or a site written here before (which is replaced)."
        )


def _document(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<style>{STYLE}</style></head><body data-x="date">{body}<script>{FILTER_SCRIPT}</script></body></html>\n'
    )


def _axis_choice() -> str:
    radios = "".join(
        f'<label><input type="radio" name="x-axis" value="{key}"{" checked" if key == "date" else ""}> {words}</label>'
        for key, words in X_AXES.items()
    )
    return f"<p>Runs labelled by: {radios}</p>"


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


def _overview(series: dict[Key, tuple[str, list[Point]]], found: dict[Key, list[Change]], runs: int) -> str:
    modes = sorted({k[2] for k in series})
    rows = []
    for key in sorted(series):
        hardware, model, mode, _ = key
        metric, points = series[key]
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
            f"{html.escape(series[key][0])}</h3>{trend_chart(series[key][1], changes)}<ul>{listed}</ul></div>"
        )
    body = (
        f'<p><a href="index.html">← all series</a></p><h1>{html.escape(model)} on {html.escape(hardware)}</h1>'
        '<p class="note">Each dot is a run (its value, and its 95% interval where it has one), in the order the runs '
        "finished; a red line marks the first run of a new level, a dotted one the first run on another torch.</p>"
        + _axis_choice()
        + _mode_filter(modes)
        + "".join(charts)
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


def x_labels(points: list[Point]) -> dict[str, list[tuple[int, str]]]:
    """Where each x axis labels the runs: by date, the first run of each day (at most six, first and last kept); by
    torch version, the first run on each version."""
    days = [
        (i, p.finished_at[:10])
        for i, p in enumerate(points)
        if i == 0 or p.finished_at[:10] != points[i - 1].finished_at[:10]
    ]
    if len(days) > 6:
        keep = {round(k * (len(days) - 1) / 5) for k in range(6)}
        days = [day for k, day in enumerate(days) if k in keep]
    versions = [(i, p.torch or "?") for i, p in enumerate(points) if i == 0 or p.torch != points[i - 1].torch]
    return {"date": days, "torch": versions}


def trend_chart(points: list[Point], changes: list[Change], width: int = 480, height: int = 216) -> str:
    left, pad, inset, below = 56, 12, 10, 16  # the first run's dot clear of the axis; the x labels under it
    values = [p.value for p in points]
    spans = [v for p in points for v in (p.ci_low, p.ci_high) if v is not None and math.isfinite(v)]
    low, per = _scale(values + spans, height - below, pad)
    step = (width - left - pad - inset) / max(1, len(points) - 1)

    def y(v: float) -> float:
        return height - below - pad - (v - low) * per

    bottom = height - below - pad
    parts = [f'<line x1="{left}" x2="{left}" y1="{pad}" y2="{bottom}" stroke="#999" />']
    for axis, labels in x_labels(points).items():
        marks = []
        for i, text in labels:
            x = left + inset + i * step
            marks.append(
                f'<text x="{x:.1f}" y="{height - 4}" font-size="10" text-anchor="middle">{html.escape(text)}</text>'
            )
            if axis == "torch" and i:
                marks.append(f'<line x1="{x - step / 2:.1f}" x2="{x - step / 2:.1f}" y1="{pad}" y2="{bottom}" '
                             'stroke="#555" stroke-dasharray="2,3" />')  # fmt: skip
        parts.append(f'<g class="x-{axis}">{"".join(marks)}</g>')
    for v in (low + (height - below - 2 * pad) / per * f for f in (0.0, 0.5, 1.0)):
        parts.append(f'<text x="{left - 4}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end">{v:.3g}</text>')
    for c in changes:
        x = left + inset + c.at * step
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{pad}" y2="{bottom}" stroke="#b00020" />')
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
