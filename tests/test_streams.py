"""Shape streams: recompiles per new shape and why, dynamic shapes, the recompile limit, and the stream's tables
and paper section, from a scaled-down copy of config/experiments/shape-streams.yaml."""

from __future__ import annotations

import shutil
from html import unescape
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers import (
    ASSETS_MIRROR,
    CPU,
    ROOT,
    TINY_MODELS,
    WORKFLOW_MEASURE,
    copy_project,
    measured,
    planned_outputs,
    tiny_config,
)

from compilebench import cli
from compilebench.configuration import config as configuration
from compilebench.core.errors import ConfigError
from compilebench.core.experiment import Stream
from compilebench.core.files import write_json
from compilebench.core.layout import FIGURE_TABLES
from compilebench.parent import jobs
from compilebench.report import figures, paper, rows, tables
from compilebench.report.registry import table_names
from compilebench.report.standalone import write_tables
from compilebench.worker import streams

EXPERIMENT = ROOT / "config" / "experiments" / "shape-streams.yaml"
STREAM = [1, 3, 2]  # three batch sizes, each new


def scaled_down() -> dict:
    """The experiment file with a tiny ViT streaming three batch sizes in every mode it defines."""
    study = yaml.safe_load(EXPERIMENT.read_text())
    return {
        **study,
        "measure": {**WORKFLOW_MEASURE, "timeout_s": 600},
        "models": {"vit": {**TINY_MODELS["vit"], "stream": {"batch_size": STREAM, "passes": 2}}},
        "hardware": {"cpu": dict(CPU)},
        "assets": {**study["assets"], "mirror": str(ASSETS_MIRROR)},
    }


@pytest.fixture(scope="module")
def streamed(tmp_path_factory):
    """Every mode of the scaled-down experiment measured over the stream, its tables and its paper's HTML."""
    config = configuration.validate(scaled_down())
    folder = tmp_path_factory.mktemp("streams")
    paths, results = [], {}
    for mode in config["modes"]:
        result = measured(configuration.experiment(config, "vit.stream", mode, "cpu"))
        paths.append(folder / f"{mode}.json")
        write_json(paths[-1], result)
        results[mode] = result
    tabs = write_tables(paths, config, folder)
    drawn = figures.load_tables(*(tabs[name] for name in FIGURE_TABLES))
    manifest = folder / "figures.json"  # a run of streams alone has no speedups to draw elsewhere, and says so
    figures.render_all(drawn, lambda name: [folder / f"{name}.svg"], manifest)
    paper_tables = {name: tabs[name] for name in table_names(paper_only=True)}
    svgs = sorted(folder.glob("*.svg"))
    context = paper.context(paper_tables, svgs, manifest, [], config, "snakemake --cores 4")
    html = paper.render_html(context, ROOT / "report" / "paper.html.j2", ROOT / "report" / "paper.css")
    return results, tabs, html


@pytest.mark.slow
def test_static_shapes_recompile_once_per_new_shape_with_the_failed_guard(streamed):
    results, _, _ = streamed
    stream = results["compile-default"]["stream"]
    assert results["compile-default"]["status"] == "ok", results["compile-default"].get("error")
    assert [c["value"] for c in stream["calls"]] == STREAM and [c["call"] for c in stream["calls"]] == [0, 1, 2]
    assert [c["compiled"] for c in stream["calls"]] == [True, True, True]
    assert [c["recompiled"] for c in stream["calls"]] == [False, True, True] and stream["recompiles"] == 2
    assert all("size mismatch" in c["recompile_reasons"][0] for c in stream["calls"][1:])
    assert stream["calls"][0]["compile_s"] > 0 and not stream["limit_reached"]
    assert results["compile-default"]["preparation"]["isa_probe_s"] >= 0 and "preparation" not in results["eager"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["compile-dynamic", "compile-marked", "compile-auto-dynamic"])
def test_dynamic_shapes_recompile_at_most_once(streamed, mode):
    stream = streamed[0][mode]["stream"]
    assert streamed[0][mode]["status"] == "ok", streamed[0][mode].get("error")
    assert stream["recompiles"] <= 1 and stream["compiles"] <= 2
    assert stream["correct"] and all(row["correct"] for row in stream["per_value"])


@pytest.mark.slow
def test_a_lowered_recompile_limit_is_reached_and_what_ran_eagerly_is_counted(streamed):
    stream = streamed[0]["compile-limited"]["stream"]
    assert stream["limit_reached"] and stream["limit_call"] == 2  # a limit of 2: the third shape is one too many
    assert stream["calls"][2]["after_limit_uncompiled"] and stream["calls_after_limit_uncompiled"] == 1
    assert not stream["calls"][2]["compiled"]


