"""Draw every figure of the paper from the tidy tables, each as SVG and PNG."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.joblog import logging_to
from compilebench.core.layout import FIGURE_TABLES
from compilebench.report.figures import load_tables, render_all

with logging_to(snakemake.log[0]):
    tables = load_tables(*(snakemake.input[name] for name in FIGURE_TABLES))
    out = snakemake.output
    render_all(tables, lambda name: [out[f"{name}_svg"], out[f"{name}_png"]], out.manifest)
