"""The top operators by self time of every profiled run: results/tables/top_ops.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.joblog import logging_to
from compilebench.tables import top_ops, write_csv

with logging_to(snakemake.log[0]):
    write_csv(top_ops(snakemake.input.runs), snakemake.output[0])
