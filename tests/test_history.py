"""Results over time: a store of finished runs, changes along each series, the regressions gate and the dashboard,
on histories of synthetic runs with a known step and without one."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import CHROMIUM, compilebench
from synthetic import synthetic_results

from compilebench.analysis.stats import summarize
from compilebench.history import changes, store
from compilebench.history.dashboard import shown

RUNS = 10
STEP_AT = 6  # the first run of the slower level, counted from 1


def synthetic_run(folder: Path, number: int, factor: float, rng: np.random.Generator, torch: str = "2.14.1") -> Path:
    """One finished run: the synthetic results, every mode's calls `factor` times as long and each result a little
    off its neighbours' (run-to-run noise of about 1%), measured on day `number` of a month with `torch`."""
    paths = synthetic_results(folder / "results", hardware=("cpu",))
    for path in paths:
        result = json.loads(path.read_text())
        when = f"2026-11-{number:02d}T03:00:00+00:00"
        result["started_at"] = result["finished_at"] = when
        result["environment"] = {**(result.get("environment") or {}), "torch": torch}
        if result["status"] == "ok":
            scale = factor * float(np.exp(rng.normal(0, 0.01)))
            result["latency_ms"] = [x * scale for x in result["latency_ms"]]
            result["stats"] = summarize(result["latency_ms"], resamples=200)
            for process in result.get("processes") or []:
                process["latency_ms"] = [x * scale for x in process["latency_ms"]]
                process["median_ms"] = float(np.median(process["latency_ms"]))
        path.write_text(json.dumps(result))
    return folder


def tables_made(folder: Path) -> Path:
    """The run in `folder` finished: its runs table, listing its results, made after them (the columns `history add`
    reads of it)."""
    results = [json.loads(path.read_text()) for path in sorted((folder / "results" / "runs").rglob("*.json"))]
    rows = pd.DataFrame([{key: r[key] for key in ("hardware", "model", "mode")} for r in results])
    (folder / "results" / "tables").mkdir(parents=True, exist_ok=True)
    rows.to_csv(folder / "results" / "tables" / "runs.csv", index=False)
    return folder


def history(tmp_path: Path, factors: list[float], seed: int = 0, torches: list[str] | None = None) -> Path:
    rng = np.random.default_rng(seed)
    path = tmp_path / "history.sqlite"
    for number, factor in enumerate(factors, 1):
        torch = torches[number - 1] if torches else "2.14.1"
        store.add(tables_made(synthetic_run(tmp_path / f"run{number}", number, factor, rng, torch)), path)
    return path


def found(path: Path) -> dict:
    with store.opened(path) as connection:
        return changes.all_changes(changes.read_series(connection))


def test_a_step_from_run_k_is_found_at_run_k_with_its_size_and_the_gate_fails(tmp_path):
    path = history(tmp_path, [1.0] * (STEP_AT - 1) + [1.2] * (RUNS - STEP_AT + 1))
    latency = {key: c for key, c in found(path).items() if key[3] == "latency_ms"}
    assert latency and all(len(c) == 1 and c[0].at == STEP_AT - 1 for c in latency.values()), latency
    change = next(iter(latency.values()))[0]
    assert change.regression and change.verdict == "slower"
    assert change.ci95[0] <= 1 / 1.2 * 1.02 and change.ratio == pytest.approx(1 / 1.2, rel=0.03)
    done = compilebench("history", "regressions", "--store", path, "--fail-on-regression")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"at run {STEP_AT} of {RUNS}" in done.stdout and "REGRESSION" in done.stdout
    assert compilebench("history", "regressions", "--store", path).returncode == 0  # a report without the flag


def test_an_aa_history_of_the_same_size_reports_no_change(tmp_path):
    path = history(tmp_path, [1.0] * RUNS, seed=1)
    assert {key: c for key, c in found(path).items() if c} == {}
    done = compilebench("history", "regressions", "--store", path, "--fail-on-regression")
    assert done.returncode == 0 and "0 with a change, 0 lost in the newest run, 0 regressed" in done.stdout


