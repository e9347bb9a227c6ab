import os
import platform
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from compilebench import codebase
from compilebench.configuration import config as configuration
from compilebench.configuration import schema
from compilebench.configuration import plan
from compilebench.core import kinds, layout, modes, records
from compilebench.core.errors import ConfigError, UserError
from compilebench.core.files import foreign_results, read_json, run_result_paths
from compilebench.parent import pyenv
from compilebench.pipeline import devices
from compilebench.report import registry

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


def runs_here():
    """Jobs run on this machine, not through a cluster executor."""
    return workflow.local_exec and not workflow.remote_exec


def active_hardware():
    """Every hardware entry, less optional GPU entries where no GPU is there to run them."""
    return [
        name for name, entry in config["hardware"].items() if is_active(name, entry)
    ]


def is_active(name, entry):
    """An optional GPU entry runs where a GPU is. Run here (a dry run included), this machine's torch tells at
    once; on a cluster only the node can tell, so there its environment job decides (a checkpoint), whatever
    the host snakemake starts on.
    """
    if not skips_if_absent(entry):
        return True
    if runs_here():
        return devices.gpu_visible()
    record = checkpoints.environment_record.get(hardware=name).output[0]
    return not records.skipped(read_json(record))


def skips_if_absent(entry):
    return entry["optional"] and entry["device"] == "cuda"


def get_skip_if_absent(wildcards):
    return skips_if_absent(config["hardware"][wildcards.hardware])


def get_deciding_host(wildcards):
    """Where an optional GPU entry's job looks for a GPU: run here, this host, so that a project moved from a
    laptop to a GPU box looks again; on a cluster, its node, whichever host snakemake starts on.
    """
    if not skips_if_absent(config["hardware"][wildcards.hardware]):
        return None
    return platform.node() if runs_here() else "cluster node"


def benchmark_jobs():
    return [
        (hardware, model, mode)
        for hardware in active_hardware()
        for model in config["models"]
        for mode in schema.model_modes(config, model)
    ]


def get_run_results(wildcards=None):
    return [
        layout.RUN.format(hardware=h, model=m, mode=mode)
        for h, m, mode in benchmark_jobs()
    ]


def get_start_records(wildcards=None):
    """The starts record of every experiment with `measure.starts`."""
    return [
        layout.STARTS.format(hardware=h, model=m, mode=mode)
        for h, m, mode in benchmark_jobs()
        if configuration.starts_plan(config, m, mode, h)
    ]


def get_starts_plan(wildcards):
    return configuration.starts_plan(
        config, wildcards.model, wildcards.mode, wildcards.hardware
    )


def get_compile_trace_reports(wildcards=None):
    """The tlparse report of every compiling experiment with `measure.compile_trace` (Snakemake's --report)."""
    return [
        layout.COMPILE_TRACE_REPORT.format(hardware=h, model=m, mode=mode)
        for h, m, mode in benchmark_jobs()
        if (exp := configuration.experiment(config, m, mode, h)).measure.compile_trace
        and kinds.of(exp.mode_settings).compiles
    ]


def processes_wanted(hardware, model, mode):
    return configuration.experiment(config, model, mode, hardware).measure.processes


# Jobs run in rounds (rules/benchmark.smk): every job that prepares a measurement first, then
# process 1 of every experiment, then process 2, ... Priorities stay above 0, snakemake's default.
ROUNDS = max(
    (
        processes_wanted(h, m, mode)
        for h in config["hardware"]
        for m in config["models"]
        for mode in schema.model_modes(config, m)
    ),
    default=1,
)
PREPARATION_PRIORITY = ROUNDS + 1
LATER_PROCESS = "[2-9]|[1-9][0-9]+"


def get_process_number(wildcards):
    return int(wildcards.process)


def get_process_priority(wildcards):
    return ROUNDS + 1 - int(wildcards.process)


