"""What the rules ask of a config: targets, inputs, params, resources and the plan, decided without torch.

`rules/common.smk` makes one `Workflow` from the validated config and what Snakemake knows of the run (where jobs
run, how many cores, the config files given, the environment checkpoint); every rule calls its methods. A method
named `get_*` is an input, param or resource function (it takes the job's wildcards); the rest build a rule's
outputs or inputs when the workflow is read.
"""

from __future__ import annotations

import functools
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..configuration import config as configuration
from ..configuration import schema
from ..core import kinds, layout, modes, records
from ..core.errors import UserError
from ..core.files import foreign_results, read_environment_record, run_result_paths
from ..parent import pyenv
from ..report import figure_catalog, registry
from . import devices

# The config keys that change no output of a run: the paper's printed config leaves them out.
RUN_ONLY_KEYS = ("strict", "max_hours", "history")
LATER_PROCESS = "[2-9]|[1-9][0-9]+"


@dataclass
class Workflow:
    """One Snakemake run of one validated config."""

    config: dict
    # Jobs run on this machine, not through a cluster executor; and how many cores they share. Each may be a
    # function: Snakemake knows them only once it runs, not while it reads the workflow (on a cluster there is no
    # total of cores at all).
    where: bool | Callable[[], bool] = True
    cores_given: int | Callable[[], int] = 1
    basedir: Path = Path(".")
    configfiles: list[str] = field(default_factory=list)
    # On a cluster, the environment record of a hardware entry, once its checkpoint ran (the path).
    environment_record: Callable[[str], str] | None = None
    gpu_visible: Callable[[], bool] = devices.gpu_visible

    @property
    def runs_here(self) -> bool:
        return bool(self.where() if callable(self.where) else self.where)

    @property
    def cores(self) -> int:
        return int(self.cores_given() if callable(self.cores_given) else self.cores_given)

    # The plan: which experiments run where, and in which rounds.

    def is_active(self, name: str, entry: dict) -> bool:
        """An optional GPU entry runs where a GPU is. Run here (a dry run included), this machine's torch tells at
        once; on a cluster only the node can tell, so there its environment job decides (a checkpoint), whatever
        the host snakemake starts on."""
        if not skips_if_absent(entry):
            return True
        if self.runs_here:
            return self.gpu_visible()
        return not records.skipped(read_environment_record(self.environment_record(name)))

    def active_hardware(self) -> list[str]:
        """Every hardware entry, less optional GPU entries where no GPU is there to run them."""
        return [name for name, entry in self.config["hardware"].items() if self.is_active(name, entry)]

    def benchmark_jobs(self) -> list[tuple[str, str, str]]:
        return [
            (hardware, model, mode)
            for hardware in self.active_hardware()
            for model in self.config["models"]
            for mode in schema.model_modes(self.config, model)
        ]

    def experiment(self, hardware: str, model: str, mode: str):
        return configuration.experiment(self.config, model, mode, hardware)

    def processes_wanted(self, hardware: str, model: str, mode: str) -> int:
        return self.experiment(hardware, model, mode).measure.processes

    @functools.cached_property
    def rounds(self) -> int:
        """Jobs run in rounds (rules/benchmark.smk): every job that prepares a measurement first, then process 1 of
        every experiment, then process 2, ... Priorities stay above 0, snakemake's default."""
        config = self.config
        every = (
            self.processes_wanted(h, m, mode)
            for h in config["hardware"]
            for m in config["models"]
            for mode in schema.model_modes(config, m)
        )
        return max(every, default=1)

    @property
    def preparation_priority(self) -> int:
        return self.rounds + 1

    @staticmethod
    def get_process_number(wildcards) -> int:
        return int(wildcards.process)

    def get_process_priority(self, wildcards) -> int:
        return self.rounds + 1 - int(wildcards.process)

    def planned(self):
        """Before any job of a real run: the devices this machine must have (here; on a cluster the nodes decide),
        and what the run will measure, with its time bound (`plan.check_max_hours` refuses it past `max_hours`)."""
        config = self.config
        if self.runs_here:
            configuration.check_devices_here(config, self.gpu_visible)
        hardware = self.active_hardware() if self.runs_here else list(config["hardware"])
        return configuration.planned(config, configuration.results_done(config, layout.RUN), hardware)

    def outcome(self) -> str | None:
        """After a run: how many experiments ended how (and with `strict`, a failure where any is not ok)."""
        if not Path(layout.table("runs")).exists():
            return None
        from ..report.tables import outcome

        return outcome(layout.table("runs"), self.config["strict"])

    # Targets.

    def get_papers(self) -> list[str]:
        return [layout.PAPER.format(ext=ext) for ext in ("html", "pdf")]

    def get_final_output(self) -> list[str]:
        """The paper, and with `history:` the run appended to that store once the paper is made."""
        return self.get_papers() + ([layout.HISTORY_ADDED] if self.config.get("history") else [])

    def get_run_results(self, wildcards=None) -> list[str]:
        return [layout.RUN.format(hardware=h, model=m, mode=mode) for h, m, mode in self.benchmark_jobs()]

    def get_start_records(self, wildcards=None) -> list[str]:
        """The starts record of every experiment with `measure.starts`."""
        return [
            layout.STARTS.format(hardware=h, model=m, mode=mode)
            for h, m, mode in self.benchmark_jobs()
            if configuration.starts_plan(self.config, m, mode, h)
        ]

    def get_compile_trace_reports(self, wildcards=None) -> list[str]:
        """The tlparse report of every compiling experiment with `measure.compile_trace` (Snakemake's --report)."""
        return [
            layout.COMPILE_TRACE_REPORT.format(hardware=h, model=m, mode=mode)
            for h, m, mode in self.benchmark_jobs()
            if (exp := self.experiment(h, m, mode)).measure.compile_trace and kinds.of(exp.mode_settings).compiles
        ]

    # An experiment's jobs.

    def get_experiment(self, wildcards) -> dict:
        """The experiment in its JSON form: a job's param, compared as text, and read back typed by its script."""
        return self.experiment(wildcards.hardware, wildcards.model, wildcards.mode).to_json()

    def get_starts_plan(self, wildcards) -> dict | None:
        return configuration.starts_plan(self.config, wildcards.model, wildcards.mode, wildcards.hardware)

    def get_process_records(self, wildcards) -> list[str]:
        """The records of an experiment's `measure.processes` processes, the cold one first."""
        wanted = self.processes_wanted(wildcards.hardware, wildcards.model, wildcards.mode)
        return [layout.PROCESS.format(**wildcards, process=k) for k in range(1, wanted + 1)]

    def get_reference(self, wildcards) -> list[str] | str:
        """The eager reference every mode of a model is checked against; none for a training step, which checks
        itself against eager copies stepped in its own process."""
        if self.config["models"][wildcards.model].get("train"):
            return []
        return layout.REFERENCE.format(hardware=wildcards.hardware, model=wildcards.model)

    def get_reference_experiment(self, wildcards) -> dict:
        return configuration.reference_experiment(self.config, wildcards.model, wildcards.hardware).to_json()

    def is_regional(self, mode: str) -> bool:
        return bool(modes.settings(modes.definitions(self.config)[mode]).get("regional"))

    def get_mode_check(self, wildcards) -> list[str]:
        """A defined mode with a backend or inductor settings is checked against the hardware's torch first; a
        regional mode's stack in the experiment's model too."""
        defined = self.config["mode_definitions"].get(wildcards.mode)
        if not defined or not kinds.get(defined["kind"]).compiles:
            return []
        checks = [layout.MODE_CHECK.format(**wildcards)]
        if self.is_regional(wildcards.mode):
            checks.append(layout.REGION_CHECK.format(**wildcards))
        return checks

    def get_mode_check_settings(self, wildcards) -> dict:
        """A mode's own settings, as defined: what its check depends on, and nothing model-specific."""
        return configuration.canonical(modes.settings(modes.definitions(self.config)[wildcards.mode]))

    def get_region_check_model(self, wildcards) -> dict:
        """The one model a regional mode's region check builds on the meta device to find its stack: a check per
        model, so that editing a model reruns its own experiments and no other model's."""
        return {wildcards.model: self.experiment(wildcards.hardware, wildcards.model, wildcards.mode).spec.to_json()}

    # Identities the tables check results against.

    def get_run_identities(self, wildcards=None) -> dict[str, dict]:
        """What each result must carry to stand for its experiment: the runs table refuses any other."""
        return {
            layout.RUN.format(hardware=h, model=m, mode=mode): records.identity(self.experiment(h, m, mode))
            for h, m, mode in self.benchmark_jobs()
        }

    def get_start_identities(self, wildcards=None) -> dict[str, dict]:
        """What each starts record must carry to stand for its experiment's starts: its identity, paths, repeats."""
        return {
            layout.STARTS.format(hardware=h, model=m, mode=mode): {**self.experiment(h, m, mode).identity(), **starts}
            for h, m, mode in self.benchmark_jobs()
            if (starts := configuration.starts_plan(self.config, m, mode, h))
        }

    def get_foreign_results(self, wildcards=None) -> list[str]:
        """Results and starts records on disk whose fingerprint is not their experiment's (normally none): read on
        every run."""
        return foreign_results({**self.get_run_identities(), **self.get_start_identities()})

    # Hardware.

    def hardware(self, wildcards) -> dict:
        return self.config["hardware"][wildcards.hardware]

    def get_skip_if_absent(self, wildcards) -> bool:
        return skips_if_absent(self.hardware(wildcards))

    def get_deciding_host(self, wildcards) -> str | None:
        """Where an optional GPU entry's job looks for a GPU: run here, this host, so that a project moved from a
        laptop to a GPU box looks again; on a cluster, its node, whichever host snakemake starts on."""
        if not skips_if_absent(self.hardware(wildcards)):
            return None
        return platform.node() if self.runs_here else "cluster node"

    def get_hardware_settings(self, wildcards) -> dict:
        """What changes a measurement: not the price, the peaks, or the cluster settings."""
        return configuration.measured_hardware(self.hardware(wildcards))

    def get_job_threads(self, wildcards) -> int:
        """A benchmark-like job holds the whole machine: its entry's threads, or every core given. On a cluster the
        node is the machine: the entry's `cpus_per_task`, else one CPU asked for (an exclusive job still gets the
        whole node, and torch uses it)."""
        entry = self.hardware(wildcards)
        if entry.get("threads"):
            return entry["threads"]
        if self.runs_here:
            return self.cores
        return entry["resources"].get("cpus_per_task", 1)

    def hardware_resources(self, exclusive: bool = False) -> dict[str, Callable]:
        """Cluster resources routed by the `hardware` wildcard: each entry's `resources` reach its jobs only. Every
        key some entry sets is declared for all; an entry without it gets None, which leaves that resource to the
        profile's defaults."""
        keys = {key for entry in self.config["hardware"].values() for key in entry["resources"]}
        resources: dict[str, Callable] = {
            key: _resource_lookup(self.config, key) for key in sorted(keys - {"slurm_extra"})
        }
        if exclusive or "slurm_extra" in keys:
            resources["slurm_extra"] = lambda wildcards: self.slurm_extra(wildcards.hardware, exclusive)
        return resources

    def slurm_extra(self, hardware: str, exclusive: bool) -> str | None:
        entry = self.config["hardware"][hardware]
        options = ["--exclusive"] if exclusive and entry["exclusive"] else []
        options.append(entry["resources"].get("slurm_extra", ""))
        return " ".join(filter(None, options)) or None

    def get_python_env_record(self, wildcards) -> list[str]:
        """A platform with its own Python environment runs its torch steps there, once that is built."""
        name = self.hardware(wildcards).get("python_env")
        return [layout.PYTHON_ENV_RECORD.format(python_env=name)] if name else []

    def get_conda_env(self, wildcards) -> str:
        entry = self.hardware(wildcards)
        return f"../envs/{entry.get('conda_env', entry['device'])}.yaml"

    # Downloads and Python environments.

    def get_model_inputs(self, wildcards) -> list[str]:
        """Downloads this model reads: its assets, and its pretrained weights if any."""
        config = self.config
        inputs = [layout.ASSET.format(asset=name) for name in configuration.model_assets(config, wildcards.model)]
        if configuration.pretrained_download(config, wildcards.model):
            inputs.append(layout.WEIGHTS.format(model=configuration.weights_name(config, wildcards.model)))
        return inputs

    def get_asset_source(self, wildcards) -> dict:
        files = self.config["assets"]["files"]
        if wildcards.asset not in files:
            raise UserError(f"Asset {wildcards.asset!r} is not under config key `assets.files`.")
        return configuration.canonical({**files[wildcards.asset], "mirror": self.config["assets"]["mirror"]})

    def get_model_spec(self, wildcards) -> dict:
        return configuration.canonical(configuration.weights_entry(self.config, wildcards.model))

    def get_python_env_requirements_path(self, wildcards) -> str:
        return str(pyenv.requirements_file(wildcards.python_env))

    def get_python_env_requirements(self, wildcards) -> list[str]:
        """The pinned requirements file, where it exists; where not, the build records that as its failure."""
        path = pyenv.requirements_file(wildcards.python_env)
        return [str(path)] if path.is_file() else []

    # Tables and the paper.

    @property
    def report_dir(self) -> Path:
        return Path(os.path.relpath(Path(self.basedir) / "report"))

    def get_previous_results(self, wildcards=None) -> list[str]:
        """The result files of `report.compare_with`: a change to them reruns the comparison."""
        previous = self.config["report"].get("compare_with")
        return [str(path) for path in run_result_paths(previous)] if previous else []

    def table_inputs(self, spec) -> dict[str, Any]:
        """A table's inputs from what its registry entry reads: result files only once the runs table checked
        them."""
        inputs: dict[str, Any] = {}
        if registry.RESULTS in spec.reads:
            inputs["results"] = self.get_run_results
            if spec.name != "runs":
                inputs["checked"] = layout.table("runs")
        if registry.STARTS in spec.reads:
            inputs[registry.STARTS] = self.get_start_records
        if registry.PREVIOUS in spec.reads:
            inputs["previous"] = self.get_previous_results
        for name in spec.reads:
            if name in registry.TABLES:
                inputs[name] = layout.table(name)
        return inputs

    def table_params(self, spec, code: str) -> dict[str, Any]:
        """A table rule's params: its name, its code, the workflow's own checks for the runs table (the paper a
        rejected result removes among them), and report settings for the rest."""
        workflow_params = {
            "expected": self.get_run_identities,
            "foreign": self.get_foreign_results,
            "start_identities": self.get_start_identities,
            "downstream": self.get_papers(),  # naming a history store in the config reruns no table
            "command": self.get_command_line(),
        }
        return {
            "table": spec.name,
            "code": code,
            **{key: workflow_params.get(key) or self.report_setting(key) for key in spec.params},
        }

    def report_setting(self, key: str) -> Callable:
        """A report setting as a table rule's param, read from the config when the job is made."""
        return lambda wildcards: registry.report_settings(self.config)[key]

    def get_config_as_run(self) -> dict:
        """The config the paper prints; `strict`, `max_hours` and `history` change no output of it, so they rerun
        nothing."""
        return {key: value for key, value in self.config.items() if key not in RUN_ONLY_KEYS}

    def get_command_line(self) -> str:
        """The command that reproduces this run (cores and output flags aside)."""
        here = Path.cwd()
        files = " ".join(
            f"--configfile {Path(f).relative_to(here) if Path(f).is_relative_to(here) else f}" for f in self.configfiles
        )
        return f"snakemake --cores 4 {files}".strip()

    def get_paper_inputs(self, wildcards=None) -> dict[str, Any]:
        config, report = self.config, self.report_dir
        used_assets = sorted({name for model in config["models"] for name in configuration.model_assets(config, model)})
        return {
            **{name: layout.table(name) for name in registry.table_names(paper_only=True)},
            "env": [layout.ENV_RECORD.format(hardware=h) for h in self.active_hardware()],
            "assets": [layout.ASSET.format(asset=name) for name in used_assets],
            "template": str(report / "paper.html.j2"),
            "css": str(report / "paper.css"),
        }


