"""Every tidy table a run writes, declared once: its name, what it reads, the report settings it takes, its caption,
and the function that builds it.

The workflow's table rules, the local-rule list, the paper's inputs, the standalone build and the tests all
iterate over `TABLES`; adding a table is one `@table(...)` entry on one function here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pandas as pd

from ..analysis import comparisons
from ..core.files import read_results, read_starts
from . import (
    compile_tables,
    hardware_tables,
    runtime_tables,
    speedup_tables,
    start_tables,
    stream_tables,
    suite_tables,
    tables,
    training_tables,
)

RESULTS = "results"  # the run's result files, checked by the runs table first
PREVIOUS = "previous"  # the result files of `report.compare_with`
STARTS = "start_records"  # the starts records of the experiments with `measure.starts`


@dataclass(frozen=True)
class Table:
    name: str
    build: Callable[[Sources], pd.DataFrame]
    reads: tuple[str, ...]  # RESULTS, PREVIOUS, STARTS, or the names of tables built before it
    params: tuple[str, ...]  # keys of `report_settings(config)`, or of the workflow's checks for `runs`
    caption: str
    in_paper: bool
    said: Callable[[pd.DataFrame], str] | None  # a line for the job's log once built


TABLES: dict[str, Table] = {}


def table(
    name: str,
    *,
    reads: tuple[str, ...],
    caption: str,
    params: tuple[str, ...] = (),
    in_paper: bool = True,
    said: Callable[[pd.DataFrame], str] | None = None,
):
    """Declares the decorated function as the builder of results/tables/{name}.csv."""

    def register(build: Callable[[Sources], pd.DataFrame]):
        unknown = [r for r in reads if r not in (RESULTS, PREVIOUS, STARTS) and r not in TABLES]
        assert not unknown, f"table {name} reads {unknown}, which are not declared before it"
        TABLES[name] = Table(name, build, reads, params, " ".join(caption.split()), in_paper, said)
        return build

    return register


class Sources:
    """What one table is built from: result files, earlier tables and its params (report settings, or the workflow's
    checks), each read at most once."""

    def __init__(
        self,
        results: list[str | Path] = (),
        tables: dict[str, str | Path] | None = None,
        previous: list[str | Path] = (),
        params: dict | None = None,
        starts: list[str | Path] = (),
    ):
        self.result_paths = list(results)
        self.table_paths = dict(tables or {})
        self.previous_paths = list(previous)
        self.params = dict(params or {})
        self.start_records = list(starts)

    @cached_property
    def starts(self) -> list[dict]:
        return read_starts(self.start_records, self.params.get("start_identities"), self.params.get("downstream", ()))

    @cached_property
    def results(self) -> list[dict]:
        return read_results(self.result_paths)

    def table(self, name: str) -> pd.DataFrame:
        return pd.read_csv(self.table_paths[name])

    @cached_property
    def runs(self) -> pd.DataFrame:
        return self.table("runs")


def report_settings(config: dict) -> dict:
    """The report settings tables take, from a validated config."""
    from ..configuration.config import hardware_prices, peak_overrides

    report = config["report"]
    return {
        "threshold": report["threshold"],
        "baseline": report.get("baseline_hardware"),
        "calls_per_start": report["calls_per_start"],
        "prices": hardware_prices(config),
        "peaks": peak_overrides(config),
    }


def table_names(*, paper_only: bool = False) -> tuple[str, ...]:
    return tuple(name for name, spec in TABLES.items() if spec.in_paper or not paper_only)


@table(
    "runs",
    reads=(RESULTS,),
    params=("expected", "foreign", "downstream"),
    said=lambda frame: f"compilebench: {tables.status_line(frame)}",
    caption="""One row per benchmark job (model × mode × hardware) of the current config: status, latency statistics,
    compile time, throughput, memory, correctness and compiler counters.""",
)
def _runs(src: Sources) -> pd.DataFrame:
    return tables.runs_table(src.result_paths, src.params.get("expected"), src.params.get("downstream", ()))


@table(
    "latency_samples",
    reads=(RESULTS,),
    in_paper=False,
    caption="Every timed iteration of every job, one row each.",
)
def _latency_samples(src: Sources) -> pd.DataFrame:
    return tables.latency_samples(src.result_paths)


@table(
    "speedups",
    reads=("runs", RESULTS),
    params=("threshold",),
    caption="""Speedup of each mode over eager per hardware and model: the interleaved speedup with its bootstrap
    95% interval (two-level over the experiment's processes), its verdict against the model's noise floor
    (``against_noise``: faster, slower, same or unclear, the band of same widened to the floor's half-width),
    ``unstable``, ``detectable_change``, the ratio of the eager job's median to the mode job's median beside it,
    and eager as timed beside the mode against the eager job's (``eager_job_ratio``, with its interval and
    ``eager_job_flagged``: the speedup's eager is not the eager a user who runs eager alone sees), and the
    machine's parallel speedup (all threads over one on a matrix product) in the mode's processes and in the eager
    job's (``parallel_speedup``, ``eager_job_parallel_speedup``): the machine's state in each. ``verdict`` and
    ``verdict_why`` are what every table that states a verdict prints: ``against_noise`` where the machine was
    steady, no level moved and the speedup as each job timed alone agrees, else unclear and why.""",
)
def _speedups(src: Sources) -> pd.DataFrame:
    return speedup_tables.speedups(src.runs, src.params["threshold"], src.results)


@table(
    "summary",
    reads=("speedups",),
    caption="""Geometric-mean speedup of each mode per hardware, over the models that ran and passed the
    correctness check.""",
)
def _summary(src: Sources) -> pd.DataFrame:
    return speedup_tables.geometric_mean_summary(src.table("speedups"))


@table(
    "limits",
    reads=("runs",),
    params=("peaks",),
    caption="""How close each run came to its device's limits: achieved FLOP/s in the dtype the arithmetic ran in,
    or, for text generation, achieved memory bandwidth (parameter bytes × decode steps per second). Each is set
    against the ceiling the environment job measured on the device (``measured``, ``fraction_of_measured``: the
    fastest large square matmul in that dtype, the fastest large copy) and, where known, the datasheet peak from
    compilebench's table of known devices or the hardware entry's ``peak`` in config (``peak``,
    ``fraction_of_peak``).""",
)
def _limits(src: Sources) -> pd.DataFrame:
    return hardware_tables.limits(src.runs, src.params["peaks"])


@table(
    "top_ops",
    reads=(RESULTS,),
    caption="""The ten operators with the most self time per call in each profiled run (``measure.profile:
    true``), with the Chrome trace each came from (open it in Perfetto). On a GPU the time is the kernels' device
    time; on the CPU, host self time.""",
)
def _top_ops(src: Sources) -> pd.DataFrame:
    return compile_tables.top_ops(src.result_paths)


@table(
    "hardware_costs",
    reads=("runs",),
    params=("prices", "baseline", "calls_per_start"),
    caption="""Per successful run: p90 latency relative to the same model and mode on the baseline hardware
    (``report.baseline_hardware``, else the first entry), and, for hardware entries with a ``price_per_hour``, the
    cost of a million inferences at the median latency. The hardware figure and the paper's cost table read
    it.""",
)
def _hardware_costs(src: Sources) -> pd.DataFrame:
    s = src.params
    return hardware_tables.hardware_costs(src.runs, s["prices"], s["baseline"], s["calls_per_start"])


@table(
    "mode_effects",
    reads=(RESULTS, "runs"),
    params=("threshold",),
    caption="""What the settings of each mode defined under ``mode_definitions`` changed: its speedup over eager
    against its base mode's (a quantized mode's: the same definition unquantized; a regional one's: the same
    compiled whole, where the run has it; else the built-in base, the same torch.compile mode without the
    definition's settings, compile-default for an AOTInductor package, jit for TorchScript settings), same model
    and hardware, each speedup measured against eager within its own job so that drift between the jobs cancels;
    the quotient with a bootstrap 95% interval (two-level where the jobs ran in several processes), the settings in
    which the two differ, the verdict (faster, slower, same, unclear), ``unstable`` and ``detectable_change``.
    Between two compiling modes also the cold and warm compile times (``compile_cold_base_s``,
    ``compile_cold_s``; the base's over the mode's as ``compile_cold_ratio``, above 1 the mode compiles faster),
    with an interval and verdict against ``compile_threshold`` where each side has three fresh starts or more
    (``measure.cold_processes`` makes every process one), ``unclear (n samples)`` where fewer.""",
)
def _mode_effects(src: Sources) -> pd.DataFrame:
    return comparisons.mode_effects(src.results, src.runs, src.params["threshold"], speedup_tables.settings_difference)


@table(
    "scaling",
    reads=(RESULTS, "runs"),
    params=("threshold",),
    caption="""Every model with a ``sweep:``, per hardware and mode: median latency with its 95% interval,
    throughput, and the interleaved speedup over eager with its interval, at each value of the swept setting
    (``swept``, ``value``); settings that vary besides it form the ``series``. Each compiled point after the first
    also states its speedup over the first point's (``change``, the quotient of the two jobs' speedups, each over
    its own eager) with its 95% interval and verdict (``change_verdict``: ``faster`` when the speedup grew,
    ``slower``, ``same`` or ``unclear``) and what the interval could detect (``change_detectable``).""",
)
def _scaling(src: Sources) -> pd.DataFrame:
    return speedup_tables.scaling(src.runs, src.results, src.params["threshold"])


@table(
    "compile_depth",
    reads=(RESULTS, "runs"),
    caption="""Every model swept over ``num_hidden_layers``, per hardware and compiling mode: the cold compile at
    each depth (``compile_s``, the median of its cold starts, with a bootstrap 95% interval where there are three or
    more: ``measure.cold_processes`` makes every process one) beside the speedup over eager with its interval and
    the graphs compiled; and the line's trend, cold compile seconds per layer (``slope_s_per_layer``) with its 95%
    interval (``slope_interval``: ``bootstrap`` over each depth's starts, ``t`` from the fit over one start a
    depth, empty where neither can be made).""",
)
def _compile_depth(src: Sources) -> pd.DataFrame:
    return speedup_tables.compile_depth(src.runs, src.results)


@table(
    "comparison",
    reads=(RESULTS, "runs"),
    params=("baseline", "threshold"),
    caption="""Every hardware entry against the baseline (``report.baseline_hardware``, else the first): per model
    and mode the ratio of median latencies (baseline over this entry, above 1 faster) with a bootstrap 95% interval
    from both jobs' samples (two-level where they ran in several processes, ``processes`` and
    ``base_processes``), and the verdict it supports against ``report.threshold``: faster or slower when the whole
    interval lies beyond 1 ± threshold, same when it lies within, unclear otherwise; ``unstable`` where either side
    measured on a busy machine, and ``detectable_change``, the smallest change the interval could have called;
    then the geometric mean per entry and mode.""",
)
def _comparison(src: Sources) -> pd.DataFrame:
    return comparisons.within_run(src.results, src.params["baseline"], src.params["threshold"])


@table(
    "change",
    reads=(RESULTS, PREVIOUS),
    params=("threshold",),
    caption="""This run against the earlier run ``report.compare_with`` names, as ``compilebench compare`` sets
    them: per experiment both medians, their ratio (earlier over this run; above 1, faster now) with a bootstrap
    95% interval, the verdict against ``report.threshold``, both statuses and correctness checks, and whether it
    regressed; then the geometric mean per hardware and mode. Empty without ``compare_with``.""",
)
def _change(src: Sources) -> pd.DataFrame:
    return comparisons.change_against(src.previous_paths, src.results, src.params["threshold"])


@table(
    "compile_phases",
    reads=(RESULTS,),
    caption="""One row per phase of each compiled run's start: the cold compile (empty caches), the warm start (a
    fresh process reading the caches the cold one wrote) and the start from torch's portable cache bundle, each
    broken into torch's own compile metrics (Dynamo, AOTAutograd, inductor lowering, autotuning, code generation,
    C++/Triton compilation) and the part they leave unexplained (seconds; ``start_s`` is that start's whole first
    call).""",
)
def _compile_phases(src: Sources) -> pd.DataFrame:
    return compile_tables.compile_phases(src.result_paths)


@table(
    "stream_calls",
    reads=(RESULTS,),
    caption="""One row per call of every shape stream (a model's ``stream:``, measured as ``MODEL.stream``), in the
    order called, from the mode's first pass over the stream: the axis and value, its latency and eager's at the
    same call, whether it compiled or recompiled (with the guards that failed, and the seconds compiling), and
    whether it came after Dynamo's recompile limit at a value no graph was compiled for (``after_limit_uncompiled``,
    exact for static shapes).""",
)
def _stream_calls(src: Sources) -> pd.DataFrame:
    return stream_tables.stream_calls(src.results)


@table(
    "streams",
    reads=(RESULTS,),
    caption="""One row per shape-stream experiment: compiles and recompiles over the stream, whether the recompile
    limit was reached (``limit_call``) and the calls after it at values never compiled; the stream's total time
    (its first pass, compiles included) against eager's over the same stream, ``total_speedup``, and the best later
    pass's, ``steady_speedup``; the call after which the mode's cumulative time fell below eager's; and per distinct
    value, the speedup once compiled with its 95% interval and correctness against eager at that shape.""",
)
def _streams(src: Sources) -> pd.DataFrame:
    return stream_tables.streams(src.results)


@table(
    "starts",
    reads=(STARTS,),
    params=("start_identities", "foreign", "downstream"),
    caption="""From process start to first output: one row per fresh start of each experiment with
    ``measure.starts``, per path (``eager``: no compile, the floor; ``cold``: empty caches; ``warm``: the caches a
    cold start left; ``artifacts``: torch's portable cache artifacts alone; ``package``: an AOTInductor package;
    ``precompiled``: a function compiled ahead of time with ``aot_compile``) and repeat: ``total_s`` from the
    process's spawn to its first output, its parts (``interpreter_s``, ``import_s``, ``build_s``, ``compile_s``,
    ``load_s``, ``first_call_s``), the bytes of what the path read (``artifact_bytes``), whether the output passed
    the mode's correctness check (``correct``), ``overhead_over_eager_s`` (the start less eager's median start),
    and ``status`` with the ``reason`` where a path is ``unsupported``, ``failed`` or ``timeout``.""",
)
def _starts(src: Sources) -> pd.DataFrame:
    return start_tables.starts(src.starts)


@table(
    "start_paths",
    reads=(STARTS, RESULTS),
    params=("start_identities", "foreign", "downstream"),
    caption="""Each start path of each experiment with ``measure.starts``: the median start from process spawn to
    first output over its fresh processes with a bootstrap 95% interval (``total_s``, ``total_ci95_low/high``),
    each part's median, the artifact's bytes and the seconds building it took (``artifact_build_s``: the
    package, the precompiled function), whether every output was correct, the overhead over eager's start
    (``overhead_over_eager_s`` with its interval), and ``break_even_calls``: after how many calls starting on this
    path and calling the mode has caught up with starting and calling eager (from the interleaved saving per call,
    with its interval; ``inf`` where the mode saves nothing per call).""",
)
def _start_paths(src: Sources) -> pd.DataFrame:
    return start_tables.start_paths(src.starts, src.results)


@table(
    "training",
    reads=(RESULTS, "speedups"),
    caption="""One row per training experiment (a model's ``train:``, measured as ``MODEL.train``) and mode: the
    median optimizer step (zero_grad, forward, loss, backward, the optimizer's step) with its 95% interval and
    eager's beside it; the speedup over eager with its interval and verdict, as the speedups table gives them; each
    side's step split into forward with the loss, backward and the optimizer's step (``eager_forward_ms``, ...,
    medians of steps timed part by part after the timed phase; empty for a mode that compiles the whole step); each
    side's peak memory over a step, each side stepped alone in a fresh process of its own, and their ratio
    (``memory_ratio``, eager over the mode: above 1 the mode needs less), with that process's first steps (the
    mode's compile and recompiles) and whole peak apart (``mode_first_steps_peak_bytes``,
    ``mode_process_peak_bytes``, ...); the cold compile of the first step and ``break_even_steps``, after how
    many steps it has paid for itself; graphs, graph breaks and recompiles; and correctness after k steps
    (``loss_max_rel``, ``grad_max_rel``, ``param_max_rel``: the largest relative difference from eager's, ``reason``
    where it failed).""",
)
def _training(src: Sources) -> pd.DataFrame:
    return training_tables.training(src.results, src.table("speedups"))


@table(
    "runtimes",
    reads=(RESULTS, "speedups", "start_paths"),
    params=("threshold",),
    caption="""Against what users deploy instead: per hardware and model that runs an ONNX Runtime or OpenVINO mode,
    eager, the best torch mode (``role``: the torch mode with the highest speedup among those measured correct) and
    each runtime mode: median ms, the speedup over eager with its interval and verdict as the speedups table gives
    them, the cold cost (export or conversion plus session or compile, ``compile_s``), the artifact's bytes on disk
    (the ONNX file, OpenVINO's IR, or the AOTInductor package), where the run timed starts each side's from process
    start to first output with its interval (``start_path``: eager's own; a runtime's saved model, ``package``; a torch
    mode's most prepared path timed), correctness, the runtime's version and threads as
    read back from it; and each runtime's speedup over the best torch mode's (``vs_torch_ratio``, each measured
    against eager in its own job: above 1 the runtime is faster) with its 95% interval and verdict.""",
)
def _runtimes(src: Sources) -> pd.DataFrame:
    return runtime_tables.runtimes(
        src.results, src.table("speedups"), src.params["threshold"], src.table("start_paths")
    )


@table(
    "suite_models",
    reads=("runs", "speedups"),
    params=("command",),
    caption="""The run as a suite, one row per model × mode (eager's rows left out, training steps too): its status,
    whether it passed (it ran and its output passed the accuracy rule) and, where not, why (``cause``: build, the
    model failed in eager too; compile, the mode failed or could not apply; timeout; accuracy; unchecked), its
    speedup with its 95% interval and verdict, its cold compile, graph breaks, eager's peak memory over the mode's
    (``memory_ratio``), and the one command that measures that experiment alone.""",
)
def _suite_models(src: Sources) -> pd.DataFrame:
    return suite_tables.suite_models(src.runs, src.table("speedups"), src.params.get("command", "snakemake --cores 4"))


@table(
    "suite",
    reads=("suite_models",),
    caption="""The run as a suite, per hardware × mode: models, how many passed and the pass rate, failures by
    cause, the geometric-mean speedup over the passing models with a 95% interval that resamples the models and
    carries each model's own interval (``geomean_ci95_low``, ``geomean_ci95_high``), the same with every slowdown
    counted as 1.0 (``geomean_speedup_clipped``, as PyTorch's dashboard reports it), how many passing models were
    faster, the same, slower or unclear, the cold compile's median and 90th percentile, graph breaks (in all, and
    models with any) and the median of eager's peak memory over the mode's.""",
)
def _suite(src: Sources) -> pd.DataFrame:
    return suite_tables.suite(src.table("suite_models"))
