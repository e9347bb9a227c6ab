"""compilebench: how much faster does torch.compile make this model on this hardware?"""

from pathlib import Path

__version__ = "0.1.0"

# The modules whose code decides a measurement: a change to any of them reruns the
# benchmarks. Tables, figures and the paper are downstream and rerun nothing.
ENGINE_MODULES = (
    "assets", "compiler", "config", "correctness", "env", "generation", "jobs",
    "memory", "models", "modes", "profiling", "results", "runner", "stats", "timing",
)


# The paper's figures, in order; figures.FIGURES draws them. Named here so that the
# workflow can plan its outputs without importing matplotlib.
FIGURE_NAMES = ("latency", "generation", "speedup_heatmap", "compile_cost", "distributions", "hardware", "memory")


def engine_sources() -> list[Path]:
    here = Path(__file__).parent
    return [here / f"{name}.py" for name in ENGINE_MODULES] + [here / "schemas" / "config.schema.yaml"]
