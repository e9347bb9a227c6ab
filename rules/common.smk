# The config validated, the wildcards constrained, and one `pipe` (compilebench.pipeline.workflow.Workflow)
# whose methods the rules call for inputs, params and resources; the logic lives in the package, where tests reach it.
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from compilebench import codebase
from compilebench.configuration import config as configuration
from compilebench.configuration import plan
from compilebench.core import layout, modes
from compilebench.core.errors import ConfigError, UserError
from compilebench.pipeline.workflow import (
    LATER_PROCESS,
    Workflow,
    figure_outputs,
    table_caption,
)
from compilebench.report import figure_catalog, registry

try:
    configuration.validate(config)
except ConfigError as error:
    raise WorkflowError(str(error)) from None


# Benchmark jobs on one machine must never overlap, whatever --cores says: each
# takes the one slot. A cluster profile may raise the limit (one job per node).
if "benchmark_slot" not in workflow.global_resources:
    workflow.register_resource("benchmark_slot", 1)


NAME = "[A-Za-z0-9][A-Za-z0-9_.-]*"


wildcard_constraints:
    hardware=NAME,
    model=NAME,
    mode="|".join(re.escape(name) for name in modes.definitions(config)),
    asset=NAME,
    python_env=NAME,


def environment_record(hardware):
    """On a cluster, an optional GPU entry's environment record once its node wrote it (a checkpoint)."""
    return checkpoints.environment_record.get(hardware=hardware).output[0]


def runs_here():
    """Jobs run on this machine, not through a cluster executor: known once Snakemake runs, not while it reads."""
    return workflow.local_exec and not workflow.remote_exec


pipe = Workflow(
    config,
    where=runs_here,
    cores_given=lambda: workflow.cores,  # read only where jobs run here: a cluster has no total
    basedir=Path(workflow.basedir),
    configfiles=list(workflow.overwrite_configfiles),
    environment_record=environment_record,
)


def code_of(script):
    """What the package code a rule's script runs does (its modules follow from the script's imports), as the
    rule's `code` param: a job reruns when that code changes in what it does, never for a comment, a docstring
    or an edit of a module it does not run."""
    return codebase.script_fingerprint(script)


# Before any job of a real run on this machine (a dry run still shows the plan, say of a GPU
# study previewed on a laptop; on a cluster the nodes decide).
onstart:
    try:
        planned = pipe.planned()
        print(planned.describe(), file=sys.stderr)
        plan.check_max_hours(planned, config["max_hours"])
    except ConfigError as error:
        raise WorkflowError(str(error)) from None


onsuccess:
    try:
        if (said := pipe.outcome()) is not None:
            print(said, file=sys.stderr)
    except UserError as error:
        raise WorkflowError(str(error)) from None
