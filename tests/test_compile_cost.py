"""What compiling costs: the cold compile, warm starts from the caches it wrote, and torch's own phases."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import psutil
import pytest
from helpers import TINY_MODELS, tiny_config

from compilebench import cli
from compilebench.configuration import config as configuration
from compilebench.core.records import COMPILE_PHASES
from compilebench.parent import jobs
from compilebench.worker import runner

pytestmark = pytest.mark.slow


def experiment(mode: str, layers: int = 2, **measure) -> dict:
    vit = {**TINY_MODELS["vit"], "config": {**TINY_MODELS["vit"]["config"], "num_hidden_layers": layers}}
    raw = tiny_config({"vit": vit})
    raw["measure"].update(measure)
    return configuration.experiment(configuration.validate(raw), "vit", mode, "cpu", any_mode=True)


@pytest.fixture(scope="module")
def cold_and_warm(tmp_path_factory):
    out = tmp_path_factory.mktemp("compile-cost") / "r.json"
    result = cli.benchmark_job(experiment("compile-default", private_cache=True, warm_start=True), out)
    assert result["status"] == "ok", result["error"]
    assert json.loads(out.read_text()) == result
    return result


def test_a_warm_start_reads_the_caches_the_cold_compile_wrote_and_is_far_quicker(cold_and_warm):
    warm = cold_and_warm["warm_starts"]["warm"]
    assert warm["cache_hits"]["inductor_fx"] >= 1  # it read the job's own cache, not a cold one
    assert cold_and_warm["compile_warm_s"] == warm["first_call_s"]
    assert cold_and_warm["compile_warm_s"] < 0.5 * cold_and_warm["compile_s"]
    assert psutil.Process().children(recursive=True) == []


def test_the_cpu_probe_is_a_phase_of_its_own_kept_for_later_processes_and_not_in_the_cold_compile(cold_and_warm):
    preparation = cold_and_warm["preparation"]
    assert preparation["isa_probe_s"] >= 0 and cold_and_warm["compile_s"] == preparation["first_call_s"]
    assert any(Path(runner.machine_probe_folder()).rglob("*.so.load_ok"))  # its answer, for the next process
    caches = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    with runner.inductor_caches("/nowhere"):
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/nowhere"
    assert os.environ.get("TORCHINDUCTOR_CACHE_DIR") == caches


def test_a_start_from_the_cache_bundle_loads_it_into_empty_caches(cold_and_warm):
    bundle = cold_and_warm["warm_starts"]["bundle"]
    assert bundle["bundle_loaded"] is True and cold_and_warm["compile_bundle_s"] == bundle["first_call_s"]
    assert 0 < cold_and_warm["compile_bundle_s"]


def test_the_phases_of_the_cold_compile_add_up_to_no_more_than_it(cold_and_warm):
    phases = cold_and_warm["compile_phases"]
    assert set(phases) == set(COMPILE_PHASES) and min(phases.values()) >= 0
    assert phases["dynamo"] > 0 and phases["aot_autograd"] > 0
    assert sum(phases.values()) <= cold_and_warm["compile_s"]
    assert cold_and_warm["compile_unexplained_s"] == pytest.approx(cold_and_warm["compile_s"] - sum(phases.values()))


def test_eager_keeps_its_first_call_as_the_start_up_cost_and_has_no_warm_start(tmp_path):
    result = cli.benchmark_job(experiment("eager", warm_start=True), tmp_path / "r.json")
    assert result["status"] == "ok" and result["preparation"]["first_call_s"] > 0
    assert result["compile_phases"] is None and result["compile_warm_s"] is None and "warm_starts" not in result


def test_a_warm_start_past_the_timeout_is_stopped_with_its_workers_and_records_why(tmp_path):
    # Empty caches make the "warm" start a cold compile, far longer than the two seconds it is left.
    exp = experiment("compile-max-autotune", warm_start=True, bundle_start=False)
    begin = time.monotonic()
    starts = jobs._warm_starts(
        exp, sys.executable, jobs.cache_env(tmp_path / "empty"), tmp_path / "none", tmp_path, time.monotonic() + 2
    )
    assert time.monotonic() - begin < 15
    assert starts["warm"] is None and "the warm start ran past measure.timeout_s" in starts["notes"]
    assert psutil.Process().children(recursive=True) == []


def test_a_damaged_cache_makes_the_next_process_compile_cold_and_is_replaced(tmp_path):
    """Truncated and garbage files in the caches process 1 left: process 2 compiles cold instead of failing, says
    so, and its own caches replace them."""
    exp = experiment("compile-default", layers=1, private_cache=True, warm_start=False, processes=2)
    caches, first = tmp_path / "caches", tmp_path / "1.json"
    assert jobs.process_job(exp, first, 1, caches)["status"] == "ok"
    damaged = [p for p in caches.rglob("*") if p.is_file()]
    assert damaged, "process 1 left no caches"
    for n, path in enumerate(damaged):
        path.write_bytes(path.read_bytes()[:7] if n % 2 else b"\x00garbage")
    second = jobs.process_job(exp, tmp_path / "2.json", 2, caches, first=first)
    assert second["status"] == "ok", second["error"]
    assert second["cache_replaced"]["reason"]  # why the warm start failed
    replaced = [p for p in caches.rglob("*") if p.is_file()]  # what the next process starts warm from
    assert replaced and not any(p.read_bytes() == b"\x00garbage" for p in replaced)
    from compilebench.analysis import summaries

    result = summaries.result_job(exp, [first, tmp_path / "2.json"], tmp_path / "r.json")
    assert "process 2 of 2 compiled cold, not warm" in result["processes_notes"][0]
    assert "compile_warm_samples_s" not in result and result["warm_starts"]["warm"] is None  # no warm start