@pytest.mark.slow
def test_the_stream_tables_and_section_show_calls_in_order_and_totals(streamed):
    _, tabs, page = streamed
    html = unescape(page)
    calls = pd.read_csv(tabs["stream_calls"])
    static = calls[calls["mode"] == "compile-default"]
    assert static["value"].tolist() == STREAM and static["call"].tolist() == [0, 1, 2]
    assert static["recompiled"].tolist() == [False, True, True]
    table = pd.read_csv(tabs["streams"]).set_index("mode")
    assert {"recompiles", "limit_reached", "total_s", "eager_total_s"} <= set(table.columns)
    assert table.loc["compile-default", "recompiles"] == 2 and bool(table.loc["compile-limited", "limit_reached"])
    assert (table["total_s"] > 0).all() and (table["eager_total_s"] > 0).all()
    assert "When shapes vary" in html and 'id="streams-table"' in html and 'id="figure-streams"' in html
    assert "compiled 3 time(s), 2 of them recompiles, over 3 calls of 3 distinct batch_size values" in html
    assert "hit Dynamo's recompile limit at call 2" in html


@pytest.mark.slow
def test_the_experiment_file_plans_one_stream_experiment_per_model_and_mode(tmp_path):
    project = copy_project(tmp_path, yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))
    planned = planned_outputs(project, "--configfile", "config/experiments/shape-streams.yaml")
    runs = {o for o in planned if o.startswith("results/runs/")}
    assert runs == {
        *(f"results/runs/cpu/resnet18.stream/{m}.json" for m in yaml.safe_load(EXPERIMENT.read_text())["modes"]),
        *(f"results/runs/cpu/vit-tiny.stream/{m}.json" for m in ("eager", "compile-default", "compile-auto-dynamic")),
    }
    assert {"results/tables/stream_calls.csv", "results/tables/streams.csv"} <= planned


def test_random_streams_are_seeded_and_lists_repeat_in_order():
    assert streams.shapes(Stream(batch_size=[1, 4, 2], repeat=2)) == ("batch_size", [1, 4, 2, 1, 4, 2])
    axis, drawn = streams.shapes(Stream(seq_len={"low": 4, "high": 9}, calls=50, seed=3))
    assert axis == "seq_len" and len(drawn) == 50 and set(drawn) <= set(range(4, 10)) and len(set(drawn)) > 3
    assert streams.shapes(Stream(seq_len={"low": 4, "high": 9}, calls=50, seed=3))[1] == drawn


@pytest.mark.parametrize(
    ("stream", "key"),
    [
        ({"batch_size": [1, 2], "seq_len": [4, 8]}, "models.vit.stream"),
        ({"batch_size": {"low": 1, "high": 4}}, "models.vit.stream"),
        ({"batch_size": [1, 2], "calls": 5}, "models.vit.stream.calls"),
        ({"seq_len": [4, 8]}, "models.vit.stream.seq_len"),
    ],
)
def test_bad_streams_name_their_key(stream, key):
    raw = tiny_config({"vit": {**TINY_MODELS["vit"], "stream": stream}})
    with pytest.raises(ConfigError, match=key.replace(".", r"\.") + "`"):
        configuration.validate(raw)


def test_mark_dynamic_without_dynamic_null_is_refused():
    raw = tiny_config(mode_definitions={"m": {"kind": "compile", "compile": {"mark_dynamic": ["batch_size"]}}})
    with pytest.raises(ConfigError, match=r"mode_definitions\.m\.compile\.mark_dynamic.*dynamic: null"):
        configuration.validate(raw)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tlparse") is None, reason="needs tlparse (the test extra installs it)")
def test_a_compile_trace_is_kept_rendered_by_tlparse_and_linked_from_the_paper(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    raw = scaled_down()
    raw["measure"] = {**raw["measure"], "compile_trace": True}
    config = configuration.validate(raw)
    exp = configuration.experiment(config, "vit.stream", "compile-default", "cpu")
    result = cli.benchmark_job(exp, tmp_path / "result.json")
    assert result["status"] == "ok", result.get("error")
    trace = result["compile_trace"]
    assert trace["report"] == "results/traces/cpu/vit.stream/compile-default.compile/report/index.html"
    assert Path(trace["log"]).is_file() and Path(trace["report"]).is_file()
    report = Path(trace["report"]).read_text()
    assert "0/1" in report and "0/2" in report  # the two recompiles of the stream, by compile id
    runs = tables.runs_table([tmp_path / "result.json"])
    links = rows.compile_traces(runs)
    assert links[0]["link"] == "../traces/cpu/vit.stream/compile-default.compile/report/index.html"
    # As Snakemake's --report takes it: the report whole, or a page that says why there is none.
    jobs.publish_compile_trace(tmp_path / "result.json", tmp_path / "published")
    assert (tmp_path / "published" / "index.html").read_text() == report
    assert len(list((tmp_path / "published").rglob("*"))) == len(list(Path(trace["report"]).parent.rglob("*")))
    without = {**result, "compile_trace": {**trace, "report": None, "note": "tlparse is not installed"}}
    write_json(tmp_path / "untraced.json", without)
    jobs.publish_compile_trace(tmp_path / "untraced.json", tmp_path / "published")
    page = (tmp_path / "published" / "index.html").read_text()
    assert "No tlparse report for cpu/vit.stream/compile-default: tlparse is not installed." in page
    assert [p.name for p in (tmp_path / "published").iterdir()] == ["index.html"]