def skips_if_absent(entry: dict) -> bool:
    """An optional GPU entry: skipped, not failed, where no GPU is."""
    return entry["optional"] and entry["device"] == "cuda"


def _resource_lookup(config: dict, key: str) -> Callable:
    return lambda wildcards: config["hardware"][wildcards.hardware]["resources"].get(key)


def figure_outputs(ext: str, mark: Callable | None = None) -> dict[str, Any]:
    """Named outputs `{name}_{ext}`, one per figure; with `mark` (Snakemake's `report`), each marked for Snakemake's
    report with its caption."""
    outputs: dict[str, Any] = {}
    for spec in figure_catalog.FIGURES:
        path = layout.FIGURE.format(figure=spec.name, ext=ext)
        if mark is not None:
            caption = written_caption(f"figure-{spec.name}", spec.caption)
            path = mark(path, caption=caption, category="Figures", labels={"figure": spec.name})
        outputs[f"{spec.name}_{ext}"] = path
    return outputs


def table_caption(spec) -> str:
    """A table's caption where Snakemake's report reads it, written from the registry."""
    return written_caption(spec.name, spec.caption)


def written_caption(name: str, text: str, folder: Path = Path(".snakemake", "compilebench", "captions")) -> str:
    """A caption declared in the package, as the file Snakemake's report reads (rewritten only when it changed)."""
    path = (folder / f"{name}.rst").absolute()
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(path)
