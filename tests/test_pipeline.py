"""The workflow's logic (`pipeline.workflow`), as the rules call it, on validated configs and fake wildcards: no
Snakemake process, no torch."""

from __future__ import annotations

import json

from helpers import tiny_config

from compilebench.configuration import config as configuration
from compilebench.core import layout
from compilebench.pipeline.workflow import Workflow, figure_outputs

GPU = {"device": "cuda", "optional": True}


class Wildcards(dict):
    """Snakemake's wildcards: a mapping whose keys are attributes too."""

    __getattr__ = dict.__getitem__


def workflow(raw: dict | None = None, **facts) -> Workflow:
    return Workflow(configuration.validate(raw or tiny_config()), **facts)


def test_an_optional_gpu_entry_runs_only_where_a_gpu_is_here_or_its_node_said_so(tmp_path):
    raw = tiny_config(hardware={"cpu": {"device": "cpu"}, "gpu": GPU})
    assert workflow(raw, gpu_visible=lambda: False).active_hardware() == ["cpu"]
    assert workflow(raw, gpu_visible=lambda: True).active_hardware() == ["cpu", "gpu"]
    record = tmp_path / "gpu.json"
    record.write_text(json.dumps({"status": "skipped"}))
    on_cluster = workflow(raw, where=False, environment_record=lambda name: str(record))
    assert on_cluster.active_hardware() == ["cpu"]
    record.write_text(json.dumps({"status": "ok"}))
    assert on_cluster.active_hardware() == ["cpu", "gpu"]
    gpu = Wildcards(hardware="gpu")
    assert workflow(raw).get_skip_if_absent(gpu) and on_cluster.get_deciding_host(gpu) == "cluster node"
    assert workflow(raw).get_deciding_host(Wildcards(hardware="cpu")) is None


def test_every_experiment_has_a_result_target_and_its_processes_run_in_rounds():
    raw = tiny_config(modes=["eager", "compile-default"])
    raw["models"]["resnet"]["measure"] = {"processes": 3}
    pipe = workflow(raw)
    models = list(raw["models"])
    assert pipe.get_run_results() == [
        layout.RUN.format(hardware="cpu", model=m, mode=mode) for m in models for mode in ("eager", "compile-default")
    ]
    assert pipe.rounds == 3 and pipe.preparation_priority == 4
    three = Wildcards(hardware="cpu", model="resnet", mode="eager", process="3")
    assert pipe.get_process_priority(three) == 1 and pipe.get_process_number(three) == 3
    experiment = Wildcards(hardware="cpu", model="resnet", mode="eager")
    assert pipe.get_process_records(experiment) == [layout.PROCESS.format(**experiment, process=k) for k in (1, 2, 3)]
    assert pipe.get_experiment(experiment)["measure"]["processes"] == 3
    identities = pipe.get_run_identities()
    assert set(identities) == set(pipe.get_run_results())
    assert all(len(identity["experiment_sha256"]) == 64 for identity in identities.values())


def test_a_defined_compiling_mode_is_checked_first_and_a_regional_one_per_model():
    definitions = {
        "frozen": {"kind": "compile", "compile": {"options": {"freezing": True}}},
        "blocks": {"kind": "compile", "compile": {"regional": True}},
    }
    pipe = workflow(tiny_config(modes=["eager", "frozen", "blocks"], mode_definitions=definitions))
    at = {"hardware": "cpu", "model": "vit"}
    assert pipe.get_mode_check(Wildcards(at, mode="eager")) == []
    assert pipe.get_mode_check(Wildcards(at, mode="frozen")) == [layout.MODE_CHECK.format(**at, mode="frozen")]
    assert pipe.get_mode_check(Wildcards(at, mode="blocks"))[1] == layout.REGION_CHECK.format(**at, mode="blocks")
    assert pipe.get_mode_check_settings(Wildcards(at, mode="frozen"))["options"] == {"freezing": True}
    assert list(pipe.get_region_check_model(Wildcards(at, mode="blocks"))) == ["vit"]


def test_a_training_step_has_no_reference_and_every_other_model_has_its_own():
    raw = tiny_config(modes=["eager", "compile-default"])
    raw["models"]["llama"]["train"] = {}
    pipe = workflow(raw)
    assert pipe.get_reference(Wildcards(hardware="cpu", model="llama.train")) == []
    assert pipe.get_reference(Wildcards(hardware="cpu", model="resnet")) == layout.REFERENCE.format(
        hardware="cpu", model="resnet"
    )


def test_a_job_holds_the_whole_machine_here_and_its_entrys_cpus_on_a_cluster():
    hardware = {
        "cpu": {"device": "cpu"},
        "pinned": {"device": "cpu", "threads": 3},
        "node": {"device": "cpu", "resources": {"cpus_per_task": 8, "slurm_extra": "--qos=bench"}},
    }
    raw = tiny_config(hardware=hardware)
    here, cluster = workflow(raw, cores_given=4), workflow(raw, where=False)
    assert here.get_job_threads(Wildcards(hardware="cpu")) == 4
    assert here.get_job_threads(Wildcards(hardware="pinned")) == 3
    assert cluster.get_job_threads(Wildcards(hardware="node")) == 8
    assert cluster.get_job_threads(Wildcards(hardware="cpu")) == 1
    resources = cluster.hardware_resources(exclusive=True)
    assert resources["cpus_per_task"](Wildcards(hardware="node")) == 8
    assert resources["cpus_per_task"](Wildcards(hardware="cpu")) is None
    assert resources["slurm_extra"](Wildcards(hardware="node")) == "--exclusive --qos=bench"
    assert cluster.hardware_resources()["slurm_extra"](Wildcards(hardware="cpu")) is None


def test_the_paper_prints_the_config_as_run_and_the_command_that_reproduces_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pipe = workflow(tiny_config(strict=True, history="h.sqlite"), configfiles=[str(tmp_path / "config/x.yaml")])
    assert pipe.get_command_line() == "snakemake --cores 4 --configfile config/x.yaml"
    assert not {"strict", "max_hours", "history"} & set(pipe.get_config_as_run())
    assert pipe.get_final_output() == [*pipe.get_papers(), layout.HISTORY_ADDED]
    assert workflow().get_final_output() == workflow().get_papers()
    inputs = pipe.get_paper_inputs()
    assert inputs["env"] == [layout.ENV_RECORD.format(hardware="cpu")] and inputs["template"].endswith("paper.html.j2")
    marked = figure_outputs("svg", mark=lambda path, **how: (path, how["category"]))
    assert all(category == "Figures" for _, category in marked.values())


def test_where_jobs_run_and_the_cores_are_asked_only_when_a_rule_needs_them():
    """Snakemake knows its executor only once it runs, not while it reads the workflow; a cluster has no total of
    cores, and asking for one stops the workflow."""

    def no_total():
        raise RuntimeError("no total of cores on a cluster")

    raw = tiny_config(hardware={"cpu": {"device": "cpu"}})  # no `threads`: the job's are the machine's
    cluster = workflow(raw, where=lambda: False, cores_given=no_total)
    assert cluster.get_job_threads(Wildcards(hardware="cpu")) == 1 and not cluster.runs_here
    assert workflow(raw, where=lambda: True, cores_given=lambda: 6).get_job_threads(Wildcards(hardware="cpu")) == 6
