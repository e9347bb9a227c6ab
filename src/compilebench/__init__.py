"""compilebench: how much faster does torch.compile make this model on this hardware?"""

from pathlib import Path

__version__ = "0.1.0"

# Exactly the modules a measurement runs (environment, reference and benchmark jobs):
# a change to any of them reruns those jobs. Validation, tables, figures and the paper
# are not among them, so editing them reruns nothing that measures.
ENGINE_MODULES = (
    "ceilings",
    "comparisons",
    "compile_phases",
    "correctness",
    "dynamo_counters",
    "env",
    "errors",
    "generation",
    "joblog",
    "jobs",
    "layout",
    "machine",
    "memory",
    "models",
    "modes",
    "profiling",
    "pyenv",
    "quantization",
    "records",
    "replication",
    "results",
    "runner",
    "stats",
    "streams",
    "supervise",
    "thresholds",
    "timing",
    "wrappers",
)

# What the table rules run (`tables` and what it imports), and what the figure and paper
# rules run on top: a change to them reruns those rules and nothing that measures.
TABLE_MODULES = ("comparisons", "errors", "modes", "peaks", "records", "registry", "results", "stats", "tables")
REPORT_MODULES = (
    *TABLE_MODULES,
    "assets",
    "catalog",
    "config",
    "figures",
    "layout",
    "paper",
    "standalone",
    "thresholds",
)


def sources(modules: tuple[str, ...]) -> list[Path]:
    here = Path(__file__).parent
    return [here / f"{name}.py" for name in modules]


def engine_sources() -> list[Path]:
    return sources(ENGINE_MODULES)
