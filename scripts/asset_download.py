"""Download (or copy from the mirror) one asset and verify its sha256."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.joblog import logging_to
from compilebench.parent.assets import fetch

source = snakemake.params.source
with logging_to(snakemake.log[0]):
    fetch(snakemake.wildcards.asset, source["url"], source["sha256"], snakemake.output[0], source["mirror"])
