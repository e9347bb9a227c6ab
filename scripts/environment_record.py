"""Check one hardware entry and write its environment record."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.joblog import logging_to
from compilebench.parent.jobs import environment_job

with logging_to(snakemake.log[0]):
    environment_job(
        snakemake.wildcards.hardware,
        snakemake.params.entry,
        snakemake.output[0],
        skip_if_absent=snakemake.params.skip_if_absent,
    )
