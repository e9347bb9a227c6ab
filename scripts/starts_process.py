"""Time an experiment's starts: each path of `measure.starts` in fresh processes, from process start to first output."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.experiment import Experiment
from compilebench.core.joblog import logging_to
from compilebench.parent.starts import starts_job

with logging_to(snakemake.log[0]):
    starts_job(
        Experiment.from_json(snakemake.params.experiment),
        snakemake.params.starts,
        snakemake.output[0],
        reference=snakemake.input.reference,
        env_record=snakemake.input.env,
        mode_checks=snakemake.input.get("mode_check", []),
    )
