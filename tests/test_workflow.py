"""Real Snakemake runs of the workflow in a temporary copy of the project."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from html import unescape
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml
from helpers import (
    ASSETS_MIRROR,
    CHROMIUM,
    DRY_RUNS,
    PAPER_SECTIONS,
    TINY_MODELS,
    copy_project,
    edited,
    expected_runs,
    planned_after_editing,
    planned_outputs,
    snakemake,
    tiny_workflow_config,
    write_config,
)

from compilebench.core import layout, records
from compilebench.core.files import sha256_of
from compilebench.report import pagefit, registry

pytestmark = pytest.mark.slow


def test_a_model_that_cannot_be_built_fails_its_own_experiments_and_the_study_goes_on(finished):
    project, _, _ = finished
    runs = pd.read_csv(project / "results" / "tables" / "runs.csv").set_index(["model", "mode"])
    for mode in ("eager", "compile-default"):
        row = runs.loc[("broken", mode)]
        assert row["status"] == "failed"
        assert row["error"].startswith("the eager reference of `broken` on `cpu` failed, so this did not run")
        assert "Error(s) in loading state_dict for ResNet" in row["error"], row["error"]
    reference = json.loads((project / "results" / "reference" / "cpu" / "broken.pt").read_text())
    assert reference["status"] == "failed" and reference["error"]["traceback"]
    html = unescape((project / "results" / "report" / "paper.html").read_text())
    assert "<strong>cpu/broken/eager</strong>" in html and "the eager reference of `broken` on `cpu` failed" in html


def test_compiled_runs_carry_their_warm_starts_phases_and_break_even_into_tables_and_paper(finished):
    project, _, _ = finished
    runs = pd.read_csv(project / "results" / "tables" / "runs.csv").set_index(["model", "mode"])
    for mode in ("compile-default", "compile-freezing"):
        row = runs.loc[("resnet", mode)]
        # The tests share one inductor cache, so here no start is cold: test_compile_cost compares them.
        assert row["compile_warm_s"] > 0
        assert row["break_even_calls"] >= 0 and row["break_even_calls_warm"] >= 0
    # No start from the cache bundle: measure.bundle_start is false (the every-path starts time one, on `own`).
    assert pd.isna(runs.loc[("resnet", "compile-default"), "compile_bundle_s"])
    frozen = json.loads((project / "results" / "runs" / "cpu" / "resnet" / "compile-freezing.json").read_text())
    assert "no start from the cache bundle: measure.bundle_start is false" in frozen["warm_starts"]["notes"]
    phases = pd.read_csv(project / "results" / "tables" / "compile_phases.csv")
    assert (phases["seconds"] >= 0).all(), phases[phases["seconds"] < 0]  # a training step's backward included
    assert set(phases["model"]) >= {"resnet", "llama.train"}
    resnet = phases[phases["model"] == "resnet"]
    assert set(resnet["start"]) == {"cold", "warm"} and set(resnet["mode"]) == {
        "compile-default",
        "compile-freezing",
        "compile-int8",  # a quantized compile starts warm too
    }
    html = (project / "results" / "report" / "paper.html").read_text()
    assert 'id="figure-pay_off"' in html and 'id="figure-compile_phases"' in html
    pay_off = html.split('id="pay-off"')[1].split('id="starts"')[0]
    sentence = next(p for p in pay_off.split("<p") if "On cpu, resnet: " in p)
    assert "compile-default " in sentence and "compile-freezing " in sentence
    pdf = subprocess.run(
        ["pdftotext", str(project / "results" / "report" / "paper.pdf"), "-"], capture_output=True, text=True
    ).stdout
    assert "What compiling costs, and when it pays off" in pdf


def test_starts_run_as_a_job_of_their_own_into_their_tables_figure_and_section(finished):
    project, _, _ = finished
    written = sorted(p.relative_to(project / "results" / "starts") for p in (project / "results").glob("starts/*/*/*"))
    assert [str(p) for p in written] == ["cpu/own/compile-default.json"]  # the one mode that asks for them
    rows = pd.read_csv(project / "results" / "tables" / "starts.csv")
    assert list(rows["path"]) == list(records.START_PATHS) and (rows["status"] == "ok").all() and rows["correct"].all()
    assert rows.set_index("path").loc["warm", "artifact_bytes"] > 0
    assert (rows[["import_s", "build_s", "first_call_s"]] > 0).all().all()
    paths = pd.read_csv(project / "results" / "tables" / "start_paths.csv").set_index("path")
    assert paths.loc["warm", "overhead_over_eager_s"] == pytest.approx(
        paths.loc["warm", "total_s"] - paths.loc["eager", "total_s"]
    )
    html = (project / "results" / "report" / "paper.html").read_text()
    section = html.split('id="starts"')[1].split('id="compile-depth"')[0]
    assert 'id="figure-starts"' in section and "On cpu, own in compile-default, from process start" in section


def test_a_deleted_starts_record_is_timed_again_with_the_tables_and_paper_on_it(finished):
    project, _, _ = finished
    record = project / "results" / "starts" / "cpu" / "own" / "compile-default.json"
    kept, stat = record.read_bytes(), record.stat()
    record.unlink()
    try:
        planned = planned_outputs(project)
    finally:
        record.write_bytes(kept)
        os.utime(record, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert {str(record.relative_to(project)), "results/tables/starts.csv", "results/report/paper.html"} <= planned


def test_strict_mode_fails_on_any_experiment_that_is_not_ok(finished):
    project, _, _ = finished
    done = snakemake(project, "--config", "strict=True", "--forcerun", "runs_table", check=False)
    assert done.returncode != 0
    assert "llama/jit (unsupported)" in done.stderr and "`strict`" in done.stderr


def test_default_run_ends_with_the_paper(finished):
    project, _, _ = finished
    html = (project / "results" / "report" / "paper.html").read_text()
    assert '<img src="data:image/svg+xml;base64,' in html and 'src="http' not in html  # self-contained
    pdf = project / "results" / "report" / "paper.pdf"
    pages = int(
        re.search(
            r"Pages:\s+(\d+)", subprocess.run(["pdfinfo", pdf], capture_output=True, text=True, check=True).stdout
        )[1]
    )
    assert pages >= 4
    text = subprocess.run(["pdftotext", "-layout", pdf, "-"], capture_output=True, text=True, check=True).stdout
    for heading in PAPER_SECTIONS:
        assert heading in text
    assert "Figure 7." in text and "resnet" in text and "llama" in text
    assert re.search(r"llama/jit:\s+unsupported", text)  # the paper names what did not run, with why
    assert pagefit.outside_margins(pdf) == []  # every table fits the page


def test_every_speedup_on_page_one_is_the_eager_in_its_row_over_the_modes_median(finished):
    """Table 1 of the shared run's paper, read as its reader reads it: each printed speedup is the eager median in
    its own row over the mode's, within 2 % (the medians are rounded, and several processes are pooled)."""
    project, _, _ = finished
    html = unescape((project / "results" / "report" / "paper.html").read_text())
    table = html[html.index('id="answer-table"') : html.index("</table>", html.index('id="answer-table"'))]
    checked = 0
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, flags=re.S)[1:]:
        cells = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)]
        median, eager, speedup = cells[3], cells[4], cells[5].split(" ")[0]
        if "–" in (median, eager, speedup) or cells[2].split()[0] == "eager":
            continue
        # within the printed figures' rounding: 2 % of the medians, half a unit of the speedup's last digit
        assert float(eager) / float(median) == pytest.approx(float(speedup), rel=0.02, abs=0.006), cells
        checked += 1
    assert checked >= 5


