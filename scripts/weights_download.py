"""Fetch a model's pretrained weights at their pinned revision."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.joblog import logging_to
from compilebench.parent.assets import fetch_weights

with logging_to(snakemake.log[0]):
    fetch_weights(snakemake.wildcards.model, snakemake.params.spec, snakemake.output[0])
