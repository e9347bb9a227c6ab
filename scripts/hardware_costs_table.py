"""p90 latency relative to the baseline hardware, and cost per million inferences: results/tables/hardware_costs.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

import pandas as pd

from compilebench.joblog import logging_to
from compilebench.tables import hardware_costs, write_csv

with logging_to(snakemake.log[0]):
    runs = pd.read_csv(snakemake.input.runs)
    costs = hardware_costs(runs, snakemake.params.prices, snakemake.params.baseline, snakemake.params.calls_per_start)
    write_csv(costs, snakemake.output[0])
