"""Every platform against the baseline platform, with verdicts: results/tables/comparison.csv."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.comparisons import within_run
from compilebench.joblog import logging_to
from compilebench.results import read_results
from compilebench.tables import write_csv

with logging_to(snakemake.log[0]):
    results = read_results(snakemake.input.results)
    write_csv(within_run(results, snakemake.params.baseline, snakemake.params.threshold), snakemake.output[0])
