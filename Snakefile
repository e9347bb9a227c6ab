import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from compilebench.configuration.yaml_files import yaml_problem

# An experiment file passed with --configfile replaces the default config instead
# of merging into it, so that an experiment runs its own models and nothing else.
# Snakemake's own message for broken YAML names no line: compilebench's does.
if not workflow.overwrite_configfiles:
    if problem := yaml_problem("config/config.yaml"):
        raise WorkflowError(problem)

    configfile: "config/config.yaml"


report: "report/workflow.rst"


include: "rules/common.smk"


# On a cluster, downloads and Python environments (compute nodes often have no
# internet; the venvs land on the shared file system), tables (each table's rule
# marks itself local) and the paper run where snakemake runs; only environment,
# mode-check, reference and benchmark jobs go to the hardware they describe; an
# experiment's result is made from its processes' records here.
localrules:
    all,
    benchmark_run,
    asset_download,
    weights_download,
    python_env,
    figures,
    paper_html,
    paper_pdf,
    history_add,


include: "rules/assets.smk"
include: "rules/environment.smk"
include: "rules/benchmark.smk"
include: "rules/aggregate.smk"
include: "rules/report.smk"


# Every result and starts record too: one that is deleted, or lost to a killed job, is redone,
# not passed over as an intermediate file while the tables made from it still stand.
rule all:
    input:
        pipe.get_final_output(),
        pipe.get_run_results,
        pipe.get_start_records,
        pipe.get_compile_trace_reports,
