"""The workflow on a real SLURM cluster (one node, started by the test) through Snakemake's SLURM executor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
import slurm_cluster
import yaml
from helpers import ASSETS_MIRROR, CPU, ROOT, TINY_MODELS, WORKFLOW_MEASURE, copy_project, expected_runs

from compilebench.configuration import config as configuration
from compilebench.report.standalone import write_tables

pytestmark = [
    pytest.mark.slow,
    pytest.mark.slurm,
    pytest.mark.skipif(slurm_cluster.missing() is not None, reason=str(slurm_cluster.missing())),
]

PARTITIONS = {"cpu": "cpu", "accel": "gpu"}


def two_partition_config() -> dict:
    assets = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["assets"]
    return {
        "modes": ["eager"],  # what a compile mode adds is the same job on the node: the shared run has it
        "measure": dict(WORKFLOW_MEASURE),
        "models": {"resnet": {**TINY_MODELS["resnet"], "image": "dog.jpg", "labels": "imagenet_classes.txt"}},
        "hardware": {
            **{
                name: {**CPU, "resources": {"slurm_partition": partition, "mem_mb": 2000, "runtime": 20}}
                for name, partition in PARTITIONS.items()
            },
            # The node has no GPU: its environment job, not the host snakemake runs on, says so.
            "gpu": {"device": "cuda", "optional": True, "resources": {"slurm_partition": "gpu", "mem_mb": 2000}},
        },
        "assets": {**assets, "mirror": str(ASSETS_MIRROR)},
    }


def run_bounded(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """Run snakemake in its own process group; past `timeout`, kill the group (it may ignore SIGTERM)."""
    process = subprocess.Popen(
        args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        raise AssertionError(f"{' '.join(args)} ran past {timeout} s:\n{out[-3000:]}\n{err[-5000:]}") from None
    if process.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed:\n{out[-3000:]}\n{err[-5000:]}")
    return subprocess.CompletedProcess(args, process.returncode, out, err)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = slurm_cluster.Cluster(tmp_path_factory.mktemp("slurm"))
    try:
        started.start()
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def on_slurm(cluster, tmp_path_factory):
    project = copy_project(tmp_path_factory.mktemp("on-slurm"), two_partition_config())
    run_bounded(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--workflow-profile",
            "config/profiles/slurm",
            "--jobs",
            "4",
            "--slurm-status-command",
            "squeue",
            "--slurm-init-seconds-before-status-checks",
            "1",
            "--slurm-no-account",
            "--slurm-keep-successful-logs",
        ],
        project,
        timeout=1200,
    )
    return project


def results(project: Path) -> dict[str, dict]:
    return {
        str(p.relative_to(project)): json.loads(p.read_text()) for p in (project / "results" / "runs").rglob("*.json")
    }


def test_every_job_ran_ok_in_the_partition_its_hardware_names(on_slurm):
    found = results(on_slurm)
    assert set(found) == expected_runs(two_partition_config(), PARTITIONS)
    for result in found.values():
        assert result["status"] == "ok", result["error"]
        assert result["environment"]["slurm"]["job_partition"] == PARTITIONS[result["hardware"]]
        assert result["environment"]["slurm"]["job_id"]


def test_an_optional_gpu_entry_is_decided_by_its_own_job_on_the_node(on_slurm):
    record = json.loads((on_slurm / "results" / "env" / "gpu.json").read_text())
    assert record["status"] == "skipped" and "sees no CUDA or ROCm GPU" in record["skipped_because"]
    assert record["slurm"]["job_partition"] == "gpu" and record["slurm"]["job_id"]
    assert not (on_slurm / "results" / "runs" / "gpu").exists()
    assert "gpu" not in set(pd.read_csv(on_slurm / "results" / "tables" / "runs.csv")["hardware"])


def test_benchmark_jobs_did_not_overlap(on_slurm):
    spans = sorted(
        (datetime.fromisoformat(r["started_at"]), datetime.fromisoformat(r["finished_at"]))
        for r in results(on_slurm).values()
    )
    assert all(previous_end <= start for (_, previous_end), (start, _) in zip(spans, spans[1:]))


def test_downloads_tables_and_report_ran_locally(on_slurm):
    submitted = {p.name.removeprefix("rule_") for p in (on_slurm / ".snakemake" / "slurm_logs").iterdir()}
    assert submitted == {"environment_record", "reference_output", "benchmark_cold_process"}
    html = (on_slurm / "results" / "report" / "paper.html").read_text()
    assert 'id="cluster-table"' in html and "<td>accel</td><td>gpu</td>" in html
    assert (on_slurm / "results" / "report" / "paper.pdf").is_file()


def test_the_cluster_run_gives_the_tables_a_local_run_gives(on_slurm, tmp_path):
    """The same tables, column for column and row for row, as compilebench builds here from the results the cluster
    wrote, with a row per result."""
    config = configuration.validate(yaml.safe_load((on_slurm / "config" / "config.yaml").read_text()))
    local = write_tables(sorted((on_slurm / "results" / "runs").rglob("*.json")), config, tmp_path)
    for table in ("runs", "speedups", "limits", "top_ops", "summary", "latency_samples"):
        here, there = pd.read_csv(local[table]), pd.read_csv(on_slurm / "results" / "tables" / f"{table}.csv")
        assert list(here.columns) == list(there.columns) and len(here) == len(there), table
    runs = pd.read_csv(on_slurm / "results" / "tables" / "runs.csv")
    assert {f"results/runs/{r.hardware}/{r.model}/{r.mode}.json" for r in runs.itertuples()} == set(results(on_slurm))
    assert runs["status"].eq("ok").all() and runs["median_ms"].gt(0).all()
