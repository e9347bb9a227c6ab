"""Check one mode's backend and inductor settings against this hardware's torch."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.joblog import logging_to
from compilebench.parent.jobs import mode_check_job

with logging_to(snakemake.log[0]):
    mode_check_job(
        snakemake.wildcards.mode,
        snakemake.params.settings,
        snakemake.params.entry,
        snakemake.output[0],
        snakemake.params.models,
    )
