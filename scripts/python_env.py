"""Build one platform's Python environment from envs/NAME.txt; a failed build is written as a record too."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.joblog import logging_to
from compilebench.parent.pyenv import build

with logging_to(snakemake.log[0]):
    build(snakemake.wildcards.python_env, snakemake.params.requirements, snakemake.output.venv, snakemake.output.record)
