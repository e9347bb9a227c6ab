"""Fill the paper template from the tables and figures; write HTML or, for a .pdf output, PDF."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.jobs import logging_to
from compilebench.paper import context, write_html, write_pdf

with logging_to(snakemake.log[0]):
    tables = {name: snakemake.input[name] for name in ("runs", "speedups", "summary", "limits", "top_ops")}
    ctx = context(tables, snakemake.input.figures, snakemake.input.env, snakemake.params.config, snakemake.params.command)
    write = write_pdf if snakemake.output[0].endswith(".pdf") else write_html
    write(ctx, snakemake.output[0])
