"""Where everything lives: the output layout of a run, relative to the working directory.

Templates carry Snakemake's wildcards in braces; `.format(...)` fills them in code.
"""

from __future__ import annotations

from pathlib import Path

RESOURCES = Path("resources")
ASSETS_DIR = RESOURCES / "assets"
WEIGHTS_DIR = RESOURCES / "weights"
PYTHON_ENVS_DIR = RESOURCES / "python_envs"
RESULTS = Path("results")
TRACES_DIR = RESULTS / "traces"
TABLES_DIR = RESULTS / "tables"
REPORT_OUT = RESULTS / "report"
FIGURES_DIR = REPORT_OUT / "figures"

ASSET = str(ASSETS_DIR / "{asset}")
WEIGHTS = str(WEIGHTS_DIR / "{model}")
PYTHON_ENV = str(PYTHON_ENVS_DIR / "{python_env}" / "venv")
PYTHON_ENV_RECORD = str(PYTHON_ENVS_DIR / "{python_env}" / "build.json")
ENV_RECORD = str(RESULTS / "env" / "{hardware}.json")
MODE_CHECK = str(RESULTS / "modes" / "{hardware}" / "{mode}.json")
REGION_CHECK = str(RESULTS / "modes" / "{hardware}" / "{mode}" / "{model}.json")
REFERENCE = str(RESULTS / "reference" / "{hardware}" / "{model}.pt")
RUN = str(RESULTS / "runs" / "{hardware}" / "{model}" / "{mode}.json")
# An experiment's measuring processes, each a job of its own (rounds): the first compiles cold into its caches, the
# later ones start warm from a copy of them. Both are kept only until the result is made from them.
PROCESS = str(RESULTS / "processes" / "{hardware}" / "{model}" / "{mode}" / "{process}.json")
PROCESS_CACHES = str(RESULTS / "processes" / "{hardware}" / "{model}" / "{mode}" / "caches")
# An experiment's starts (measure.starts): each path's fresh processes, timed from process start to first output.
STARTS = str(RESULTS / "starts" / "{hardware}" / "{model}" / "{mode}.json")
TRACE = str(TRACES_DIR / "{hardware}" / "{model}" / "{mode}.json")
# With measure.compile_trace: the compile's TORCH_TRACE log (raw/) and its tlparse report (report/index.html).
COMPILE_TRACE = str(TRACES_DIR / "{hardware}" / "{model}" / "{mode}.compile")
# The same report as Snakemake's `--report` includes it, one folder per traced experiment.
COMPILE_TRACE_REPORT = str(REPORT_OUT / "compile_traces" / "{hardware}" / "{model}" / "{mode}")
TABLE = str(TABLES_DIR / "{table}.csv")
FIGURE = str(FIGURES_DIR / "{figure}.{ext}")
PAPER = str(REPORT_OUT / "paper.{ext}")
HISTORY_ADDED = str(RESULTS / "history.json")  # what `history:` appended: the store, the run, whether it was new

# Every tidy table is declared in `registry.TABLES`.

# The tables the figures read, in the order of figures.Tables' fields.
FIGURE_TABLES = (
    "runs",
    "latency_samples",
    "speedups",
    "hardware_costs",
    "scaling",
    "comparison",
    "compile_phases",
    "stream_calls",
    "compile_depth",
    "start_paths",
    "training",
    "suite_models",
)

# Every figure is declared in `report.figure_catalog`. The figures rule also writes FIGURE_MANIFEST: which figures
# had something to show.
FIGURE_MANIFEST = str(FIGURES_DIR / "figures.json")


def table(name: str) -> str:
    return TABLE.format(table=name)


def set_aside_path(out: str | Path, attempt: int) -> Path:
    out = Path(out)
    return out.with_name(f"{out.stem}.set-aside-{attempt}{out.suffix}")


def set_aside_records(out: str | Path) -> list[Path]:
    """The records of a process measured again for a level shift, in the order they were set aside."""
    out = Path(out)
    return sorted(out.parent.glob(f"{out.stem}.set-aside-*{out.suffix}"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
