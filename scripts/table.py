"""One tidy table, results/tables/{name}.csv, built by its entry in compilebench's table registry."""

import sys

sys.path.insert(0, f"{snakemake.scriptdir}/../src")

from compilebench.core.joblog import logging_to
from compilebench.report.registry import STARTS, TABLES, Sources
from compilebench.report.tables import write_csv

with logging_to(snakemake.log[0]):
    spec = TABLES[snakemake.params.table]
    inputs = snakemake.input
    sources = Sources(
        results=list(inputs.get("results", [])),
        tables={name: inputs[name] for name in spec.reads if name in TABLES},
        previous=list(inputs.get("previous", [])),
        starts=list(inputs.get(STARTS, [])),
        params={key: snakemake.params[key] for key in spec.params},
    )
    table = spec.build(sources)
    write_csv(table, snakemake.output[0])
    if spec.said:
        print(spec.said(table))