def test_a_newest_run_whose_results_all_failed_is_a_regression_named_with_its_error(tmp_path):
    path = history(tmp_path, [1.0] * 3)
    broken = synthetic_run(tmp_path / "run4", 4, 1.0, np.random.default_rng(4))
    for result_path in (broken / "results").rglob("*.json"):
        result = json.loads(result_path.read_text())
        if result.get("status") == "ok":
            result.update(status="failed", error={"message": "the benchmark process was killed by SIGKILL"})
            result_path.write_text(json.dumps(result))
    store.add(tables_made(broken), path)
    done = compilebench("history", "regressions", "--store", path, "--fail-on-regression")
    assert done.returncode == 1, done.stdout + done.stderr
    lost = [line for line in done.stdout.splitlines() if "ok → failed in the newest run" in line]
    assert lost and all(line.endswith("killed by SIGKILL  REGRESSION") for line in lost)
    assert f"{len(lost)} lost in the newest run, {len(lost)} regressed" in done.stdout


def two_speed_history(tmp_path: Path, factors: list[float], seed: int) -> Path:
    """Runs of three processes each, every process at one of the machine's two speeds (the slower 1.7 times the
    faster, two in five processes), so that a run's median moves between them from run to run."""
    rng = np.random.default_rng(seed)
    path = tmp_path / "two-speeds.sqlite"
    for number, factor in enumerate(factors, 1):
        run = synthetic_run(tmp_path / f"speeds{number}", number, factor, rng)
        for result_path in (run / "results" / "runs").rglob("*.json"):
            result = json.loads(result_path.read_text())
            if result["status"] != "ok":
                continue
            base = result["stats"]["median_ms"]
            levels = [base * (1.7 if rng.random() < 0.4 else 1.0) * float(np.exp(rng.normal(0, 0.01))) for _ in "abc"]
            result["processes"] = [{"median_ms": level} for level in levels]
            result["stats"]["median_ms"] = float(np.median(levels))
            result_path.write_text(json.dumps(result))
        store.add(tables_made(run), path)
    return path


def test_on_a_machine_with_two_speeds_the_best_process_series_finds_the_step_the_median_misses(tmp_path):
    """Each run's fastest process keeps the faster speed whichever speed the others landed on: its series finds a
    1.2x step at its run, and in an A/A history of the same machine no change; where the runs' medians move with how
    the processes fell between the speeds, a change there is `unclear` and names the runs, and the gate passes."""
    stepped = found(two_speed_history(tmp_path / "stepped", [1.0] * (STEP_AT - 1) + [1.2] * (RUNS - STEP_AT + 1), 3))
    best = {key: c for key, c in stepped.items() if key[3] == "latency_ms:best_process"}
    assert best and all(len(c) == 1 and c[0].at == STEP_AT - 1 and c[0].regression for c in best.values()), best
    assert all(c[0].ratio == pytest.approx(1 / 1.2, rel=0.03) for c in best.values())
    aa_path = two_speed_history(tmp_path / "aa", [1.0] * RUNS, 4)
    aa = found(aa_path)
    assert not [c for key, c in aa.items() if key[3].endswith(":best_process") and c]
    medians = [c for key, found_there in aa.items() for c in found_there if not key[3].endswith(":best_process")]
    assert all(c.verdict == "unclear" and c.two_speeds and not c.regression for c in medians)  # the speeds, said so
    done = compilebench("history", "regressions", "--store", aa_path, "--fail-on-regression")
    assert done.returncode == 0 and "REGRESSION" not in done.stdout, done.stdout + done.stderr


def test_the_same_run_twice_adds_nothing_and_two_appends_at_once_lose_nothing(tmp_path):
    rng = np.random.default_rng(0)
    runs = [tables_made(synthetic_run(tmp_path / f"run{k}", k, 1.0, rng)) for k in (1, 2, 3)]
    path = tmp_path / "history.sqlite"
    assert store.add(runs[0], path).new and not store.add(runs[0], path).new
    both = [subprocess.Popen([sys.executable, "-m", "compilebench.cli", "history", "add", str(run), "--store",
                              str(path)], stdout=subprocess.PIPE, text=True) for run in runs[1:]]  # fmt: skip
    assert [p.wait() for p in both] == [0, 0]
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert connection.execute("SELECT COUNT(*) FROM runs").fetchone() == (3,)
        per_run = connection.execute("SELECT COUNT(*) FROM results GROUP BY run_id").fetchall()
    assert len(set(per_run)) == 1


