"""Speedups over eager, and their geometric means per mode and hardware."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

import pandas as pd

from compilebench.joblog import logging_to
from compilebench.tables import geometric_mean_summary, speedups, write_csv

with logging_to(snakemake.log[0]):
    table = speedups(pd.read_csv(snakemake.input.runs), snakemake.params.threshold)
    write_csv(table, snakemake.output.speedups)
    write_csv(geometric_mean_summary(table), snakemake.output.summary)
