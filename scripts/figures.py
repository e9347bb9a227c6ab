"""Draw every figure of the paper from the tidy tables, each as SVG and PNG."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.figures import FIGURES, load_tables, render
from compilebench.jobs import logging_to

with logging_to(snakemake.log[0]):
    tables = load_tables(
        snakemake.input.runs, snakemake.input.samples, snakemake.input.speedups, snakemake.params.prices, snakemake.params.baseline
    )
    for name in FIGURES:
        render(name, tables, [snakemake.output[f"{name}_svg"], snakemake.output[f"{name}_png"]])
