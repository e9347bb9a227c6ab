"""What each defined mode's settings changed against its built-in base mode: results/tables/mode_effects.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

import pandas as pd

from compilebench.comparisons import mode_effects
from compilebench.joblog import logging_to
from compilebench.results import read_results
from compilebench.tables import write_csv

with logging_to(snakemake.log[0]):
    results = read_results(snakemake.input.results)
    effects = mode_effects(results, pd.read_csv(snakemake.input.runs), snakemake.params.threshold)
    write_csv(effects, snakemake.output[0])
