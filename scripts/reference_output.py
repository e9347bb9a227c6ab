"""Save the eager float32 output of one model on one hardware."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.experiment import Experiment
from compilebench.core.joblog import logging_to
from compilebench.parent.jobs import reference_job

with logging_to(snakemake.log[0]):
    reference_job(Experiment.from_json(snakemake.params.experiment), snakemake.output[0], snakemake.input.env)
