"""Figures: each a function from tidy tables to a matplotlib figure, saved as SVG (HTML) and PNG (PDF)."""

from __future__ import annotations

import textwrap
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from ..core.modes import MODE_NAMES, label, ordered  # noqa: E402
from ..core.records import COMPILE_PHASES, START_PARTS  # noqa: E402
from . import legibility  # noqa: E402
from .figure_catalog import NAMES as FIGURE_NAMES  # noqa: E402
from .figure_catalog import SECTIONS as FIGURE_SECTIONS  # noqa: E402
from .start_tables import deployed_peaks  # noqa: E402
from .suite_tables import is_suite, model_count  # noqa: E402
from .tables import inference_only  # noqa: E402

BUILTIN_COLORS = dict(zip(MODE_NAMES, sns.color_palette("colorblind", len(MODE_NAMES))))
DEFINED_COLORS = sns.color_palette("dark", 10)


def color(mode: str):
    """A mode's colour, the same in every figure and every run: defined modes hash into a second palette."""
    return BUILTIN_COLORS.get(mode) or DEFINED_COLORS[zlib.crc32(mode.encode()) % len(DEFINED_COLORS)]


@dataclass
class Tables:
    """What the figures read: the tidy tables, nothing else."""

    runs: pd.DataFrame
    samples: pd.DataFrame
    speedups: pd.DataFrame
    hardware_costs: pd.DataFrame
    scaling: pd.DataFrame
    comparison: pd.DataFrame
    compile_phases: pd.DataFrame
    stream_calls: pd.DataFrame
    compile_depth: pd.DataFrame
    start_paths: pd.DataFrame
    training: pd.DataFrame
    suite_models: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def ok(self) -> pd.DataFrame:
        return self.runs[self.runs["status"] == "ok"]


def _modes(frame: pd.DataFrame) -> list[str]:
    return ordered(frame["mode"])


def _empty(message: str) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(6, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=11, color="0.35")
    return fig


# At most this wide, a figure's 8-pt ticks still print at 7 pt or more on the PDF's 7-inch text width.
PAGE_WIDTH_IN = 8.0


def _grid(rows: list, cols: list, width: float = 3.2, height: float = 2.4):
    """A panel per row and column, the columns narrowed to fit the page width together."""
    width = min(width, PAGE_WIDTH_IN / len(cols))
    fig, axes = plt.subplots(
        len(rows), len(cols), figsize=(max(4, width * len(cols)), height * len(rows)), squeeze=False
    )
    return fig, axes