def get_process_records(wildcards):
    """The records of an experiment's `measure.processes` processes, the cold one first."""
    wanted = processes_wanted(wildcards.hardware, wildcards.model, wildcards.mode)
    return [layout.PROCESS.format(**wildcards, process=k) for k in range(1, wanted + 1)]


def get_run_identities(wildcards):
    """What each result must carry to stand for its experiment: the runs table refuses any other."""
    return {
        layout.RUN.format(hardware=h, model=m, mode=mode): records.identity(
            configuration.experiment(config, m, mode, h)
        )
        for h, m, mode in benchmark_jobs()
    }


def get_start_identities(wildcards):
    """What each starts record must carry to stand for its experiment's starts: its identity, paths and repeats."""
    return {
        layout.STARTS.format(hardware=h, model=m, mode=mode): {
            **configuration.experiment(config, m, mode, h).identity(),
            **starts,
        }
        for h, m, mode in benchmark_jobs()
        if (starts := configuration.starts_plan(config, m, mode, h))
    }


def get_foreign_results(wildcards):
    """Results and starts records on disk whose fingerprint is not their experiment's (normally none): read on
    every run."""
    return foreign_results(
        {**get_run_identities(wildcards), **get_start_identities(wildcards)}
    )


def get_papers():
    return [layout.PAPER.format(ext=ext) for ext in ("html", "pdf")]


def get_final_output():
    """The paper, and with `history:` the run appended to that store once the paper is made."""
    return get_papers() + ([layout.HISTORY_ADDED] if config.get("history") else [])


def project_relative(paths):
    """The project's own files as inputs by relative name: a project moved, copied or archived with its results
    keeps the same inputs, so nothing reruns for having moved."""
    return [os.path.relpath(path) for path in paths]


REPORT_DIR = Path(os.path.relpath(Path(workflow.basedir) / "report"))


def code_of(script):
    """What the package code a rule's script runs does (its modules follow from the script's imports), as the
    rule's `code` param: a job reruns when that code changes in what it does, never for a comment, a docstring
    or an edit of a module it does not run."""
    return codebase.script_fingerprint(script)


def figure_outputs(ext, in_report=False):
    """Named outputs `{name}_{ext}`, one per figure; the SVGs are marked for Snakemake's report."""
    outputs = {}
    for name in layout.FIGURE_NAMES:
        path = layout.FIGURE.format(figure=name, ext=ext)
        if in_report:
            path = report(
                path,
                caption=f"../report/captions/{name}.rst",
                category="Figures",
                labels={"figure": name},
            )
        outputs[f"{name}_{ext}"] = path
    return outputs


def get_table_param(key):
    """A report setting as a table rule's param, read from the config when the job is made."""

    def setting(wildcards):
        return registry.report_settings(config)[key]

    return setting


def get_previous_results(wildcards):
    """The result files of `report.compare_with`: a change to them reruns the comparison."""
    previous = config["report"].get("compare_with")
    return [str(path) for path in run_result_paths(previous)] if previous else []


# What a table rule's job is given beside its table's name: the workflow's own checks for the runs table, the
# report settings for the rest.
WORKFLOW_TABLE_PARAMS = {
    "expected": get_run_identities,
    "foreign": get_foreign_results,
    "start_identities": get_start_identities,
    # the paper a rejected result removes (naming a history store in the config reruns no table)
    "downstream": get_papers(),
}


def table_inputs(spec):
    """A table's inputs from what its registry entry reads: result files only once the runs table checked them."""
    inputs = {}
    if registry.RESULTS in spec.reads:
        inputs["results"] = get_run_results
        if spec.name != "runs":
            inputs["checked"] = layout.table("runs")
    if registry.STARTS in spec.reads:
        inputs[registry.STARTS] = get_start_records
    if registry.PREVIOUS in spec.reads:
        inputs["previous"] = get_previous_results
    for name in spec.reads:
        if name in registry.TABLES:
            inputs[name] = layout.table(name)
    return inputs


