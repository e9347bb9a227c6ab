"""Append the finished run to the history store the config's `history:` names."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.files import write_json
from compilebench.core.joblog import logging_to
from compilebench.history.store import add

with logging_to(snakemake.log[0]):
    added = add(".", snakemake.params.store)
    write_json(snakemake.output[0], {"store": str(snakemake.params.store), **added.__dict__})
