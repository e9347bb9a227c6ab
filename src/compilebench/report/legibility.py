"""Whether a drawn figure can be read: no text over other text, no legend over what the axes plot.

Each check works on the figure as drawn (display coordinates after layout), so it sees what a reader sees: tick
labels, titles, annotations and legend entries are boxes; bars, markers and line vertices are what a legend must
not cover.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

# Pixels two boxes may share before they count as overlapping (antialiased edges touch).
SLACK_PX = 1.0


def problems(fig: plt.Figure) -> list[str]:
    """Every pair of texts that overlap and every legend that covers plotted data, in words; empty when none."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return _texts_over_texts(fig, renderer) + _legends_over_texts(fig, renderer) + _legends_over_data(fig, renderer)


def texts(fig: plt.Figure) -> list:
    """The texts a reader sees: the figure's own, each axes' titles, axis labels, annotations, the labels of the
    ticks inside its view, and its legend's entries and title."""
    found = list(fig.texts) + ([fig._suptitle] if getattr(fig, "_suptitle", None) else [])
    for axes in fig.axes:
        found += [axes.title, axes._left_title, axes._right_title, axes.xaxis.label, axes.yaxis.label, *axes.texts]
        for axis in (axes.xaxis, axes.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if low - 1e-9 * abs(high - low) <= tick.get_loc() <= high + 1e-9 * abs(high - low):
                    found += [tick.label1, tick.label2]
        if (legend := axes.get_legend()) is not None and legend.get_visible():
            found += [*legend.get_texts(), legend.get_title()]
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def _shrunk(box: Bbox) -> Bbox:
    return Bbox.from_extents(box.x0 + SLACK_PX, box.y0 + SLACK_PX, box.x1 - SLACK_PX, box.y1 - SLACK_PX)


def _texts_over_texts(fig: plt.Figure, renderer) -> list[str]:
    boxes = [(t, _shrunk(t.get_window_extent(renderer))) for t in texts(fig)]
    said = []
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1 :]:
            if box_a.width > 0 and box_b.width > 0 and box_a.overlaps(box_b):
                said.append(f"text {a.get_text()!r} overlaps text {b.get_text()!r}")
    return said


def legends(fig: plt.Figure) -> list:
    """Every visible legend: the figure's own and each axes'."""
    found = list(fig.legends) + [axes.get_legend() for axes in fig.axes]
    return [legend for legend in found if legend is not None and legend.get_visible()]


def _legends_over_texts(fig: plt.Figure, renderer) -> list[str]:
    said = []
    for legend in legends(fig):
        box, own = _shrunk(legend.get_window_extent(renderer)), {*legend.get_texts(), legend.get_title()}
        for text in texts(fig):
            if text not in own and box.overlaps(_shrunk(text.get_window_extent(renderer))):
                said.append(f"a legend covers text {text.get_text()!r}")
    return said


def _legends_over_data(fig: plt.Figure, renderer) -> list[str]:
    said = []
    for axes in fig.axes:
        legend = axes.get_legend()
        if legend is None or not legend.get_visible():
            continue
        box = _shrunk(legend.get_window_extent(renderer))
        if not box.overlaps(axes.get_window_extent(renderer)):
            continue  # a legend placed outside the axes covers nothing of them
        covered = [what for what, shape in _plotted(axes) if box.overlaps(shape)]
        if covered:
            said.append(f"the legend of axes {axes.get_title() or axes.get_ylabel()!r} covers {covered[0]}")
    return said


def _plotted(axes) -> list[tuple[str, Bbox]]:
    """What the axes draw, each as a display box: a bar's rectangle, a marker's or a line vertex's point."""
    shapes = []
    for patch in axes.patches:
        if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_width() and patch.get_height():
            shapes.append((f"a bar ({patch.get_label() or 'unnamed'})", patch.get_window_extent()))
    points = []
    for line in axes.lines:
        if line.get_visible() and isinstance(line, Line2D) and (line.get_marker() not in (None, "None", "")):
            points += [(line.get_label(), xy) for xy in line.get_transform().transform(line.get_xydata())]
    for collection in axes.collections:
        if isinstance(collection, PathCollection) and collection.get_visible():
            offsets = collection.get_offset_transform().transform(collection.get_offsets())
            points += [(collection.get_label(), xy) for xy in offsets]
    for label, (x, y) in points:
        shapes.append((f"a point ({label})", Bbox.from_extents(x, y, x, y)))
    return shapes
