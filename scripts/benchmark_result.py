"""An experiment's result from the records of its measuring processes."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.analysis.summaries import result_job
from compilebench.core.experiment import Experiment
from compilebench.core.joblog import logging_to

with logging_to(snakemake.log[0]):
    result_job(Experiment.from_json(snakemake.params.experiment), snakemake.input.processes, snakemake.output[0])
