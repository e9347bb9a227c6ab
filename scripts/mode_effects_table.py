"""What each defined mode's settings changed against its built-in base mode: results/tables/mode_effects.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

import pandas as pd

from compilebench.joblog import logging_to
from compilebench.tables import mode_effects, write_csv

with logging_to(snakemake.log[0]):
    effects = mode_effects(pd.read_csv(snakemake.input.runs), pd.read_csv(snakemake.input.samples))
    write_csv(effects, snakemake.output[0])
