"""Measure one model x mode x hardware in one fresh process; a failure is written as a record too."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.experiment import Experiment
from compilebench.joblog import logging_to
from compilebench.jobs import process_job

with logging_to(snakemake.log[0]):
    process_job(
        Experiment.from_json(snakemake.params.experiment),
        snakemake.output.record,
        snakemake.params.process,
        snakemake.input.get("caches", snakemake.output.get("caches")),
        reference=snakemake.input.reference,
        env_record=snakemake.input.env,
        first=snakemake.input.get("first"),
    )
