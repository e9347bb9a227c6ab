"""An experiment's tlparse report, as Snakemake's `--report` includes it."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.joblog import logging_to
from compilebench.parent.jobs import publish_compile_trace

with logging_to(snakemake.log[0]):
    publish_compile_trace(snakemake.input.run, snakemake.output[0])
