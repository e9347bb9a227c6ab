"""Where each compiled run's start-up time went, cold and warm: results/tables/compile_phases.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.joblog import logging_to
from compilebench.tables import compile_phases, write_csv

with logging_to(snakemake.log[0]):
    write_csv(compile_phases(snakemake.input.runs), snakemake.output[0])
