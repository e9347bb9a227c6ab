"""Every platform against the baseline platform, with verdicts: results/tables/comparison.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

import pandas as pd

from compilebench.joblog import logging_to
from compilebench.tables import write_csv
from compilebench.verdicts import within_run

with logging_to(snakemake.log[0]):
    runs, samples = pd.read_csv(snakemake.input.runs), pd.read_csv(snakemake.input.samples)
    write_csv(within_run(runs, samples, snakemake.params.baseline, snakemake.params.threshold), snakemake.output[0])
