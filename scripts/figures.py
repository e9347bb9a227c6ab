"""Draw every figure of the paper from the tidy tables, each as SVG and PNG."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.figures import FIGURES, load_tables, render
from compilebench.joblog import logging_to

with logging_to(snakemake.log[0]):
    inputs = snakemake.input
    tables = load_tables(inputs.runs, inputs.samples, inputs.speedups, inputs.hardware_costs)
    for name in FIGURES:
        render(name, tables, [snakemake.output[f"{name}_svg"], snakemake.output[f"{name}_png"]])
