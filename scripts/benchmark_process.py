"""Measure one model x mode x hardware in one fresh process; a failure is written as a record too."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.experiment import Experiment
from compilebench.core.joblog import logging_to
from compilebench.parent.jobs import process_job

with logging_to(snakemake.log[0]):
    process_job(
        Experiment.from_json(snakemake.params.experiment),
        snakemake.output.record,
        snakemake.params.process,
        snakemake.input.get("caches", snakemake.output.get("caches")),
        reference=snakemake.input.get("reference") or None,
        env_record=snakemake.input.env,
        mode_checks=snakemake.input.get("mode_check", []),
        first=snakemake.input.get("first"),
    )
