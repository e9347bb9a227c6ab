"""Every figure of the paper, declared once: its name, the paper section that shows it, the sentence before it, its
caption. The order is the order a reader meets them (their numbers); `figures.FIGURES` draws them, each from the
tidy tables (`layout.FIGURE_TABLES`). Torch- and matplotlib-free, so that the workflow reads it when it starts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FigureSpec:
    name: str
    section: str  # the paper section (the template's) that shows it
    lead: str | None  # what the text before it says it shows; None where the paper computes it (memory)
    caption: str  # reStructuredText, as Snakemake's report reads it: ``literals``


FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec(
        "suite",
        "suite",
        "draws every passing model's speedup, sorted, one line per mode",
        (
            "The run as a suite: for each mode, the speedup over eager of every model that passed (ran, and its output "
            "passed the accuracy rule), sorted from slowest to fastest, with each model's bootstrap 95% interval as a "
            "band (log scale; one panel per hardware entry). The dashed line is no change; each mode's legend entry "
            "gives its geometric-mean speedup with the interval of the suite table. Each model's row is in "
            "``suite_models.csv``."
        ),
    ),
    FigureSpec(
        "latency",
        "answer",
        "draws Table 1's medians with their intervals, each model's modes side by side",
        (
            "Median inference latency of each mode, grouped by model, one panel per hardware entry. Error bars are "
            "bootstrap 95% intervals of the median over the timed calls (warm-up and the first, compiling call "
            "excluded). Lower is better; Table 1 gives each figure and its speedup over eager."
        ),
    ),
    FigureSpec(
        "memory",
        "results",
        None,
        (
            "Peak memory of each mode, grouped by model, one row per hardware entry. Measured (left, or the only "
            "panel): in each measuring process, on a GPU the caching allocator's peak allocated bytes; on the CPU the "
            "process's peak resident set size over its baseline before the model was built (compile workers excluded) "
            "— eager and the mode held at once, so a mode's bar includes eager's copy. Started alone, as deployed "
            "(right, where the run timed starts): the whole process's peak when each mode starts fresh on its most "
            "prepared path (package, then precompiled, artifacts, warm, cold) and eager's own start, compile included "
            "— the memory a user running only that mode needs."
        ),
    ),
    FigureSpec(
        "generation",
        "results",
        "shows text generation per mode: tokens a second and the time to the first token",
        (
            "Text generation: greedy decoding of a fixed number of new tokens with a static KV cache. Left, tokens "
            "per second over the whole generation (prefill included); right, time to first token. Medians over the "
            "timed generations."
        ),
    ),
    FigureSpec(
        "hardware",
        "results",
        (
            "sets each hardware entry's p90 latency against the baseline entry's and, where prices are given, "
            "the cost of a million inferences"
        ),
        (
            "Hardware comparison: p90 latency of each model and mode relative to the baseline hardware entry (left; "
            "below 1 is faster), and the cost of a million inferences at each entry's configured price per hour, from "
            "the median latency (right, where prices are configured)."
        ),
    ),
    FigureSpec(
        "scaling",
        "scaling",
        "draws how latency, throughput and the speedup over eager move with the swept setting",
        (
            "Scaling. For each model with a sweep, median latency (with its 95% interval), throughput, and speedup "
            "over eager (with its 95% interval) against the swept setting, one line per mode. A speedup line falling "
            "towards 1 shows where compiling stops paying."
        ),
    ),
    FigureSpec(
        "streams",
        "streams",
        "draws each stream's cumulative time, compiles marked where they happened",
        (
            "Cumulative time over each shape stream (a model's ``stream:``, measured as ``MODEL.stream``): eager and "
            "each mode, call by call in the order called, from the mode's first pass (compiles included); a cross "
            "marks each call that compiled or recompiled. Where a mode's line falls below eager's, it has paid for "
            "its compiles."
        ),
    ),
    FigureSpec(
        "pay_off",
        "pay-off",
        ("draws cumulative time against calls: where a mode's line crosses eager's, compiling has paid off"),
        (
            "When compiling pays off: cumulative time against the number of calls (log axes) for eager (its own first "
            "call, then its median per call) and each compiled mode (its cold compile, solid, or warm start, dashed, "
            "then its median per call). Where a mode's line crosses eager's, compiling has paid for itself; the table "
            "that follows gives the break-even counts with their 95% intervals."
        ),
    ),
    FigureSpec(
        "starts",
        "starts",
        "stacks each start path's parts from spawn to first output, eager's start the floor",
        (
            "From process start to first output, per start path of each experiment with ``measure.starts``: each bar "
            "stacks the median parts of its fresh starts (the interpreter and compilebench's worker, importing torch "
            "and the model's libraries, inductor's probe of the CPU's vector instructions, building the model, making "
            "the mode's wrapper, loading the path's artifact, the first call), with the 95% interval of the median "
            "total as a whisker; the dashed line is eager's start, the floor. A path that could not start is named "
            "with its reason. The numbers are in ``start_paths.csv``, each start in ``starts.csv``."
        ),
    ),
    FigureSpec(
        "compile_depth",
        "compile-depth",
        "draws the cold compile against depth, a trend per layer for each compiling mode",
        (
            "Cold compile against depth: for each model swept over ``num_hidden_layers``, the seconds of a cold "
            "compile (empty caches; the median of the cold starts, with its 95% interval where there are three or "
            "more) at each depth, one line per compiling mode, the legend giving each line's trend in seconds per "
            "layer. The numbers, with the trend's interval, are in ``compile_depth.csv``."
        ),
    ),
    FigureSpec(
        "comparison",
        "comparison",
        ("sets each experiment on each hardware entry against the baseline entry, verdict by colour"),
        (
            "Each experiment on each hardware entry against the baseline entry: the ratio of median latencies (above "
            "1, faster than the baseline) with its bootstrap 95% interval, coloured by verdict; the shaded band is 1 "
            "± ``report.threshold``, where a ratio counts as the same."
        ),
    ),
    FigureSpec(
        "training",
        "training",
        "stacks each training step's forward, backward and optimizer, eager first",
        (
            "Each training experiment's optimizer step (a model's ``train:``), eager first, then each mode: forward "
            "with the loss, backward and the optimizer's step stacked, each part the median of steps timed part by "
            "part after the timed phase (a mode that compiles the whole step, ``scope: step``, is one grey bar); the "
            "dot is the step's interleaved median with its 95% interval, the figure the speedup divides. From "
            "``training.csv``."
        ),
    ),
    FigureSpec(
        "distributions",
        "appendix",
        ("shows every timed call of each mode: a mode whose calls ran at two levels shows two clusters"),
        (
            "Every timed call's latency (log scale), a box per mode beside the others, grouped by model, one panel "
            "per hardware entry: boxes span the quartiles, whiskers 1.5 times the interquartile range, points are "
            "outliers. A mode whose calls ran at two levels shows a tall box or two clusters of points."
        ),
    ),
    FigureSpec(
        "compile_phases",
        "appendix",
        ("splits each cold and warm compile into torch's own phases, and what they leave unexplained"),
        (
            "Where a compile's time goes: each compiled model and mode's cold start (empty caches) and warm start "
            "(the caches the cold one wrote) as stacked bars of torch's own compile phases, and what the phases leave "
            "unexplained (grey). Read from torch's compile metrics, not timed by hand."
        ),
    ),
    FigureSpec(
        "compile_cost",
        "appendix",
        "sets each mode's speedup against its cold compile",
        (
            "What each mode costs and what it buys: the first call's wall time with an empty compile cache "
            "(horizontal, log scale) against the interleaved speedup over eager with its bootstrap 95% interval "
            "(vertical). Points below the dashed line are slower than eager."
        ),
    ),
)
NAMES = tuple(spec.name for spec in FIGURES)
SECTIONS = {spec.name: spec.section for spec in FIGURES}
BY_NAME = {spec.name: spec for spec in FIGURES}