def _panels(count: int, width: float = 3.2, height: float = 2.4) -> tuple[plt.Figure, list]:
    """`count` panels, as many a row as fit the page width, the rest on the rows below; spare cells hidden."""
    cols = max(1, min(count, int(PAGE_WIDTH_IN // width)))
    rows = -(-count // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(max(4, width * cols), height * rows), squeeze=False)
    cells = list(axes.flat)
    for ax in cells[count:]:
        ax.axis("off")
    return fig, cells[:count]


def _bars(ax, frame: pd.DataFrame, value: str, low: str | None = None, high: str | None = None) -> None:
    modes = _modes(frame)
    data = frame.set_index("mode").reindex(modes)
    heights = data[value].to_numpy(dtype=float)
    yerr = None
    if low and high:
        yerr = np.vstack([heights - data[low].to_numpy(dtype=float), data[high].to_numpy(dtype=float) - heights])
        yerr = np.nan_to_num(np.clip(yerr, 0, None))
    ax.bar(range(len(modes)), heights, yerr=yerr, capsize=3, color=[color(m) for m in modes])
    ax.set_xticks(range(len(modes)), [label(m) for m in modes], rotation=35, ha="right", fontsize=8)


@dataclass(frozen=True)
class Panel:
    """What a panel per hardware entry draws: `draw(ax, subframe, models, modes)` over `frame`."""

    frame: pd.DataFrame
    draw: Callable
    ylabel: str
    title: str = ""


def _title(ax, text: str) -> None:
    """A panel's title, wrapped to the panel's width so that two panels' titles never meet."""
    chars = max(12, int(ax.get_position().width * ax.figure.get_figwidth() * TITLE_CHARS_PER_INCH))
    ax.set_title(textwrap.fill(text, chars), fontsize=9)


TITLE_CHARS_PER_INCH = 13  # at 9 points


def _legend(ax, *entries, **style) -> None:
    """The axes' legend beside them on the right, where it covers none of what they draw."""
    ax.legend(*entries, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **style)


def _per_hardware(frame: pd.DataFrame, draw: Callable, ylabel: str, beside: Panel | None = None) -> plt.Figure:
    """One full-width panel per hardware entry, the models along it; `draw(ax, subframe, models, modes)` fills
    each; `beside`, a second panel to the right of each (half width each then), where it has that entry's data."""
    hardware = sorted(frame["hardware"].unique())
    columns = [Panel(frame, draw, ylabel, "measured" if beside else ""), *([beside] if beside else [])]
    fig, axes = plt.subplots(len(hardware), len(columns), figsize=(7, 2.3 * len(hardware)), squeeze=False)
    for row, hw in zip(axes, hardware):
        for ax, panel in zip(row, columns):
            sub = panel.frame[panel.frame["hardware"] == hw]
            if sub.empty:
                ax.axis("off")
                continue
            models, modes = list(dict.fromkeys(sub["model"])), _modes(sub)
            panel.draw(ax, sub, models, modes)
            # half-width panels, or many models: names upright, so that long ones never meet
            turned = {"rotation": 90} if (beside and len(models) > 2) or len(models) > 6 else {}
            ax.set_xticks(range(len(models)), models, fontsize=8, **turned)
            ax.set_xlabel("")
            ax.set_ylabel(panel.ylabel, fontsize=8)
            if ax.get_yscale() == "log":
                _plain_log_axis(ax.yaxis, ax.get_ylim())
            ax.set_title(f"{hw}: {panel.title}" if panel.title else hw, fontsize=9)
            if not beside:
                _legend(ax, fontsize=7, frameon=False)
    if not beside:
        fig.tight_layout()
        return fig
    shown = {label: handle for ax in fig.axes for handle, label in zip(*ax.get_legend_handles_labels())}
    fig.legend(shown.values(), shown.keys(), loc="lower center", ncol=min(6, len(shown)), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.1 / len(hardware), 1, 1))  # the panels' modes in one legend below them
    return fig


def _grouped_bars(value: str, low: str | None = None, high: str | None = None) -> Callable:
    """Bars of `value` per model, one a mode side by side, with the interval from `low` to `high` where given; on a
    log axis where the values span more than 20x (models of very different sizes)."""

    def draw(ax, frame: pd.DataFrame, models: list, modes: list) -> None:
        values = frame[value].dropna()
        if len(values) and values.min() > 0 and values.max() / values.min() > 20:
            ax.set_yscale("log")
        width = 0.8 / len(modes)
        for i, mode in enumerate(modes):
            data = frame[frame["mode"] == mode].set_index("model").reindex(models)
            heights = data[value].to_numpy(dtype=float)
            spread = None
            if low and high:
                spread = np.vstack([heights - data[low].to_numpy(dtype=float),
                                    data[high].to_numpy(dtype=float) - heights])  # fmt: skip
                spread = np.nan_to_num(np.clip(spread, 0, None))
            offsets = np.arange(len(models)) + (i - (len(modes) - 1) / 2) * width
            ax.bar(offsets, heights, width, yerr=spread, capsize=2, color=color(mode), label=mode)

    return draw


def latency_by_mode(t: Tables) -> plt.Figure | str:
    """1. Median latency of each mode, grouped by model, with its 95% interval: one panel per hardware entry."""
    if t.ok.empty:
        return "No successful runs to plot."
    return _per_hardware(t.ok, _grouped_bars("median_ms", "ci95_low_ms", "ci95_high_ms"), "median latency (ms)")


def generation_throughput(t: Tables) -> plt.Figure | str:
    """2. Text generation: tokens/s and time to first token by mode."""
    gen = t.ok.dropna(subset=["tokens_per_s"])
    if gen.empty:
        return "No text-generation experiments in this run."
    keys = list(dict.fromkeys(zip(gen["hardware"], gen["model"])))
    fig, axes = _grid(keys, ["tokens/s", "ttft"])
    for i, (hw, model) in enumerate(keys):
        frame = gen[(gen["hardware"] == hw) & (gen["model"] == model)]
        _bars(axes[i][0], frame, "tokens_per_s")
        axes[i][0].set_ylabel("tokens/s")
        _title(axes[i][0], f"{model} · {hw}: throughput")
        _bars(axes[i][1], frame, "ttft_ms")
        axes[i][1].set_ylabel("time to first token (ms)")
        _title(axes[i][1], f"{model} · {hw}: first token")
    fig.tight_layout()
    return fig


def compile_cost(t: Tables) -> plt.Figure | str:
    """4. What each mode costs to compile (first call, cold cache) and what it buys."""
    sp = t.speedups[(t.speedups["status"] == "ok") & t.speedups["compile_s"].notna()].dropna(subset=["speedup"])
    if len(sp) < MIN_POINTS:
        runs = f"{len(sp)} compiled run{'s' if len(sp) != 1 else ''}"
        return f"{runs}: Table 1 gives each one's cold compile and speedup."
    several = sp["hardware"].nunique() > 1
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for mode in _modes(sp):
        frame = sp[sp["mode"] == mode]
        yerr = np.clip(
            np.vstack([frame["speedup"] - frame["speedup_ci95_low"], frame["speedup_ci95_high"] - frame["speedup"]]),
            0,
            None,
        )
        ax.errorbar(frame["compile_s"], frame["speedup"], yerr=yerr, fmt="o", color=color(mode), label=mode, capsize=3)
    ax.axhline(1.0, color="0.5", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_xlabel("first call, cold compile (s, log scale)")
    ax.set_ylabel("speedup over eager (×)")
    _legend(ax, fontsize=8)
    fig.tight_layout()
    if len(sp) <= MAX_LABELLED_POINTS:  # a suite's points go unnamed: suite_models.csv names each
        names = sp["model"] + (" · " + sp["hardware"] if several else "")
        _labels_apart(ax, list(zip(sp["compile_s"], sp["speedup"], names)))
    return fig


# A figure of fewer points than this says so in words instead: a table shows them better.
MIN_POINTS = 3
MAX_LABELLED_POINTS = 24


def _labels_apart(ax, points: list[tuple[float, float, str]], fontsize: float = 7) -> None:
    """Each point's label beside it, moved down a line at a time until it overlaps no text already drawn (labels
    placed before it, ticks, the legend); after the layout, so that nothing moves them afterwards."""
    renderer = ax.figure.canvas.get_renderer()
    ax.figure.canvas.draw()
    drawn = legibility.texts(ax.figure) + legibility.legends(ax.figure)
    taken = [artist.get_window_extent(renderer) for artist in drawn]
    for x, y, name in sorted(points, key=lambda point: -point[1]):
        for step in range(LABEL_STEPS):
            label = ax.annotate(name, (x, y), fontsize=fontsize, xytext=(5, 2 - step * fontsize * 1.2),
                                textcoords="offset points")  # fmt: skip
            box = label.get_window_extent(renderer)
            if step == LABEL_STEPS - 1 or not any(box.overlaps(other) for other in taken):
                break
            label.remove()
        taken.append(box)


LABEL_STEPS = 40


def _plain_log_axis(axis, limits: tuple[float, float]) -> None:
    """A log axis labelled at 1, 2 and 5 times each power of ten in view (at each power alone where it spans more
    than two decades, so that the labels keep apart), in plain numbers, its minor ticks unlabelled: matplotlib
    labels every minor tick of an axis spanning less than a decade, and they crowd."""
    low, high = sorted(limits)
    if low <= 0:
        return
    steps = (1, 2, 5) if high / low <= 100 else (1,)
    values = [m * 10.0**e for e in range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1)
              for m in steps if low <= m * 10.0**e <= high]  # fmt: skip
    _label_log_axis(axis, values or [low, high])


def _label_log_axis(axis, values: list[float]) -> None:
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axis.set_major_locator(matplotlib.ticker.FixedLocator(values))
    axis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))


def _log_ratio_axis(ax, which: str = "x") -> None:
    """An axis (x or y) of ratios on a log scale: as `_plain_log_axis`, and near 1 at the ratios a reader
    compares."""
    axis, limits = (ax.xaxis, ax.get_xlim()) if which == "x" else (ax.yaxis, ax.get_ylim())
    low, high = sorted(limits)
    if high / low > 4:
        _plain_log_axis(axis, (low, high))
        return
    _label_log_axis(axis, [v for v in (0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 2.0) if low <= v <= high] or [1.0])


def latency_distributions(t: Tables) -> plt.Figure | str:
    """5. Every timed call's latency, a box per mode beside the others, grouped by model: one panel per hardware."""
    if t.samples.empty:
        return "No latency samples in this run."

    def boxes(ax, frame: pd.DataFrame, models: list, modes: list) -> None:
        sns.boxplot(data=frame, x="model", y="latency_ms", hue="mode", order=models, hue_order=modes,
                    palette={m: color(m) for m in modes}, ax=ax, fliersize=2, log_scale=True)  # fmt: skip

    return _per_hardware(t.samples, boxes, "latency (ms)")


def hardware_comparison(t: Tables) -> plt.Figure | str:
    """6. p90 latency normalized to a baseline hardware; cost per million inferences where priced."""
    frame = t.hardware_costs
    if frame["hardware"].nunique() < 2 and frame["cost_per_million"].isna().all():
        return "One hardware entry and no prices: nothing to compare."
    frame = frame.assign(label=frame["model"] + " / " + frame["mode"].map(label))
    priced = frame.dropna(subset=["cost_per_million"])
    panels = 2 if not priced.empty else 1
    fig, axes = plt.subplots(panels, 1, figsize=(6.5, (0.3 * frame["label"].nunique() + 2) * panels), squeeze=False)
    sns.barplot(data=frame, y="label", x="relative_p90", hue="hardware_label", ax=axes[0][0], orient="h")
    axes[0][0].axvline(1.0, color="0.4", lw=0.8, ls="--")
    axes[0][0].set_xlabel(f"p90 latency relative to {frame['baseline_hardware'].iloc[0]}")
    axes[0][0].set_ylabel("")
    if not priced.empty:
        sns.barplot(data=priced, y="label", x="cost_per_million", hue="hardware_label", ax=axes[1][0], orient="h")
        axes[1][0].set_xlabel("cost per million inferences (price units)")
        axes[1][0].set_ylabel("")
    for ax in axes[:, 0]:
        if ax.get_legend() is not None:
            sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return fig


def peak_memory(t: Tables) -> plt.Figure | str:
    """7. Peak memory of each mode, grouped by model: in its measuring process (GPU allocator peak; CPU peak RSS over
    the pre-model baseline, eager and the mode held at once), and beside it, where the run timed starts, each mode
    started alone on its deployed path (the whole process's peak, as users run it)."""
    ok = inference_only(t.ok).dropna(subset=["peak_memory_bytes"])  # a training step's is Appendix B's, per side
    if ok.empty:
        return "No memory measurements in this run."
    ok = ok.assign(peak_mib=ok["peak_memory_bytes"] / 2**20)
    alone = deployed_peaks(t.start_paths)
    if alone.empty:
        return _per_hardware(ok, _grouped_bars("peak_mib"), "peak memory (MiB)")
    alone = Panel(alone.assign(peak_mib=alone["peak_bytes"] / 2**20), _grouped_bars("peak_mib"),
                  "process peak (MiB)", "started alone, as deployed")  # fmt: skip
    return _per_hardware(ok, _grouped_bars("peak_mib"), "peak over baseline (MiB)", beside=alone)


def scaling(t: Tables) -> plt.Figure | str:
    """8. Latency, throughput and speedup against the swept setting, one row per swept model and hardware."""
    frame = t.scaling
    if frame.empty:
        return "No model has a sweep in this run."
    keys = list(dict.fromkeys(zip(frame["sweep_of"], frame["hardware"])))
    throughput = "tokens_per_s" if frame["tokens_per_s"].notna().any() else "samples_per_s"
    panels = [("median_ms", "ci95_low_ms", "ci95_high_ms", "median latency (ms)"),
              (throughput, None, None, throughput.replace("_per_s", "/s")),
              ("speedup", "speedup_ci95_low", "speedup_ci95_high", "speedup over eager (×)")]  # fmt: skip
    fig, axes = _grid(keys, panels, width=3.6)
    for i, (model, hardware) in enumerate(keys):
        sub = frame[(frame["sweep_of"] == model) & (frame["hardware"] == hardware)]
        for j, (value, low, high, ylabel) in enumerate(panels):
            ax = axes[i][j]
            for (mode, series), line in sub.groupby(["mode", "series"], sort=False, dropna=False):
                line = line.dropna(subset=[value])
                if line.empty:
                    continue
                yerr = None
                if low:
                    yerr = np.clip(np.vstack([line[value] - line[low], line[high] - line[value]]), 0, None)
                name = mode if not isinstance(series, str) or not series else f"{mode} · {series}"
                ax.errorbar(line["value"], line[value], yerr=yerr, marker="o", capsize=3, color=color(mode), label=name)
            if value == "speedup":
                ax.axhline(1.0, color="0.5", lw=0.8, ls="--")
            if sub["swept"].iloc[0] != "dtype":
                values = sorted(sub["value"].unique())
                ax.set_xscale("log", base=2)
                ax.set_xticks(values, [f"{v:g}" for v in values])
                ax.minorticks_off()
            ax.set_xlabel(sub["swept"].iloc[0])
            ax.set_ylabel(ylabel)
            _title(ax, f"{model} · {hardware}")
        _legend(axes[i][0], fontsize=7)
    fig.tight_layout()
    return fig


VERDICT_COLORS = dict(zip(("faster", "slower", "same", "unclear"), sns.color_palette("colorblind", 4)))


def comparison(t: Tables) -> plt.Figure | str:
    """9. A forest plot: each experiment on each hardware entry against the baseline entry, the ratio with its
    interval coloured by verdict, the band of `same` shaded; the geometric means as diamonds."""
    frame = t.comparison
    if frame.empty:
        return "One hardware entry ran: there is no other to compare with the baseline."
    rows = list(frame.itertuples())[::-1]  # the table's first row on top
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.28 * len(rows)))
    threshold = float(frame["threshold"].iloc[0])
    ax.axvspan(1 - threshold, 1 + threshold, color="0.88", zorder=0)
    ax.axvline(1.0, color="0.45", lw=0.8, zorder=1)
    for y, row in enumerate(rows):
        error = [[row.ratio - row.ratio_ci95_low], [row.ratio_ci95_high - row.ratio]]
        marker = "D" if row.scope == "geomean" else "o"
        ax.errorbar(row.ratio, y, xerr=error, fmt=marker, color=VERDICT_COLORS[row.verdict], capsize=2.5, ms=4)
    labels = [
        f"{r.hardware} · {r.model} · {r.mode}"
        if r.scope == "experiment"
        else f"{r.hardware} · geometric mean · {r.mode}"
        for r in rows
    ]
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.set_xscale("log")
    _log_ratio_axis(ax)
    ax.set_xlabel(f"ratio of medians, {frame['baseline_hardware'].iloc[0]} / entry (above 1: faster than baseline)")
    handles = [plt.Line2D([], [], marker="o", ls="", color=c, label=v) for v, c in VERDICT_COLORS.items()]
    handles.append(plt.Rectangle((0, 0), 1, 1, color="0.88", label=f"same: 1 ± {threshold:g}"))
    _legend(ax, handles=handles, fontsize=7)
    fig.tight_layout()
    return fig


