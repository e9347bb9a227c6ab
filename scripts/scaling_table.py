"""Latency, throughput and speedup of every swept model at each swept value, and each point's speedup against the
first point's: results/tables/scaling.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

import pandas as pd

from compilebench.joblog import logging_to
from compilebench.results import read_results
from compilebench.tables import scaling, write_csv

with logging_to(snakemake.log[0]):
    results = read_results(snakemake.input.results)
    write_csv(scaling(pd.read_csv(snakemake.input.runs), results, snakemake.params.threshold), snakemake.output[0])
