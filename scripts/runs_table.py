"""One row per job of the current config: results/tables/runs.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.joblog import logging_to
from compilebench.tables import runs_table, status_line, write_csv

with logging_to(snakemake.log[0]):
    table = runs_table(snakemake.input.runs, snakemake.params.expected, snakemake.params.downstream)
    write_csv(table, snakemake.output[0])
    print(f"compilebench: {status_line(table)}")
