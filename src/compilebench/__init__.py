"""compilebench: how much faster does torch.compile make this model on this hardware?"""

from pathlib import Path

__version__ = "0.1.0"

# Exactly the modules a measurement runs (environment, reference and benchmark jobs):
# a change to any of them reruns those jobs. Validation, tables, figures and the paper
# are not among them, so editing them reruns nothing that measures.
ENGINE_MODULES = (
    "correctness",
    "dynamo_counters",
    "env",
    "errors",
    "generation",
    "joblog",
    "jobs",
    "layout",
    "memory",
    "models",
    "profiling",
    "records",
    "results",
    "runner",
    "stats",
    "thresholds",
    "timing",
    "wrappers",
)


def engine_sources() -> list[Path]:
    here = Path(__file__).parent
    return [here / f"{name}.py" for name in ENGINE_MODULES]