def table_params(spec):
    return {
        "table": spec.name,
        "code": code_of("table"),
        **{
            key: WORKFLOW_TABLE_PARAMS.get(key) or get_table_param(key)
            for key in spec.params
        },
    }


def table_caption(spec):
    """The caption Snakemake's report shows, written from the registry where the report reads it."""
    path = Path(".snakemake", "compilebench", "captions", f"{spec.name}.rst").absolute()
    if not path.exists() or path.read_text() != spec.caption:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(spec.caption)
    return str(path)


def get_config_as_run():
    """The config the paper prints; `strict`, `max_hours` and `history` change no output of it, so they rerun
    nothing."""
    return {
        key: value
        for key, value in config.items()
        if key not in ("strict", "max_hours", "history")
    }


def get_command_line():
    """The command that reproduces this run (cores and output flags aside)."""
    files = " ".join(
        f"--configfile {Path(f).relative_to(Path.cwd()) if Path(f).is_relative_to(Path.cwd()) else f}"
        for f in workflow.overwrite_configfiles
    )
    return f"snakemake --cores 4 {files}".strip()


def get_paper_inputs(wildcards):
    used_assets = sorted(
        {
            name
            for model in config["models"]
            for name in configuration.model_assets(config, model)
        }
    )
    return {
        **{name: layout.table(name) for name in registry.table_names(paper_only=True)},
        "env": [layout.ENV_RECORD.format(hardware=h) for h in active_hardware()],
        "assets": [layout.ASSET.format(asset=name) for name in used_assets],
        "template": str(REPORT_DIR / "paper.html.j2"),
        "css": str(REPORT_DIR / "paper.css"),
        "captions": [
            str(REPORT_DIR / "captions" / f"{name}.rst") for name in layout.FIGURE_NAMES
        ],
    }


def get_experiment(wildcards):
    """The experiment in its JSON form: a job's param, compared as text, and read back typed by its script."""
    return configuration.experiment(
        config, wildcards.model, wildcards.mode, wildcards.hardware
    ).to_json()


def get_mode_check_settings(wildcards):
    """A mode's own settings, as defined: what its check depends on, and nothing model-specific."""
    return configuration.canonical(
        modes.settings(modes.definitions(config)[wildcards.mode])
    )


def is_regional(mode):
    return bool(modes.settings(modes.definitions(config)[mode]).get("regional"))


def get_region_check_model(wildcards):
    """The one model a regional mode's region check builds on the meta device to find its stack: a check per
    model, so that editing a model reruns its own experiments and no other model's."""
    return {
        wildcards.model: configuration.experiment(
            config, wildcards.model, wildcards.mode, wildcards.hardware
        ).spec.to_json()
    }


def get_mode_check(wildcards):
    """A defined mode with a backend or inductor settings is checked against the hardware's torch first; a
    regional mode's stack in the experiment's model too."""
    defined = config["mode_definitions"].get(wildcards.mode)
    if not defined or not kinds.get(defined["kind"]).compiles:
        return []
    checks = [layout.MODE_CHECK.format(**wildcards)]
    if is_regional(wildcards.mode):
        checks.append(layout.REGION_CHECK.format(**wildcards))
    return checks


def get_reference(wildcards):
    """The eager reference every mode of a model is checked against; none for a training step, which checks itself
    against eager copies stepped in its own process."""
    if config["models"][wildcards.model].get("train"):
        return []
    return layout.REFERENCE.format(hardware=wildcards.hardware, model=wildcards.model)


def get_reference_experiment(wildcards):
    return configuration.reference_experiment(
        config, wildcards.model, wildcards.hardware
    ).to_json()


def get_hardware_settings(wildcards):
    """What changes a measurement: not the price, the peaks, or the cluster settings."""
    return configuration.measured_hardware(config["hardware"][wildcards.hardware])


