"""The paper from synthetic tables: findings computed from the numbers, every section, published column."""

from __future__ import annotations

import pytest

from compilebench import figures, paper, tables
from compilebench.results import write_json
from synthetic import synthetic_results


@pytest.fixture
def paper_inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = synthetic_results(tmp_path)
    runs = tables.runs_table(paths)
    sp = tables.speedups(runs)
    frames = {"runs": runs, "speedups": sp, "summary": tables.geometric_mean_summary(sp),
              "limits": tables.limits(runs, {}), "top_ops": tables.top_ops(paths)}
    for name, frame in frames.items():
        tables.write_csv(frame, tmp_path / f"{name}.csv")
    t = figures.Tables(runs, tables.latency_samples(paths), sp)
    figs = []
    for name in ("latency", "speedup_heatmap"):
        figures.render(name, t, [tmp_path / f"{name}.svg"])
        figs.append(tmp_path / f"{name}.svg")
    env = tmp_path / "env.json"
    write_json(env, {"hardware": "cpu", "device": "cpu", "torch": "2.x", "hostname": "h", "threads": 2, "accelerator": None,
                     "cpu": {"model": "Test CPU", "arch": "x86_64", "logical_cores": 2, "capability": "AVX2", "bf16_native": False, "bf16_flags": []},
                     "kernel_env": {"DNNL_DEFAULT_FPMATH_MODE": "BF16"}, "slurm": None,
                     "configured_env": {"DNNL_DEFAULT_FPMATH_MODE": "BF16"},
                     "code": {"commit": "abc123", "dirty": False}, "packages": {"torch": "2.x"}})
    tabs = {name: tmp_path / f"{name}.csv" for name in frames}
    return tabs, figs, [env]


def test_key_findings_name_the_fastest_mode_with_its_interval(paper_inputs):
    import pandas as pd

    tabs, _, _ = paper_inputs
    findings = paper.key_findings(pd.read_csv(tabs["runs"]), pd.read_csv(tabs["speedups"]))
    resnet_cpu = next(f for f in findings if "resnet" in f and "cpu," in f)
    assert "compile-max-autotune is the fastest mode for resnet" in resnet_cpu
    assert "95% CI" in resnet_cpu and "× eager" in resnet_cpu


def test_paper_has_every_section_and_the_published_column(paper_inputs):
    tabs, figs, envs = paper_inputs
    config = {"title": "A study", "authors": "A. Author", "assets": {"files": {}},
              "published": {"source": "The Study", "hardware": "MI210", "values": {"median_ms": {"resnet": {"eager": 18.76}}}}}
    html = paper.render_html(paper.context(tabs, figs, envs, config, "snakemake --cores 4"))
    for heading in ("Abstract", "1 Setup", "2 Method", "3 Results", "4 Correctness and compiler health", "5 Reproducibility appendix"):
        assert heading in html
    assert "A. Author" in html and "Test CPU" in html and "DNNL_DEFAULT_FPMATH_MODE=BF16" in html
    assert "published ms" in html and "18.76" in html and "The Study" in html
    assert html.count("data:image/svg+xml;base64,") == 2
    assert "Figure 2." in html
    assert "llama/jit" in html and "unsupported" in html  # non-ok experiments are named with their error
    assert "abc123" in html and "snakemake --cores 4" in html


def test_paper_shows_limits_top_operators_and_an_unbacked_fast_math_request(paper_inputs):
    tabs, figs, envs = paper_inputs
    html = paper.render_html(paper.context(tabs, figs, envs, {"assets": {"files": {}}}, "snakemake --cores 4"))
    assert "Distance to the hardware" in html and "NVIDIA H100 SXM" in html
    assert "Where the time goes" in html
    assert "eager_op_0" in html and "compile-max-autotune_op_4" in html and "eager_op_5" not in html
    assert "no native bf16 instructions" in html
