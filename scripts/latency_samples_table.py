"""One row per timed iteration: results/tables/latency_samples.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.joblog import logging_to
from compilebench.tables import latency_samples, write_csv

with logging_to(snakemake.log[0]):
    write_csv(latency_samples(snakemake.input.runs), snakemake.output[0])