def get_job_threads(wildcards):
    """A benchmark-like job holds the whole machine: its entry's threads, or every core given.

    On a cluster the node is the machine: the entry's `cpus_per_task`, else one CPU
    asked for (an exclusive job still gets the whole node, and torch uses it).
    """
    entry = config["hardware"][wildcards.hardware]
    if entry.get("threads"):
        return entry["threads"]
    if runs_here():
        return workflow.cores
    return entry["resources"].get("cpus_per_task", 1)


def hardware_resources(exclusive=False):
    """Cluster resources routed by the `hardware` wildcard: each entry's `resources` reach its jobs only.

    Every key some entry sets is declared for all; an entry without it gets None,
    which leaves that resource to the profile's defaults.
    """
    keys = {key for entry in config["hardware"].values() for key in entry["resources"]}

    def lookup(key):
        return lambda wildcards: config["hardware"][wildcards.hardware][
            "resources"
        ].get(key)

    resources = {key: lookup(key) for key in sorted(keys - {"slurm_extra"})}
    if exclusive or "slurm_extra" in keys:
        resources["slurm_extra"] = lambda wildcards: slurm_extra(
            wildcards.hardware, exclusive
        )
    return resources


def slurm_extra(hardware, exclusive):
    entry = config["hardware"][hardware]
    options = ["--exclusive"] if exclusive and entry["exclusive"] else []
    options.append(entry["resources"].get("slurm_extra", ""))
    return " ".join(filter(None, options)) or None


def get_python_env_requirements_path(wildcards):
    return str(pyenv.requirements_file(wildcards.python_env))


def get_python_env_requirements(wildcards):
    """The pinned requirements file, where it exists; where not, the build records that as its failure."""
    path = pyenv.requirements_file(wildcards.python_env)
    return [str(path)] if path.is_file() else []


def get_python_env_record(wildcards):
    """A platform with its own Python environment runs its torch steps there, once that is built."""
    name = config["hardware"][wildcards.hardware].get("python_env")
    return [layout.PYTHON_ENV_RECORD.format(python_env=name)] if name else []


def get_conda_env(wildcards):
    entry = config["hardware"][wildcards.hardware]
    return f"../envs/{entry.get('conda_env', entry['device'])}.yaml"


def get_model_inputs(wildcards):
    """Downloads this model reads: its assets, and its pretrained weights if any."""
    inputs = [
        layout.ASSET.format(asset=name)
        for name in configuration.model_assets(config, wildcards.model)
    ]
    if configuration.pretrained_download(config, wildcards.model):
        name = configuration.weights_name(config, wildcards.model)
        inputs.append(layout.WEIGHTS.format(model=name))
    return inputs


def get_asset_source(wildcards):
    if wildcards.asset not in config["assets"]["files"]:
        raise WorkflowError(
            f"Asset {wildcards.asset!r} is not under config key `assets.files`."
        )
    entry = config["assets"]["files"][wildcards.asset]
    return configuration.canonical({**entry, "mirror": config["assets"]["mirror"]})


def get_model_spec(wildcards):
    return configuration.canonical(configuration.weights_entry(config, wildcards.model))


# Before any job of a real run on this machine (a dry run still shows the plan, say of a GPU
# study previewed on a laptop; on a cluster the nodes decide).
onstart:
    try:
        if runs_here():
            configuration.check_devices_here(config, devices.gpu_visible)
        hardware = active_hardware() if runs_here() else list(config["hardware"])
        planned = configuration.planned(
            config, configuration.results_done(config, layout.RUN), hardware
        )
        print(planned.describe(), file=sys.stderr)
        plan.check_max_hours(planned, config["max_hours"])
    except ConfigError as error:
        raise WorkflowError(str(error)) from None


onsuccess:
    if Path(layout.table("runs")).exists():
        from compilebench.report.tables import outcome

        try:
            print(outcome(layout.table("runs"), config["strict"]), file=sys.stderr)
        except UserError as error:
            raise WorkflowError(str(error)) from None