def test_the_pdf_numbers_its_figures_in_order_and_prints_none_drawn_empty(finished):
    """Figures numbered 1..N in the order they are printed, none missing, none without content; the appendices
    after the body."""
    project, _, _ = finished
    pdf = project / "results" / "report" / "paper.pdf"
    assert pagefit.page_of(pdf, "Appendix", "A.") > pagefit.page_of(pdf, "Correctness", "and", "compiler")
    html = (project / "results" / "report" / "paper.html").read_text()
    numbers = [int(n) for n in re.findall(r"<figcaption><strong>Figure (\d+)\.</strong>", html)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 5  # in the order they are printed
    manifest = json.loads((project / "results" / "report" / "figures" / "figures.json").read_text())["figures"]
    assert len(numbers) == sum(f["not_drawn"] is None for f in manifest)  # a figure with nothing is not printed
    text = " ".join(subprocess.run(["pdftotext", pdf, "-"], capture_output=True, text=True, check=True).stdout.split())
    assert all(f"Figure {n}." in text for n in numbers)


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_paper_renders_in_headless_chromium(finished, tmp_path):
    from playwright.sync_api import sync_playwright

    project, _, _ = finished
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
            timeout=180_000,  # Playwright's 30 s default is too short for a busy machine
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.set_default_timeout(180_000)
        page.goto((project / "results" / "report" / "paper.html").as_uri())
        page.wait_for_load_state("load")
        rendered = page.eval_on_selector_all(
            "figure img", "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.getBoundingClientRect().height])"
        )
        headings = page.eval_on_selector_all("h2", "hs => hs.map(h => h.textContent.trim())")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        dump_heights = "ds => ds.map(d => d.getBoundingClientRect().height)"
        collapsed = page.eval_on_selector_all("details.dump", dump_heights)
        page.click("details.dump summary")  # the config as run, opened by its reader
        opened = page.eval_on_selector_all("details.dump", dump_heights)
        page.screenshot(path=str(tmp_path / "paper.png"), full_page=True)
        browser.close()
    assert errors == []
    assert overflow <= 0  # no table runs past a laptop-wide window
    assert len(collapsed) == 2 and max(collapsed) < 40  # the config and the environment record: one line each
    assert opened[0] > 500 and opened[1] == collapsed[1]
    drawn = json.loads((project / "results" / "report" / "figures" / "figures.json").read_text())["figures"]
    assert len(rendered) == sum(f["not_drawn"] is None for f in drawn)
    assert all(complete and width > 100 and height > 50 for complete, width, height in rendered), rendered
    assert headings == list(PAPER_SECTIONS)
    import numpy as np
    from PIL import Image

    shot = np.asarray(Image.open(tmp_path / "paper.png").convert("L"), dtype=float)
    assert shot.shape[0] > 3000 and shot.std() > 20


def test_snakemake_report_packages_the_run(finished):
    project, _, _ = finished
    snakemake(project, "--report", "results/report.zip")
    import zipfile

    archive = zipfile.ZipFile(project / "results" / "report.zip")
    names = archive.namelist()
    assert any(n.endswith("paper.pdf") for n in names) and any(n.endswith("runs.csv") for n in names)
    assert any(n.endswith("compile_phases.svg") for n in names)
    page = archive.read(next(n for n in names if n.endswith("report/report.html"))).decode()
    assert all(" ".join(spec.caption.split()[:4]) in page for spec in registry.TABLES.values())  # their captions
    # resnet's three compiling modes, traced (measure.compile_trace): each tlparse report whole, its pages beside it
    assert "Compile traces" in page
    reports = [n for n in names if n.endswith("/index.html") and "Stack trie" in archive.read(n).decode()]
    assert len(reports) == 3 and all(
        sum(n.startswith(index.removesuffix("index.html")) for n in names) > 5 for index in reports
    )


def test_dry_run_has_one_job_per_model_mode_hardware(finished):
    _, config, planned = finished
    assert planned == expected_runs(config)  # the optional GPU entry is skipped on a machine without one


def test_end_to_end_produces_every_result_and_runs_table(finished):
    project, config, _ = finished
    for path in expected_runs(config):
        assert (project / path).is_file(), path
    table = pd.read_csv(project / "results" / "tables" / "runs.csv")
    assert len(table) == len(expected_runs(config))
    ok = table[table["status"] == "ok"]
    assert len(ok) == len(table) - 3, table[["model", "mode", "error"]]
    unsupported = table[table["status"] == "unsupported"].iloc[0]
    assert (unsupported["model"], unsupported["mode"]) == ("llama", "jit") and "TorchScript" in unsupported["error"]
    assert ok["correct"].all()
    assert (ok.loc[ok["mode"] != "eager", "speedup"] > 0).all()
    ceilings = json.loads((project / "results" / "env" / "cpu.json").read_text())["ceilings"]
    assert (
        ceilings["tflops"]["float32"] > 0 and ceilings["memory_bandwidth_gbs"] > 0 and "torch.mm" in ceilings["method"]
    )
    limits = pd.read_csv(project / "results" / "tables" / "limits.csv")
    assert limits["peak"].isna().all()  # a CPU no datasheet names
    cached = limits["bound"].fillna("").str.startswith("in cache")  # the tiny text generator's weights stay in cache
    assert set(limits.loc[cached, "model"]) == {"llama"} and limits.loc[cached, "fraction_of_measured"].isna().all()
    assert limits.loc[~cached, "fraction_of_measured"].gt(0).all()
    logs = project / "logs" / "benchmark" / "cpu" / "resnet"
    assert (logs / "jit" / "1.log").stat().st_size > 0  # the measuring process's, phase by phase
    assert "from 1 of 1 process" in (logs / "jit.log").read_text()  # the result's, made from its processes
    assert sha256_of(project / "resources" / "assets" / "dog.jpg") == config["assets"]["files"]["dog.jpg"]["sha256"]


def measuring_processes(project: Path) -> list[tuple[str, int, str, str]]:
    """Every measuring process of a run: (experiment, its number, started, finished), in the order they started."""
    spans = []
    for path in (project / "results" / "runs").glob("*/*/*.json"):
        result = json.loads(path.read_text())
        for k, process in enumerate(result.get("processes") or [], 1):
            spans.append((str(path.relative_to(project)), k, process["started_at"], process["finished_at"]))
    for path in (project / "results" / "starts").glob("*/*/*.json"):  # a starts job's fresh processes, as one
        record = json.loads(path.read_text())
        spans.append((str(path.relative_to(project)), 0, record["started_at"], record["finished_at"]))
    return sorted(spans, key=lambda span: span[2])


def test_benchmark_jobs_never_overlap(finished):
    project, _, _ = finished
    spans = measuring_processes(project)
    assert len(spans) > 10
    assert all(later[2] >= earlier[3] for earlier, later in zip(spans, spans[1:])), spans


def test_an_experiments_processes_run_in_rounds_and_their_records_are_kept(finished):
    """The second processes of the two-process model start after the first process of every experiment, so that a
    slow spell of the machine cannot fall on both of one experiment's processes alone; each process's record stays,
    raw, beside the result made from it."""
    project, _, _ = finished
    spans = measuring_processes(project)
    second = [span for span in spans if span[1] == 2]
    assert {span[0] for span in second} == {
        *(f"results/runs/cpu/llama/{mode}.json" for mode in ("eager", "compile-default", "eager-int8")),
        *(f"results/runs/cpu/vit-deep.L{n}/{m}.json" for n in (2, 3) for m in ("compile-default", "compile-regional")),
        "results/runs/cpu/llama.train/compile-default.json",  # its training step measures as the model does
    }
    assert max(span[2] for span in spans if span[1] == 1) < min(span[2] for span in second), spans
    for mode in ("eager", "compile-default"):
        result = json.loads((project / "results" / "runs" / "cpu" / "llama" / f"{mode}.json").read_text())
        ratio = result["noise"] if mode == "eager" else result["speedup"]
        assert ratio["interval"] == "two-level" and ratio["processes"] == 2 and result["processes_notes"] == []
        assert ("eager_alone" in result) == (mode != "eager")  # over both processes, each timing eager alone first
        for process in result["processes"]:  # the machine's state at both ends of each process
            capacity = process["machine"]["capacity"]
            threads = result["environment"]["ran_on"]["threads"]  # the threads the process measured with
            assert set(capacity) == {"before", "after"}
            assert all(probe["threads"] == threads and probe["parallel_speedup"] > 0 for probe in capacity.values())
            assert set(process["page_faults"]) == {"mode_per_call", "eager_per_call"}
    for k in (1, 2):  # every timed stretch's page faults, raw: [faults, calls] of each block's kept calls
        record = json.loads((project / "results" / "processes" / "cpu" / "llama" / "compile-default" / f"{k}.json")
                            .read_text())  # fmt: skip
        faults, blocks = record["page_faults"], record["interleave"]
        assert [calls for _, calls in faults["mode_blocks"]] == [blocks["mode_block"]] * blocks["blocks"]
        assert [calls for _, calls in faults["eager_blocks"]] == [blocks["eager_block"]] * blocks["blocks"]
        assert sum(calls for _, calls in faults["mode_alone"]) == len(record["alone_latency_ms"])
        assert faults["eager_alone"] == [[faults["eager_alone"][0][0], len(record["eager_alone_latency_ms"])]]
        assert all(count >= 0 for stretch in faults.values() for count, _ in stretch)
    key, tables = ("cpu", "llama", "compile-default"), project / "results" / "tables"
    runs = pd.read_csv(tables / "runs.csv").set_index(["hardware", "model", "mode"])
    assert runs.loc[key, ["parallel_speedup_before", "parallel_speedup_after"]].gt(0).all()
    speedups = pd.read_csv(tables / "speedups.csv").set_index(["hardware", "model", "mode"])
    assert speedups.loc[key, ["parallel_speedup", "eager_job_parallel_speedup"]].gt(0).all()
    assert runs.loc[key, ["mode_faults_per_call", "eager_faults_per_call"]].ge(0).all()
    assert runs.loc[key, "faults_flagged"] == (runs.loc[key, "mode_faults_per_call"] >= 256)
    assert json.loads((project / "results" / "runs" / "cpu" / "llama" / "compile-default.json").read_text())[
        "compile_warm_samples_s"
    ]
    records = project / "results" / "processes" / "cpu" / "llama" / "compile-default"
    assert sorted(p.name for p in records.glob("*.json")) == ["1.json", "2.json"]
    raw = json.loads((records / "2.json").read_text())
    assert raw["alone_latency_ms"] and "speedup" not in raw and "stats" not in raw  # samples, no summaries


def test_second_run_has_nothing_to_do(finished):
    project, _, _ = finished
    assert planned_outputs(project) == set()


def test_a_project_moved_with_its_results_reruns_nothing(finished, tmp_path):
    project, _, _ = finished
    moved = tmp_path / "moved"
    shutil.copytree(project, moved, symlinks=True)  # as mv, cp -a, rsync -a or tar leave it: times kept
    assert planned_outputs(moved) == set(), DRY_RUNS[-1][-3000:]


def test_changed_iterations_rerun_only_that_model(finished):
    project, config, _ = finished
    changed = yaml.safe_load(yaml.safe_dump(config))
    changed["models"]["llama"]["measure"] = {"iterations": 4}
    write_config(project / "config" / "config.yaml", changed)
    try:
        planned = planned_outputs(project)
    finally:
        write_config(project / "config" / "config.yaml", config)
    runs = {o for o in planned if o.startswith("results/runs/")}
    assert runs == {  # the model's experiments, and its training step, which measures as the model does
        *(f"results/runs/cpu/llama/{mode}.json" for mode in config["models"]["llama"]["modes"]),
        "results/runs/cpu/llama.train/compile-default.json",
    }, DRY_RUNS[-1]
    assert "results/tables/runs.csv" in planned and "results/report/paper.pdf" in planned
    assert not any(o.startswith(("results/reference/", "results/env/")) for o in planned)


def test_added_mode_adds_only_its_jobs(finished):
    project, config, _ = finished
    changed = yaml.safe_load(yaml.safe_dump(config))
    changed["models"]["llama"]["modes"] = ["eager", "jit", "compile-default", "compile-reduce-overhead"]
    changed["modes"].append("compile-reduce-overhead")  # a model's modes narrow the global list
    write_config(project / "config" / "config.yaml", changed)
    try:
        runs = {o for o in planned_outputs(project) if o.startswith("results/")}
    finally:
        write_config(project / "config" / "config.yaml", config)
    assert {o for o in runs if not o.startswith(("results/report/", "results/processes/"))} == {
        "results/runs/cpu/llama/compile-reduce-overhead.json",
        # every table but the starts rows, which read only the starts records: no new one here
        *(layout.table(name) for name, spec in registry.TABLES.items() if spec.reads != (registry.STARTS,)),
    }


# A table added through the registry alone: one entry on one function.
ADDED_TABLE = """

@table("models_per_mode", reads=("runs",), caption="How many models ran in each mode, and how many of them ran.")
def _models_per_mode(src: Sources) -> pd.DataFrame:
    runs = src.runs.assign(ok=src.runs["status"] == "ok")
    return runs.groupby("mode", as_index=False).agg(models=("model", "size"), ok=("ok", "sum"))
"""
STANDALONE_TABLES = """
import sys
from pathlib import Path

from compilebench.configuration import config
from compilebench.report import standalone
from compilebench.core.files import run_result_paths

standalone.write_tables(run_result_paths("results"), config.load("config/config.yaml"), Path(sys.argv[1]))
"""


def test_a_table_added_to_the_registry_alone_is_planned_and_built_standalone(finished, tmp_path):
    project, _, _ = finished
    source = project / "src" / "compilebench" / "report" / "registry.py"
    with edited(source, source.read_text() + ADDED_TABLE):
        assert "results/tables/models_per_mode.csv" in planned_outputs(project)
        done = subprocess.run(
            [sys.executable, "-c", STANDALONE_TABLES, str(tmp_path)],
            cwd=project,
            env={**os.environ, "PYTHONPATH": str(project / "src")},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    added = pd.read_csv(tmp_path / "models_per_mode.csv").set_index("mode")
    runs = pd.read_csv(project / "results" / "tables" / "runs.csv")
    assert added["models"].to_dict() == runs.groupby("mode").size().to_dict()
    assert added.loc["eager", "ok"] == ((runs["mode"] == "eager") & (runs["status"] == "ok")).sum()
    assert {path.stem for path in tmp_path.glob("*.csv")} == {*registry.TABLES, "models_per_mode"}


def test_report_template_change_reruns_only_the_paper(finished):
    project, _, _ = finished
    assert planned_after_editing(project, "report/paper.css") == {
        "results/report/paper.html",
        "results/report/paper.pdf",
    }


MEASURING = ("results/processes/", "results/reference/", "results/env/", "results/modes/")


def test_engine_code_change_reruns_benchmarks(finished):
    project, config, _ = finished
    planned = planned_after_editing(project, "src/compilebench/worker/timing.py", "\nMEASURED_BY = 'a changed clock'\n")
    assert expected_runs(config) <= planned
    assert any(o.startswith("results/processes/") for o in planned)


def test_a_comment_or_docstring_edit_in_a_worker_module_plans_nothing(finished):
    project, _, _ = finished
    source = project / "src" / "compilebench" / "worker" / "timing.py"
    text = source.read_text()
    reworded = text.replace("Device-synchronized clocks", "Device-synchronised clocks", 1)
    assert reworded != text
    with edited(source, reworded.replace("import math\n", "import math  # for ceil\n", 1)):
        assert planned_outputs(project) == set(), DRY_RUNS[-1][-3000:]
    # Nor does a time bound that the run fits either way: it changes no output.
    assert planned_outputs(project, "--config", "max_hours=40") == set(), DRY_RUNS[-1][-3000:]


def test_a_report_side_code_edit_measures_nothing(finished):
    project, _, _ = finished
    planned = planned_after_editing(project, "src/compilebench/analysis/comparisons.py", "\nREWORDED = True\n")
    assert "results/tables/mode_effects.csv" in planned and "results/report/paper.pdf" in planned
    assert not any(o.startswith((*MEASURING, "results/runs/")) for o in planned), planned


def test_a_statistics_edit_rebuilds_results_from_their_records_without_measuring(finished):
    """The rebuilt results equal the measured ones where the estimator did not change."""
    project, config, _ = finished
    source = project / "src" / "compilebench" / "analysis" / "stats.py"
    runs = project / "results" / "runs" / "cpu"
    before = {p: json.loads(p.read_text()) for p in runs.glob("*/*.json")}
    made = {p: (p.read_bytes(), p.stat()) for p in runs.glob("*/*.json")}
    records = {p: p.stat().st_mtime_ns for p in (project / "results" / "processes").glob("*/*/*/*.json")}
    metadata = project / ".snakemake" / "metadata"  # what Snakemake recorded of each output's code and params
    recorded = {p: p.read_bytes() for p in metadata.iterdir()}
    with edited(source, source.read_text() + "\nESTIMATOR_REVISION = 2\n"):
        planned = planned_outputs(project)
        assert expected_runs(config) <= planned
        assert not any(o.startswith(MEASURING) for o in planned), planned
        snakemake(project, *sorted(expected_runs(config)))  # the results alone
    assert all(p.stat().st_mtime_ns != stat.st_mtime_ns for p, (_, stat) in made.items())  # each made again
    assert all(p.stat().st_mtime_ns == mtime for p, mtime in records.items())  # from records measured before
    after = {p: json.loads(p.read_text()) for p in runs.glob("*/*.json")}
    assert after == before
    # The edit undone, the results and Snakemake's record of them as they were: nothing left to do.
    for path, (data, stat) in made.items():
        path.write_bytes(data)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    for path in metadata.iterdir():
        if path in recorded:
            path.write_bytes(recorded[path])
        else:
            path.unlink()
    assert planned_outputs(project) == set(), DRY_RUNS[-1][-3000:]


def test_a_defined_mode_records_its_settings_and_the_paper_says_what_they_changed(finished):
    project, _, _ = finished
    runs = pd.read_csv(project / "results" / "tables" / "runs.csv").set_index(["model", "mode"])
    frozen = runs.loc[("resnet", "compile-freezing")]
    assert frozen["status"] == "ok" and frozen["mode_kind"] == "compile"
    assert json.loads(frozen["mode_options"]) == {"freezing": True}
    assert pd.isna(runs.loc[("resnet", "compile-default"), "mode_options"])
    check = json.loads((project / "results" / "modes" / "cpu" / "compile-freezing.json").read_text())
    assert check["inductor_options"] == {"freezing": True}
    effects = pd.read_csv(project / "results" / "tables" / "mode_effects.csv")
    row = effects.set_index(["model", "mode"]).loc[("resnet", "compile-freezing")]
    assert row["base_mode"] == "compile-default" and "options" in row["differs_in"]
    assert row["ratio_ci95_low"] <= row["ratio"] <= row["ratio_ci95_high"]
    html = (project / "results" / "report" / "paper.html").read_text()
    assert 'id="modes-table"' in html and "compile-freezing (options:" in html


def test_a_two_point_sweep_gives_two_experiments_and_a_scaling_figure(finished):
    project, _, _ = finished
    runs = pd.read_csv(project / "results" / "tables" / "runs.csv")
    points = runs[runs["sweep_of"] == "vit"]
    assert set(points["model"]) == {"vit.bs1", "vit.bs2"} and set(points["batch_size"]) == {1, 2}
    assert (points["status"] == "ok").all()
    scaling = pd.read_csv(project / "results" / "tables" / "scaling.csv")
    batch = scaling[scaling["sweep_of"] == "vit"]
    assert list(batch.loc[batch["mode"] == "compile-default", "value"]) == [1, 2]
    html = (project / "results" / "report" / "paper.html").read_text()
    assert 'id="figure-scaling"' in html and 'id="scaling-table"' in html
    assert "compile-default's speedup on vit" in unescape(html)


def test_adding_a_sweep_value_adds_only_its_jobs(finished):
    project, config, _ = finished
    changed = yaml.safe_load(yaml.safe_dump(config))
    changed["models"]["vit"]["sweep"]["batch_size"] = [1, 2, 4]
    write_config(project / "config" / "config.yaml", changed)
    try:
        planned = planned_outputs(project)
    finally:
        write_config(project / "config" / "config.yaml", config)
    measured = {o for o in planned if o.startswith(("results/runs/", "results/reference/", "results/env/"))}
    assert measured == {
        "results/runs/cpu/vit.bs4/eager.json",
        "results/runs/cpu/vit.bs4/compile-default.json",
        "results/reference/cpu/vit.bs4.pt",
    }


def test_editing_one_definition_reruns_only_its_jobs(finished):
    """Two definitions edited, one of them regional: each reruns its own checks and experiments, nothing else."""
    project, config, _ = finished
    changed = yaml.safe_load(yaml.safe_dump(config))
    changed["mode_definitions"]["compile-freezing"]["compile"]["options"]["cpp_wrapper"] = True
    changed["mode_definitions"]["compile-regional"]["compile"]["options"] = {"cpp_wrapper": True}
    write_config(project / "config" / "config.yaml", changed)
    try:
        planned = planned_outputs(project)
    finally:
        write_config(project / "config" / "config.yaml", config)
    measured = {
        o for o in planned if o.startswith(("results/runs/", "results/reference/", "results/env/", "results/modes/"))
    }
    regional = {
        *(f"results/runs/cpu/vit-deep.L{n}/compile-regional.json" for n in (2, 3)),
        *(f"results/modes/cpu/compile-regional/vit-deep.L{n}.json" for n in (2, 3)),
        "results/modes/cpu/compile-regional.json",
    }
    assert measured == {
        "results/runs/cpu/resnet/compile-freezing.json",
        "results/modes/cpu/compile-freezing.json",
        *regional,
    }


def test_a_corrupt_or_foreign_result_is_refused_and_the_next_run_redoes_it(finished):
    """It breaks four results of the shared run, one keeping its old mtime and one its fingerprint, and leaves the
    run whole again."""
    project, config, _ = finished
    runs = project / "results" / "runs" / "cpu"
    truncated, planted = runs / "vit.bs1" / "eager.json", runs / "vit.bs2" / "eager.json"
    doctored = runs / "llama" / "eager.json"
    old = doctored.stat()
    record = json.loads(doctored.read_text())
    record["experiment_sha256"] = "0" * 64
    doctored.write_text(json.dumps(record))
    os.utime(doctored, ns=(old.st_atime_ns, old.st_mtime_ns))  # as `cp -p` or `rsync -a` leave it
    assert "results/tables/runs.csv" in planned_outputs(project)  # its fingerprint alone makes the table rerun
    truncated.write_bytes(truncated.read_bytes()[:1032])
    shutil.copy(runs / "vit.bs1" / "compile-default.json", planted)  # another experiment's result, newer than all
    edited = runs / "resnet" / "jit.json"
    edited.write_text(json.dumps({**json.loads(edited.read_text()), "batch_size": 64}))  # its fingerprint kept
    done = snakemake(project, check=False)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "Refused 4 result file(s)" in output and "run the same command again" in output, output[-3000:]
    assert f"{truncated.relative_to(project)} cannot be read (JSONDecodeError" in output
    assert f"{planted.relative_to(project)} is not the result of the experiment it stands for" in output
    assert "it records cpu/vit.bs1/compile-default" in output
    assert f"{doctored.relative_to(project)} is not the result of the experiment it stands for" in output
    assert not (project / "results" / "tables" / "runs.csv").exists()
    assert not (project / "results" / "report" / "paper.pdf").exists()  # it rested on them: the next run redoes it
    assert not truncated.exists() and truncated.with_name("eager.json.rejected").exists() and not planted.exists()
    assert f"{edited.relative_to(project)} is not the result" in output and "batch_size is 64 where" in output
    assert not doctored.exists() and not edited.exists()
    untouched = {p: p.stat().st_mtime_ns for p in runs.glob("*/*.json")}
    snakemake(project)
    assert all(p.stat().st_mtime_ns == mtime for p, mtime in untouched.items())  # only the refused ones reran
    for path in (truncated, planted, doctored, edited):
        assert json.loads(path.read_text())["status"] == "ok"
    table = pd.read_csv(project / "results" / "tables" / "runs.csv").set_index(["model", "mode"])
    assert len(table) == len(expected_runs(config)) and table.loc[("vit.bs2", "eager"), "status"] == "ok"
    assert (project / "results" / "report" / "paper.pdf").is_file()
    assert planned_outputs(project) == set()


def test_a_run_states_its_plan_and_does_not_start_past_max_hours(tmp_path):
    config = {**tiny_workflow_config(ASSETS_MIRROR), "max_hours": 1e-5}
    project = copy_project(tmp_path, config)
    done = snakemake(project, check=False)
    assert done.returncode != 0
    assert "compilebench plans 11 experiments on 1 hardware entry: 11 measuring processes" in done.stderr
    assert "Config key `max_hours` is 1e-05 hours, but the config plans at least" in done.stderr
    assert not (project / "results").exists() and not (project / "logs").exists()  # no job ran


def test_an_inductor_option_torch_does_not_know_fails_its_check_with_the_key(tmp_path):
    config = tiny_workflow_config(ASSETS_MIRROR)
    config["mode_definitions"]["compile-freezing"]["compile"]["options"] = {"freezng": True}
    project = copy_project(tmp_path, config)
    done = snakemake(project, "results/modes/cpu/compile-freezing.json", check=False)
    assert done.returncode != 0
    log = (project / "logs" / "modes" / "cpu" / "compile-freezing.log").read_text()
    assert "`mode_definitions.compile-freezing.compile.options.freezng`" in log and "did you mean freezing" in log
    assert not (project / "results" / "modes" / "cpu" / "compile-freezing.json").exists()


def test_rewording_a_validation_message_reruns_no_measurement(finished):
    project, _, _ = finished
    path = project / "src" / "compilebench" / "configuration" / "config.py"
    original = path.read_text()
    assert "expected at least one model entry" in original
    path.write_text(original.replace("expected at least one model entry", "expected one model entry or more"))
    try:
        planned = planned_outputs(project)
    finally:
        path.write_text(original)
    assert planned, "a dry run that plans nothing proves nothing here"
    assert not any(o.startswith(("results/runs/", "results/reference/", "results/env/")) for o in planned), planned


REPORT_ONLY_SETTINGS = {
    "peak": {"name": "a guess", "memory_bandwidth_gbs": 50, "tflops": {"float32": 1.0}},
    "optional": True,
    "exclusive": False,
    "price_per_hour": 0.5,
    "resources": {"slurm_partition": "cpu", "runtime": 30},
}


def test_report_only_hardware_settings_rerun_no_measurement(finished):
    """All changed at once, in one dry run: any one of them that reran a measurement would show here."""
    project, config, _ = finished
    changed = yaml.safe_load(yaml.safe_dump(config))
    changed["hardware"]["cpu"].update(REPORT_ONLY_SETTINGS)
    write_config(project / "config" / "config.yaml", changed)
    try:
        planned = planned_outputs(project)
    finally:
        write_config(project / "config" / "config.yaml", config)
    assert "results/tables/hardware_costs.csv" in planned  # the price reaches the report
    measuring = {o for o in planned if o.startswith(("results/runs/", "results/reference/", "results/env/"))}
    assert measuring == set(), measuring


def test_experiment_file_runs_its_own_models_alone(finished):
    project, config, _ = finished
    experiment = {"modes": ["eager"], "models": {"only": TINY_MODELS["vit"]}, "measure": config["measure"]}
    write_config(project / "config" / "experiments" / "only.yaml", experiment)
    planned = planned_outputs(project, "--configfile", "config/experiments/only.yaml")
    assert {o for o in planned if o.startswith("results/runs/")} == {"results/runs/cpu/only/eager.json"}


def test_bad_config_names_the_key_and_writes_nothing(tmp_path):
    config = tiny_workflow_config(ASSETS_MIRROR)
    config["measure"]["iterations"] = -1
    project = copy_project(tmp_path, config)
    done = snakemake(project, check=False)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "measure.iterations" in output and "Traceback" not in output
    assert not (project / "results").exists() and not (project / "resources").exists()


def test_corrupted_mirror_file_is_refused(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    shutil.copy(ASSETS_MIRROR / "imagenet_classes.txt", mirror)
    (mirror / "dog.jpg").write_bytes((ASSETS_MIRROR / "dog.jpg").read_bytes()[:-100] + b"corrupted")
    project = copy_project(tmp_path / "project", tiny_workflow_config(mirror))
    done = snakemake(project, "resources/assets/dog.jpg", check=False)
    assert done.returncode != 0
    log = (project / "logs" / "assets" / "dog.jpg.log").read_text()
    expected = tiny_workflow_config(mirror)["assets"]["files"]["dog.jpg"]["sha256"]
    assert expected in log and sha256_of(mirror / "dog.jpg") in log
    assert "https://github.com/pytorch/hub/raw/master/images/dog.jpg" in log
    assert not (project / "resources" / "assets" / "dog.jpg").exists()
    assert list((project / "resources" / "assets").glob("*")) == []


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU")
def test_missing_device_fails_naming_the_entry_before_any_job(tmp_path):
    config = tiny_workflow_config(ASSETS_MIRROR)
    config["hardware"]["gpu"]["optional"] = False
    project = copy_project(tmp_path, config)
    done = snakemake(project, check=False)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "`hardware.gpu.device`" in output and "optional: true" in output and "Traceback" not in output
    assert not (project / "results").exists() and not (project / "resources").exists()


def test_broken_yaml_names_the_file_and_the_line(tmp_path):
    project = copy_project(tmp_path, tiny_workflow_config(ASSETS_MIRROR))
    path = project / "config" / "config.yaml"
    lines = path.read_text().splitlines()
    lines[2] = "- jit: compile: default"  # a mapping value where a list item was
    path.write_text("\n".join(lines) + "\n")
    done = snakemake(project, "-n", check=False)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "config/config.yaml is not valid YAML at line 3" in output, output[-2000:]


def test_killed_snakemake_takes_its_jobs_with_it_and_the_run_resumes(finished):
    """It redoes one experiment of the shared run (its process record deleted, as a user measures one again), kills
    snakemake while that job measures, and resumes it."""
    import os
    import signal
    import time

    project, _, _ = finished
    runs = project / "results" / "runs" / "cpu"
    target = runs / "vit.bs1" / "compile-default.json"  # a compile without warm starts: the rerun is short
    untouched = {p: p.stat().st_mtime_ns for p in runs.glob("*/*.json") if p != target}
    record = project / "results" / "processes" / "cpu" / "vit.bs1" / "compile-default" / "1.json"
    target.unlink()
    record.unlink()
    run = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "4"],
        cwd=project,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline, measuring = time.monotonic() + 600, []
    while time.monotonic() < deadline and run.poll() is None and not measuring:
        time.sleep(0.2)
        with contextlib.suppress(psutil.Error):
            measuring = [
                p for p in psutil.Process(run.pid).children(recursive=True) if "compilebench.worker" in _cmdline(p)
            ]
    assert measuring, "the benchmark job never started its measuring process"
    time.sleep(1)  # the measuring child is importing torch or compiling
    started = psutil.Process(run.pid).children(recursive=True)  # its job, the measuring child, compile workers
    os.kill(run.pid, signal.SIGKILL)  # snakemake alone: what it started must not outlive it
    run.wait()
    gone, alive = psutil.wait_procs(started, timeout=15)
    alive += [p for p in psutil.process_iter() if _cwd(p) and _cwd(p).startswith(str(project))]
    assert alive == [], [_cmdline(p) for p in alive]
    assert not target.exists() and not record.exists() and not list(runs.glob("*/.*.tmp"))  # nothing half-written
    for path in untouched:
        json.loads(path.read_text())
    snakemake(project, "--unlock")
    snakemake(project, "--rerun-incomplete")
    assert json.loads(target.read_text())["status"] == "ok" and json.loads(record.read_text())["status"] == "ok"
    assert all(path.stat().st_mtime_ns == mtime for path, mtime in untouched.items())
    assert (project / "results" / "report" / "paper.pdf").is_file()
    assert planned_outputs(project) == set()


def _cmdline(process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def _cwd(process) -> str | None:
    try:
        return process.cwd()
    except psutil.Error:
        return None


def test_hardware_resources_reach_only_that_hardwares_jobs(tmp_path):
    config = tiny_workflow_config(ASSETS_MIRROR)
    config["hardware"] = {
        "big": {
            "device": "cpu",
            "resources": {"slurm_partition": "mi210", "gres": "gpu:1", "slurm_extra": "--qos=high"},
        },
        "shared": {"device": "cpu", "exclusive": False},
    }
    project = copy_project(tmp_path, config)
    done = snakemake(project, "-n")
    plan = done.stdout + done.stderr
    kinds = r"^(?:local)?(?:rule|checkpoint) "
    blocks = [b for b in re.split(r"^\[.+\]$", plan, flags=re.M) if re.search(kinds, b, re.M)]
    jobs = []
    for block in blocks:
        rule = re.search(kinds + r"(\w+):", block, re.M).group(1)
        hardware = re.search(r"wildcards: hardware=(\w+)", block)
        if hardware:
            jobs.append((rule, hardware.group(1), re.search(r"resources: (.+)", block).group(1)))
    assert {rule for rule, _, _ in jobs} == {
        "environment_record",
        "mode_check",
        "reference_output",
        "benchmark_cold_process",
        "benchmark_run",
    }
    for rule, hardware, resources in jobs:
        if rule == "benchmark_run":  # made where snakemake runs, from its processes' records
            assert "slurm" not in resources and "gres" not in resources
            continue
        assert ("slurm_partition=mi210" in resources and "gres=gpu:1" in resources) == (hardware == "big")
        extra = re.search(r"slurm_extra=([^,]*)", resources)
        if hardware == "shared":
            assert extra is None
        else:
            assert extra.group(1) == ("--exclusive --qos=high" if rule.endswith("_process") else "--qos=high")


# The shared run has no shape stream, profiles nothing and measures no process again (its configs spare none; the
# level-shift test does, tests/test_levels.py): those keys are declared for runs that do.
NOT_IN_THE_SHARED_RUN = {"stream", "profile", "first_call_from"}
# Only where a later process found process 1's caches damaged (tests/test_compile_cost.py).
NOT_IN_THE_SHARED_RUN_PROCESSES = {*NOT_IN_THE_SHARED_RUN, "cache_replaced"}


def test_every_key_of_a_real_record_and_result_is_declared_and_every_declared_key_occurs(finished):
    project, _, _ = finished
    for kind, folder, pattern, absent in (
        (records.Result, "runs", "*/*/*.json", NOT_IN_THE_SHARED_RUN),
        (records.ProcessRecord, "processes", "*/*/*/*.json", NOT_IN_THE_SHARED_RUN_PROCESSES),
    ):
        declared = set(kind.__required_keys__) | set(kind.__optional_keys__)
        found = [json.loads(path.read_text()) for path in (project / "results" / folder).glob(pattern)]
        assert found, folder
        for record in found:
            assert set(record) <= declared, (kind.__name__, record["model"], record["mode"], set(record) - declared)
        seen = set().union(*map(set, found))
        assert declared - seen == absent, (kind.__name__, declared - seen)