def test_a_half_finished_run_is_refused_unless_asked_and_replaced_once_finished(tmp_path):
    path = history(tmp_path, [1.0, 1.0])
    run = synthetic_run(tmp_path / "run3", 3, 1.0, np.random.default_rng(3))
    results = sorted((run / "results" / "runs").rglob("*.json"))
    later = results[-3:]  # the experiments it has not measured yet
    kept = {p: p.read_bytes() for p in later}
    for p in later:
        p.unlink()
    done = compilebench("history", "add", run, "--store", path)
    assert done.returncode == 2 and "the run looks unfinished" in done.stderr and "--partial" in done.stderr
    assert "runs.csv does not exist" in done.stderr
    tables_made(run)
    (tmp_path / "stale.json").write_bytes(kept[later[0]])  # a result of an earlier config, beside the run
    later[0].write_bytes(kept[later[0]])
    done = compilebench("history", "add", run, "--store", path)
    assert done.returncode == 2 and "does not list cpu/" in done.stderr and "earlier config" in done.stderr
    later[0].unlink()
    part = compilebench("history", "add", run, "--store", path, "--partial")
    assert part.returncode == 0 and "added run" in part.stdout, part.stderr
    for p, data in kept.items():  # the run goes on, and finishes
        p.write_bytes(data)
    done = compilebench("history", "add", run, "--store", path)
    assert done.returncode == 2 and "does not list" in done.stderr  # its tables not made again yet
    done = compilebench("history", "add", tables_made(run), "--store", path)
    assert done.returncode == 0 and "in place of run" in done.stdout, done.stderr
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT COUNT(*) FROM runs").fetchone() == (3,)
        counts = connection.execute("SELECT COUNT(*) FROM results GROUP BY run_id").fetchall()
    assert counts == [(len(results),)] * 3  # no point twice: the half run's are gone


def test_a_newer_store_a_broken_store_and_a_run_with_a_bad_result_are_refused_naming_them(tmp_path):
    path = history(tmp_path, [1.0, 1.0])
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    done = compilebench("history", "regressions", "--store", path)
    assert done.returncode == 2 and f"schema version {store.SCHEMA_VERSION + 1}" in done.stderr
    assert f"reads version {store.SCHEMA_VERSION}" in done.stderr
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_text("not a database at all " * 100)
    done = compilebench("history", "report", "--store", garbage, tmp_path / "site")
    assert done.returncode == 2 and str(garbage) in done.stderr
    bad = synthetic_run(tmp_path / "bad", 9, 1.0, np.random.default_rng(0))
    broken = bad / "results" / "runs" / "cpu" / "resnet" / "eager.json"
    broken.write_text(broken.read_text()[:100])
    done = compilebench("history", "add", bad, "--store", tmp_path / "fresh.sqlite")
    assert done.returncode == 2 and "eager.json" in done.stderr
    assert not (tmp_path / "fresh.sqlite").exists()
    done = compilebench("history", "add", bad, "--store", tmp_path / "fresh.sqlite", "--as", "cpu")
    assert done.returncode == 2 and "--as 'cpu' needs --hardware" in done.stderr


