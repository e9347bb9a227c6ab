"""Latency, throughput and speedup of every swept model at each swept value: results/tables/scaling.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

import pandas as pd

from compilebench.joblog import logging_to
from compilebench.tables import scaling, write_csv

with logging_to(snakemake.log[0]):
    write_csv(scaling(pd.read_csv(snakemake.input.runs)), snakemake.output[0])
