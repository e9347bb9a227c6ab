"""An experiment's result from the records of its measuring processes."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.experiment import Experiment
from compilebench.joblog import logging_to
from compilebench.summaries import result_job

with logging_to(snakemake.log[0]):
    result_job(Experiment.from_json(snakemake.params.experiment), snakemake.input.processes, snakemake.output[0])