@pytest.mark.parametrize(
    ("where", "value", "said"),
    [
        (("stats", "median_ms"), '"fast"', "latency_ms value 'fast'"),
        (("stats", "median_ms"), "null", "latency_ms value None"),
        (("stats", "median_ms"), "1e400", "latency_ms value inf"),
        (("speedup", "value"), "-2.0", "speedup value -2.0"),
    ],
)
def test_a_value_that_would_poison_the_store_is_refused_at_add_and_the_store_still_reports(
    tmp_path, where, value, said
):
    path = history(tmp_path, [1.0] * 2)
    bad = synthetic_run(tmp_path / "bad", 9, 1.0, np.random.default_rng(0))
    result_path = bad / "results" / "runs" / "cpu" / "resnet" / "compile-default.json"
    result = json.loads(result_path.read_text())
    result[where[0]][where[1]] = 987654.321  # a placeholder the JSON text then carries as written
    result_path.write_text(json.dumps(result).replace("987654.321", value))
    done = compilebench("history", "add", bad, "--store", path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cpu/resnet/compile-default" in done.stderr and said in done.stderr and "Nothing was added" in done.stderr
    assert compilebench("history", "regressions", "--store", path).returncode == 0
    assert compilebench("history", "report", "--store", path, tmp_path / "site").returncode == 0


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_the_dashboard_opens_offline_every_chart_has_data_and_no_console_errors(tmp_path):
    from playwright.sync_api import sync_playwright

    path = history(tmp_path, [1.0] * 4 + [1.2] * 4, torches=["2.13.0"] * 4 + ["2.14.1"] * 4)
    site = tmp_path / "site"
    done = compilebench("history", "report", "--store", path, site)
    assert done.returncode == 0, done.stderr
    pages = sorted(site.glob("*.html"))
    assert site / "index.html" in pages and len(pages) == 3  # the overview, and cpu × resnet, cpu × llama
    errors, charts, requests = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], timeout=180_000)
        page = browser.new_page()
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("request", lambda request: requests.append(request.url))
        page.goto((site / "index.html").as_uri())
        sparklines = page.eval_on_selector_all("svg.sparkline polyline", "ls => ls.map(l => l.getAttribute('points'))")
        assert "REGRESSION" in page.inner_text("body")
        for other in (page_ for page_ in pages if page_.name != "index.html"):
            page.goto(other.as_uri())
            charts += page.eval_on_selector_all("svg.trend", "ss => ss.map(s => s.querySelectorAll('circle').length)")
        shown = "els => els.filter(e => e.getBoundingClientRect().width > 0).map(e => e.textContent)"
        by_date = page.eval_on_selector_all("svg.trend text", shown)
        page.check("input[name='x-axis'][value='torch']")  # the runs labelled by torch version instead
        by_torch = page.eval_on_selector_all("svg.trend text", shown)
        page.uncheck("input[data-mode='compile-default']")  # the filter hides that mode's charts
        hidden = page.eval_on_selector_all(".chart[data-mode='compile-default']", "cs => cs.map(c => c.offsetHeight)")
        browser.close()
    assert errors == [] and all(url.startswith("file://") for url in requests)
    assert sparklines and all(len(points.split()) == 8 for points in sparklines)
    assert charts and all(n == 8 for n in charts) and hidden and set(hidden) == {0}
    assert "2026-11-01" in by_date and "2.13.0" not in by_date
    assert "2.13.0" in by_torch and "2.14.1" in by_torch and "2026-11-01" not in by_torch


def test_the_workflow_appends_its_run_to_the_history_the_config_names_and_nothing_twice(finished, tmp_path):
    from helpers import snakemake

    project, _, _ = finished
    path = tmp_path / "team-history.sqlite"
    done = snakemake(project, "--config", f"history={path}")
    ran = set(re.findall(r"^(\w+)\s+\d+$", done.stderr.split("Job stats:")[1].split("total")[0], re.M))
    assert ran == {"history_add", "all"}, done.stderr  # it measures nothing again
    added = json.loads((project / "results" / "history.json").read_text())
    assert added["new"] and added["store"] == str(path)
    with store.opened(path) as connection:
        (runs,) = connection.execute("SELECT COUNT(*) FROM runs").fetchone()
        statuses = dict(connection.execute("SELECT status, COUNT(*) FROM results GROUP BY status").fetchall())
        torch = connection.execute("SELECT torch FROM runs").fetchone()[0]
    assert runs == 1 and statuses["ok"] >= 10 and statuses["failed"] == 2 and torch
    again = compilebench("history", "add", project, "--store", path)
    assert again.returncode == 0 and "already holds this run" in again.stdout
    (project / "results" / "history.json").unlink()  # the shared run as the other tests expect it


