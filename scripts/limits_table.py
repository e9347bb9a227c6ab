"""Achieved FLOP/s or memory bandwidth beside the device's peak: results/tables/limits.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

import pandas as pd

from compilebench.joblog import logging_to
from compilebench.tables import limits, write_csv

with logging_to(snakemake.log[0]):
    write_csv(limits(pd.read_csv(snakemake.input.runs), snakemake.params.peaks), snakemake.output[0])
