"""Measure one model x mode x hardware; a failure is written as a result too."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.joblog import logging_to
from compilebench.jobs import benchmark_job

with logging_to(snakemake.log[0]):
    benchmark_job(snakemake.params.experiment, snakemake.output[0], snakemake.input.reference, snakemake.input.env)