def test_the_dashboard_shows_memory_in_megabytes():
    point = changes.Point("run", "2026-11-01", "2.14.1", 217_100_000.0, None, None, [217_100_000.0])
    series = {("cpu", "resnet", "eager", "peak_bytes"): [point], ("cpu", "resnet", "eager", "latency_ms"): [point]}
    label, points = shown(series)[("cpu", "resnet", "eager", "peak_bytes")]
    assert label == "peak_bytes (MB)" and points[0].value == pytest.approx(217.1)
    assert shown(series)[("cpu", "resnet", "eager", "latency_ms")] == ("latency_ms", [point])


def test_report_out_and_names_are_refused_in_one_paragraph_and_pages_never_collide(tmp_path):
    path = history(tmp_path, [1.0] * 2)
    for out, said in (
        (tmp_path / "a-file", "is a file"),
        (tmp_path / "dangling", "is a link"),
        (tmp_path / "theirs", "did not write"),
    ):
        if out.name == "a-file":
            out.write_text("mine")
        elif out.name == "dangling":
            out.symlink_to(tmp_path / "nowhere")
        else:
            out.mkdir()
            (out / "notes.txt").write_text("mine")
        done = compilebench("history", "report", "--store", path, out)
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert (tmp_path / "a-file").read_text() == "mine" and (tmp_path / "theirs" / "notes.txt").read_text() == "mine"
    site = tmp_path / "site"
    for _ in range(2):  # its own site is replaced whole
        assert compilebench("history", "report", "--store", path, site).returncode == 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".site.")]  # no staging folder left
    from compilebench.history.dashboard import page_name

    assert page_name("cpu__a", "b") != page_name("cpu", "a__b")
    done = compilebench("history", "regressions", "--store", path, "--since", "")
    assert done.returncode == 2 and "is not a run id" in done.stderr
    bad = synthetic_run(tmp_path / "bad", 9, 1.0, np.random.default_rng(0))
    done = compilebench("history", "add", bad, "--store", path, "--hardware", "cpu", "--as", "<b>x</b>/../..")
    assert done.returncode == 2 and "is not a hardware name" in done.stderr


def test_a_suite_keeps_its_pass_rate_and_geomean_as_series_and_a_drop_in_the_geomean_is_found(tmp_path, monkeypatch):
    """A run of a dozen models is a suite: each add files its pass rate and geometric-mean speedup per mode under
    the model `(suite)`, the geomean with its interval; compile-default's speedups 15% lower from run 6 on show as
    a regression of its geomean there, and a run of two models files no suite series."""
    import synthetic

    monkeypatch.setattr(synthetic, "MODELS", {f"net{i:02d}": ("image-classification", 10.0 + i) for i in range(12)})
    rng, path = np.random.default_rng(2), tmp_path / "history.sqlite"
    for number in range(1, RUNS + 1):
        folder = synthetic_run(tmp_path / f"run{number}", number, 1.0, rng)
        factor = (0.85 if number >= STEP_AT else 1.0) * float(np.exp(rng.normal(0, 0.01)))
        for result_path in (folder / "results" / "runs").rglob("compile-default.json"):
            result = json.loads(result_path.read_text())
            result["speedup"] = {"value": result["speedup"]["value"] * factor,
                                 "ci95": [x * factor for x in result["speedup"]["ci95"]]}  # fmt: skip
            result_path.write_text(json.dumps(result))
        store.add(tables_made(folder), path)
    with store.opened(path) as connection:
        series = changes.read_series(connection)
    suite = {key: points for key, points in series.items() if key[1] == store.SUITE}
    assert set(suite) == {("cpu", store.SUITE, mode, metric) for mode in ("jit", "compile-default",
                          "compile-max-autotune") for metric in ("suite_pass_rate", "suite_geomean")}  # fmt: skip
    geomean = suite[("cpu", store.SUITE, "compile-default", "suite_geomean")]
    assert len(geomean) == RUNS and all(p.ci_low < p.value < p.ci_high for p in geomean)
    assert all(p.value == 1.0 for p in suite[("cpu", store.SUITE, "jit", "suite_pass_rate")])
    found_changes = changes.all_changes(series)[("cpu", store.SUITE, "compile-default", "suite_geomean")]
    assert len(found_changes) == 1 and found_changes[0].at == STEP_AT - 1 and found_changes[0].regression

    assert store.suite_values({("cpu", "resnet", "jit"): {"status": "ok"}}) == []
