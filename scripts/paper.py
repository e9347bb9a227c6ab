"""Fill the paper template from the tables and figures; write HTML or, for a .pdf output, PDF."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.joblog import logging_to
from compilebench.report.paper import context, write
from compilebench.report.registry import table_names

with logging_to(snakemake.log[0]):
    tables = {name: snakemake.input[name] for name in table_names(paper_only=True)}
    inputs = snakemake.input
    ctx = context(
        tables,
        inputs.figures,
        inputs.figure_manifest,
        inputs.env,
        snakemake.params.config,
        snakemake.params.command,
    )
    write(ctx, snakemake.output[0], inputs.template, inputs.css)
