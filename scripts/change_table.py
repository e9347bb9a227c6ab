"""This run against the previous run `report.compare_with` names: results/tables/change.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.comparisons import change_against
from compilebench.joblog import logging_to
from compilebench.results import read_results
from compilebench.tables import write_csv

with logging_to(snakemake.log[0]):
    current = read_results(snakemake.input.runs)
    write_csv(change_against(snakemake.input.previous, current, snakemake.params.threshold), snakemake.output[0])