PHASE_COLORS = dict(
    zip((*COMPILE_PHASES, "unexplained"), [*sns.color_palette("Set2", len(COMPILE_PHASES)), (0.75, 0.75, 0.75)])
)


def compile_phase_bars(t: Tables) -> plt.Figure | str:
    """10. Each compiled run's cold and warm start as stacked bars of torch's compile phases."""
    frame = t.compile_phases[t.compile_phases["start"].isin(["cold", "warm"])]
    if frame.empty:
        return "No compiled run recorded torch's compile phases."
    bars = list(frame.groupby(["hardware", "model", "mode", "start"], sort=False))
    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.32 * len(bars)))
    shown = set()
    for y, (_, rows) in enumerate(bars):
        left = 0.0
        for row in rows.itertuples():
            ax.barh(
                y,
                row.seconds,
                left=left,
                color=PHASE_COLORS[row.phase],
                label=None if row.phase in shown else row.phase,
            )
            shown.add(row.phase)
            left += max(row.seconds, 0)
    ax.set_yticks(range(len(bars)), [f"{m} · {mode} · {start} ({hw})" for (hw, m, mode, start), _ in bars], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("seconds to the first result")
    ax.legend(fontsize=7, ncol=4, loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def pay_off(t: Tables) -> plt.Figure | str:
    """11. Cumulative time against calls, eager against each compiled mode, cold and warm: where they cross,
    compiling has paid for itself."""
    ok = t.ok
    eager = ok[ok["mode"] == "eager"].set_index(["hardware", "model"])
    compiled = ok[
        (ok["mode"] != "eager") & ok["compile_s"].notna() & ok.set_index(["hardware", "model"]).index.isin(eager.index)
    ]
    if compiled.empty:
        return "No compiled run with an eager run to set it against."
    panels = list(dict.fromkeys(zip(compiled["hardware"], compiled["model"])))
    fig, axes = _panels(len(panels), width=3.4, height=2.3)
    calls = np.logspace(0, 7, 200)
    for ax, (hardware, model) in zip(axes, panels):
        base = eager.loc[(hardware, model)]
        ax.plot(
            calls, base["first_call_s"] + (calls - 1) * base["median_ms"] / 1e3, color=color("eager"), label="eager"
        )
        for row in compiled[(compiled["hardware"] == hardware) & (compiled["model"] == model)].itertuples():
            per_call = (calls - 1) * row.median_ms / 1e3
            ax.plot(calls, row.compile_s + per_call, color=color(row.mode), label=f"{row.mode} (cold)")
            if pd.notna(row.compile_warm_s):
                ax.plot(
                    calls, row.compile_warm_s + per_call, color=color(row.mode), ls="--", label=f"{row.mode} (warm)"
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        _title(ax, f"{model} · {hardware}")
        ax.set_xlabel("calls")
        ax.set_ylabel("cumulative time (s)")
        _legend(ax, fontsize=7)
    fig.tight_layout()
    return fig


def _model_panels(frame: pd.DataFrame, model_column: str, width: float):
    """One panel per model and hardware, as they first appear: the figure, its axes, and each panel's axes, model,
    hardware and rows."""
    keys = list(dict.fromkeys(zip(frame[model_column], frame["hardware"])))
    fig, axes = _panels(len(keys), width=width, height=3.0)
    rows = [frame[(frame[model_column] == model) & (frame["hardware"] == hardware)] for model, hardware in keys]
    return fig, [(ax, *key, sub) for ax, key, sub in zip(axes, keys, rows)]


def stream_time(t: Tables) -> plt.Figure | str:
    """12. Cumulative time over each shape stream, eager and each mode, compiles marked."""
    frame = t.stream_calls
    if frame.empty:
        return "No model has a shape stream in this run."
    fig, panels = _model_panels(frame, "model", width=4.0)
    for ax, model, hardware, sub in panels:
        first = "eager" if (sub["mode"] == "eager").any() else sub["mode"].iloc[0]
        eager = sub[sub["mode"] == first]  # eager's own pass, timed beside a mode in its job
        ax.plot(eager["call"], eager["eager_ms"].cumsum() / 1e3, color=color("eager"), label="eager", lw=1.5)
        for mode, calls in sub[sub["mode"] != "eager"].groupby("mode", sort=False):
            total = calls["latency_ms"].cumsum() / 1e3
            ax.plot(calls["call"], total, color=color(mode), label=mode, lw=1.5)
            compiled = calls["compiled"].astype(bool).to_numpy()
            ax.scatter(calls["call"][compiled], total[compiled], color=color(mode), marker="x", s=30, zorder=3)
        ax.set_yscale("log")
        ax.set_xlabel(f"call ({sub['axis'].iloc[0]} varies)")
        ax.set_ylabel("cumulative time (s)")
        _title(ax, f"{model} · {hardware}")
        _legend(ax, fontsize=7)
    fig.tight_layout()
    return fig


def compile_depth(t: Tables) -> plt.Figure | str:
    """13. Cold compile seconds against depth, one line per compiling mode, each with its trend per layer."""
    frame = t.compile_depth
    if frame.empty:
        return "No model is swept over num_hidden_layers in this run."
    fig, panels = _model_panels(frame, "sweep_of", width=3.6)
    for ax, model, hardware, sub in panels:
        for mode in _modes(sub):
            line = sub[sub["mode"] == mode]
            has_ci = line["compile_ci95_low"].notna() & line["compile_ci95_high"].notna()
            low = (line["compile_s"] - line["compile_ci95_low"]).where(has_ci, 0).clip(lower=0)
            high = (line["compile_ci95_high"] - line["compile_s"]).where(has_ci, 0).clip(lower=0)
            slope = line["slope_s_per_layer"].iloc[0]
            trend = f" ({slope:+.2f} s/layer)" if pd.notna(slope) else ""
            ax.errorbar(
                line["num_hidden_layers"], line["compile_s"], yerr=[low, high], fmt="o-", capsize=3,
                color=color(mode), label=f"{mode}{trend}",
            )  # fmt: skip
        ax.set_xlabel("num_hidden_layers")
        ax.set_ylim(bottom=0)
        _title(ax, f"{model} · {hardware}")
        ax.set_ylabel("cold compile (s)")
        _legend(ax, fontsize=7)
    fig.tight_layout()
    return fig


START_PART_COLORS = dict(zip(START_PARTS, sns.color_palette("Set2", len(START_PARTS))))


def starts(t: Tables) -> plt.Figure | str:
    """14. From process start to first output: each path's median parts stacked, its interval on the total, and
    eager's start as the floor; a path that could not start says why in short."""
    frame = t.start_paths
    if frame.empty:
        return "No experiment times its starts (measure.starts)."
    keys = list(dict.fromkeys(zip(frame["hardware"], frame["model"], frame["mode"])))
    paths = frame.groupby(["hardware", "model", "mode"]).size().max()
    fig, axes = plt.subplots(len(keys), 1, figsize=(7, (0.9 + 0.35 * paths) * len(keys)), squeeze=False)
    for ax, key in zip(axes[:, 0], keys):
        sub = frame[(frame["hardware"] == key[0]) & (frame["model"] == key[1]) & (frame["mode"] == key[2])]
        sub = sub.reset_index(drop=True)
        ok = sub["status"] == "ok"
        left = np.zeros(len(sub))
        for part in START_PARTS:
            widths = sub[part].where(ok, 0).fillna(0).to_numpy(dtype=float)
            ax.barh(sub.index, widths, left=left, color=START_PART_COLORS[part], label=part.removesuffix("_s"))
            left += widths
        totals = sub["total_s"].to_numpy(dtype=float)
        err = np.vstack([totals - sub["total_ci95_low"], sub["total_ci95_high"] - totals])
        ax.errorbar(totals, sub.index, xerr=np.nan_to_num(np.clip(err, 0, None)), fmt="none", ecolor="0.2", capsize=3)
        for i, row in sub[~ok].iterrows():
            ax.text(0, i, f" {row['status']}: {str(row['reason'] or '')[:60]}", va="center", fontsize=7, color="0.35")
        eager = sub.loc[sub["path"] == "eager", "total_s"]
        if not eager.dropna().empty:
            ax.axvline(float(eager.iloc[0]), color="0.3", ls="--", lw=1, label="eager's start")
        ax.set_yticks(sub.index, sub["path"], fontsize=8)
        ax.invert_yaxis()
        _title(ax, f"{key[1]} · {key[2]} · {key[0]}")
        ax.set_xlabel("seconds from process start to first output")
    _legend(axes[0][0], fontsize=7)
    fig.tight_layout()
    return fig


TRAINING_PARTS = {"forward_ms": "forward + loss", "backward_ms": "backward", "optimizer_ms": "optimizer step"}
TRAINING_PART_COLORS = dict(zip(TRAINING_PARTS, sns.color_palette("Set2", len(TRAINING_PARTS))))


def training_steps(t: Tables) -> plt.Figure | str:
    """11. Each training experiment's optimizer step per mode, eager first: forward, backward and optimizer stacked
    (timed part by part), the interleaved median step with its interval as a dot; a mode compiled whole is one bar."""
    frame = t.training[t.training["status"] == "ok"]
    if frame.empty:
        return "No model has a training step (`train:`) that ran in this run."
    keys = list(dict.fromkeys(zip(frame["hardware"], frame["model"])))
    modes = frame.groupby(["hardware", "model"]).size().max()
    fig, axes = plt.subplots(len(keys), 1, figsize=(7, (1.0 + 0.45 * modes) * len(keys)), squeeze=False)
    for ax, (hardware, model) in zip(axes[:, 0], keys):
        sub = frame[(frame["hardware"] == hardware) & (frame["model"] == model)]
        bars = _training_bars(sub)
        for i, (_, parts, total, low, high) in enumerate(bars):
            left = 0.0
            for part, width in parts.items():
                ax.barh(
                    i,
                    width,
                    left=left,
                    color=TRAINING_PART_COLORS[part],
                    label=TRAINING_PARTS[part] if i == 0 else None,
                )
                left += width
            if not parts:
                ax.barh(i, total, color="0.75", label="whole step (compiled as one)")
            ax.errorbar(
                total, i, xerr=[[max(total - low, 0)], [max(high - total, 0)]], fmt="o", color="0.15", ms=3, capsize=3
            )
        ax.set_yticks(range(len(bars)), [name for name, *_ in bars], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("ms per optimizer step (dot: interleaved median, 95% interval)")
        _title(ax, f"{model} · {hardware}")
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles))
        _legend(ax, unique.values(), unique.keys(), fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


def _training_bars(sub: pd.DataFrame) -> list[tuple[str, dict, float, float, float]]:
    """(name, parts, median step, low, high) for eager, then each mode in display order."""
    rows = sub.set_index("mode")
    eager_row = rows.loc["eager"] if "eager" in rows.index else rows.iloc[0]
    eager_total = float(eager_row["step_ms"] if "eager" in rows.index else eager_row["eager_step_ms"])
    low, high = (
        (eager_row["step_ci95_low"], eager_row["step_ci95_high"]) if "eager" in rows.index else (eager_total,) * 2
    )
    bars = [("eager", _parts(eager_row, "eager"), eager_total, float(low), float(high))]
    for mode in _modes(sub):
        if mode != "eager":
            row = rows.loc[mode]
            bars.append((label(mode), _parts(row, "mode"), float(row["step_ms"]), float(row["step_ci95_low"]),
                         float(row["step_ci95_high"])))  # fmt: skip
    return bars


def _parts(row: pd.Series, side: str) -> dict[str, float]:
    parts = {part: row.get(f"{side}_{part}") for part in TRAINING_PARTS}
    return {part: float(value) for part, value in parts.items() if pd.notna(value)}


def suite_speedups(t: Tables) -> plt.Figure | str:
    """0. A suite's speedups: per mode, its passing models sorted by speedup, each with its interval."""
    if not is_suite(t.runs):
        return f"A run of {model_count(t.runs)} models, not a suite: Table 1 gives each speedup."
    passing = t.suite_models[t.suite_models["passed"] == True].dropna(subset=["speedup"])  # noqa: E712
    if passing.empty:
        return "No model passed in a compiling mode."
    hardware = list(dict.fromkeys(passing["hardware"]))
    fig, axes = plt.subplots(1, len(hardware), figsize=(6.5 if len(hardware) == 1 else 3.4 * len(hardware), 3.4))
    for ax, hw in zip(np.atleast_1d(axes), hardware):
        for mode in _modes(passing[passing["hardware"] == hw]):
            rows = passing[(passing["hardware"] == hw) & (passing["mode"] == mode)].sort_values("speedup")
            rank = np.arange(1, len(rows) + 1)
            geomean = float(np.exp(np.log(rows["speedup"].astype(float)).mean()))
            ax.fill_between(rank, rows["speedup_ci95_low"], rows["speedup_ci95_high"], color=color(mode), alpha=0.2)
            ax.plot(rank, rows["speedup"], color=color(mode), lw=1.5, label=f"{mode} (geomean {geomean:.2f}×)")
        ax.axhline(1.0, color="0.4", lw=0.8, ls="--")
        ax.set_yscale("log")
        _log_ratio_axis(ax, "y")
        ax.set_xlabel("models, sorted by speedup")
        ax.set_ylabel("speedup over eager (×, log scale)")
        if len(hardware) > 1:
            _title(ax, hw)
        _legend(ax, fontsize=7)
    fig.tight_layout()
    return fig


def _not_for_a_suite(draw: Callable[[Tables], plt.Figure | str]) -> Callable[[Tables], plt.Figure | str]:
    """A figure of one group or panel per model: a suite's would be unreadable, so it says where the numbers are."""

    def drawn(t: Tables) -> plt.Figure | str:
        if is_suite(t.runs):
            return (
                f"A suite of {model_count(t.runs)} models: Figure 1 draws every speedup, suite_models.csv each model."
            )
        return draw(t)

    return drawn


# Each figure's drawing: a figure, or in words why there is nothing to draw.
FIGURES: dict[str, Callable[[Tables], plt.Figure | str]] = {
    "suite": suite_speedups,
    "latency": _not_for_a_suite(latency_by_mode),
    "memory": _not_for_a_suite(peak_memory),
    "generation": generation_throughput,
    "hardware": hardware_comparison,
    "scaling": scaling,
    "streams": stream_time,
    "pay_off": _not_for_a_suite(pay_off),
    "starts": starts,
    "compile_depth": compile_depth,
    "comparison": comparison,
    "training": training_steps,
    "distributions": _not_for_a_suite(latency_distributions),
    "compile_phases": _not_for_a_suite(compile_phase_bars),
    "compile_cost": compile_cost,
}


assert tuple(FIGURES) == FIGURE_NAMES, "figure_catalog.FIGURES must declare FIGURES in order"


def load_tables(*paths: str | Path) -> Tables:
    """The tables the figures read, in the order of `Tables`' fields."""
    return Tables(*(pd.read_csv(path) for path in paths))


def _save(fig: plt.Figure, handle, *, fmt: str, metadata: dict | None) -> None:
    fig.savefig(handle, format=fmt, dpi=150, bbox_inches="tight", metadata=metadata)


def render(name: str, tables: Tables, outputs: list[str | Path]) -> str | None:
    """Draw figure `name` and save it to each output (format from the suffix), atomically; where there is nothing
    to draw, a panel that says why, and the why returned."""
    from ..core.files import atomic_write

    sns.set_theme(style="whitegrid", context="paper")
    drawn = FIGURES[name](tables)
    fig = _empty(drawn) if isinstance(drawn, str) else drawn
    try:
        for out in outputs:
            fmt = Path(out).suffix.lstrip(".")
            metadata = {"Date": None} if fmt == "svg" else None  # reproducible SVGs: no timestamp
            atomic_write(out, partial(_save, fig, fmt=fmt, metadata=metadata))
    finally:
        plt.close(fig)
    return drawn if isinstance(drawn, str) else None


def render_all(tables: Tables, outputs_of: Callable[[str], list[str | Path]], manifest: str | Path) -> None:
    """Every figure, then the manifest the paper reads: each figure in order, its section, and why it was not
    drawn where it was not (None where it was)."""
    from ..core.files import write_json

    entries = [
        {"name": name, "section": FIGURE_SECTIONS[name], "not_drawn": render(name, tables, outputs_of(name))}
        for name in FIGURES
    ]
    write_json(manifest, {"figures": entries})
