"""The paper from synthetic tables: findings computed from the numbers, every section, published column."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from helpers import PAPER_SECTIONS, ROOT, TINY_MODELS, tiny_config
from synthetic import (
    EAGER_ALONE_FLAGGED,
    FAULTING,
    FLAGGED,
    MEASURED_CEILINGS,
    scaled_latencies,
    synthetic_results,
    synthetic_starts,
    synthetic_sweep,
)

from compilebench.configuration import config as configuration
from compilebench.core.files import read_json, read_results, write_json
from compilebench.core.layout import FIGURE_TABLES
from compilebench.report import (
    figures,
    findings,
    legibility,
    paper,
    rows,
    sections,
    speedup_tables,
    start_tables,
    tables,
)
from compilebench.report.figure_catalog import SECTIONS as FIGURE_SECTIONS
from compilebench.report.registry import table_names
from compilebench.report.standalone import write_tables

REPORT = ROOT / "report"


def validated(**overrides) -> dict:
    models = {"resnet": TINY_MODELS["resnet"], "llama": TINY_MODELS["llama"]}
    return configuration.validate(tiny_config(models, hardware={"cpu": {"device": "cpu"}}, **overrides))


@pytest.fixture
def paper_inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = synthetic_results(tmp_path)
    tabs = write_tables(paths, validated(), tmp_path)
    drawn = figures.load_tables(*(tabs[name] for name in FIGURE_TABLES))
    figs = []
    for name in ("latency", "compile_phases"):
        figures.render(name, drawn, [tmp_path / f"{name}.svg"])
        figs.append(tmp_path / f"{name}.svg")
    drew = [
        {"name": name, "section": FIGURE_SECTIONS[name], "not_drawn": None} for name in ("latency", "compile_phases")
    ]
    write_json(tmp_path / "figures.json", {"figures": drew})
    env = tmp_path / "env.json"
    write_json(
        env,
        {
            "hardware": "cpu",
            "device": "cpu",
            "torch": "2.x",
            "hostname": "h",
            "threads": 2,
            "accelerator": None,
            "cpu": {
                "model": "Test CPU",
                "arch": "x86_64",
                "logical_cores": 2,
                "capability": "AVX2",
                "bf16_native": False,
                "bf16_flags": [],
            },
            "kernel_env": {"DNNL_DEFAULT_FPMATH_MODE": "BF16"},
            "slurm": None,
            "configured_env": {"DNNL_DEFAULT_FPMATH_MODE": "BF16"},
            "code": {"commit": "abc123", "dirty": False},
            "packages": {"torch": "2.x"},
            "ceilings": {**MEASURED_CEILINGS, "threads": 2, "seconds": 4.2},
        },
    )
    return {name: tabs[name] for name in table_names(paper_only=True)}, figs, [env]


def render(tabs, figs, envs, config) -> str:
    return paper.render_html(
        paper.context(tabs, figs, figs[0].parent / "figures.json", envs, config, "snakemake --cores 4"),
        REPORT / "paper.html.j2",
        REPORT / "paper.css",
    )


def test_page_one_answers_which_mode_to_use_with_the_eager_each_speedup_divides_by(paper_inputs):
    tabs, figs, envs = paper_inputs
    runs, speedups = pd.read_csv(tabs["runs"]), pd.read_csv(tabs["speedups"])
    answered = rows.answer(runs, speedups)
    assert len(answered) == 4  # 2 platforms × 2 models
    for entry in answered:
        eager = next(r for r in entry["rows"] if r["mode"] == "eager")
        assert eager["verdict"] == "baseline" and eager["eager_ms"] == eager["median_ms"]
        for row in entry["rows"]:
            if row["mode"] != "eager" and row["verdict"] in ("faster", "slower", "no detectable difference"):
                # the printed speedup is the eager in its row over its median, within the medians' rounding
                assert row["eager_ms"] / row["median_ms"] == pytest.approx(row["speedup"], rel=0.02), row
    best = {(a["hardware"], a["model"]): a["use"]["mode"] for a in answered}
    assert best[("cpu", "resnet")] == "compile-max-autotune"
    html = render(tabs, figs, envs, validated())
    abstract = html[html.index('id="abstract"') : html.index("</section>", html.index('id="abstract"'))]
    assert "2 models in" in abstract and "resnet on cpu: use compile-max-autotune" in abstract
    assert "pays off after" in abstract
    # the best mode here is also the one whose calls page-fault: its caveat is in the sentence that recommends it
    recommends = next(s for s in abstract.split(". ") if "use compile-max-autotune" in s)
    assert "caveat: its calls wait on memory mapping (page faults))" in recommends
    table = html[html.index('id="answer-table"') : html.index("</table>", html.index('id="answer-table"'))]
    assert table.count("<tr") == 1 + len(runs)  # a header, and every experiment
    assert "baseline" in table and "✓" in table
    wrong = speedups.assign(correct=speedups["correct"].where(speedups["mode"] != "compile-max-autotune", False))
    wrong_runs = runs.assign(correct=runs["correct"].where(runs["mode"] != "compile-max-autotune", False))
    assert "compile-max-autotune" not in {a["use"]["mode"] for a in rows.answer(wrong_runs, wrong)}


def test_a_model_with_no_faster_mode_is_told_to_stay_with_eager_and_why(paper_inputs):
    tabs, _, _ = paper_inputs
    runs, speedups = pd.read_csv(tabs["runs"]), pd.read_csv(tabs["speedups"])
    slower = speedups.assign(against_noise="slower", cross_job_speedup=0.5)  # as its own job timed it too
    (entry, *_) = [a for a in rows.answer(runs, slower) if a["model"] == "resnet"]
    said = findings.advice(entry)
    assert entry["use"]["mode"] == "eager" and said.startswith("resnet on cpu: stay with eager")
    assert "compile-max-autotune" in said and "(slower" in said


def test_a_speedup_timed_alone_does_not_see_is_unclear_and_page_one_says_why(paper_inputs):
    tabs, _, _ = paper_inputs
    runs, speedups = pd.read_csv(tabs["runs"]), pd.read_csv(tabs["speedups"])
    best = (
        (speedups["hardware"] == "cpu") & (speedups["model"] == "resnet") & (speedups["mode"] == "compile-max-autotune")
    )
    assert speedups.loc[best, "against_noise"].item() == "faster"
    # eager ran 9% slower beside the mode than in its own job; one process a side, so the check cannot judge
    alone = speedups.astype({"eager_job_flagged": object})
    alone.loc[best, ["cross_job_speedup", "eager_job_ratio", "eager_job_flagged"]] = [1.0, 1.09, None]
    (entry, *_) = [a for a in rows.answer(runs, alone) if (a["hardware"], a["model"]) == ("cpu", "resnet")]
    row = next(r for r in entry["rows"] if r["mode"] == "compile-max-autotune")
    why = "eager ran 9% slower beside it than alone; timed alone, no difference (1.00×)"
    assert (row["verdict"], row["why"]) == ("unclear", why)
    assert row["break_even_calls"] is None  # no gain to repay: no pay-off printed
    assert row["how_sure"].endswith("a side; too few for the eager-job check")
    said = sections.not_to_quote(alone.assign(verdict="unclear", verdict_why=why)[best])
    assert said == [f"resnet compile-max-autotune on cpu ({alone.loc[best, 'speedup'].item():.2f}×: unclear, {why})"]
    assert entry["use"]["mode"] != "compile-max-autotune"
    assert "use compile-max-autotune" not in findings.advice(entry)
    # timed alone it is as fast: the two agree, and the mode is recommended though the check could not judge
    agreed = alone.assign(cross_job_speedup=alone["speedup"])
    (entry, *_) = [a for a in rows.answer(runs, agreed) if (a["hardware"], a["model"]) == ("cpu", "resnet")]
    assert entry["use"]["mode"] == "compile-max-autotune"
    # a check that judged against it makes it unclear whatever the two say
    flagged = agreed.copy()
    flagged.loc[best, "eager_job_flagged"] = True
    (entry, *_) = [a for a in rows.answer(runs, flagged) if (a["hardware"], a["model"]) == ("cpu", "resnet")]
    assert entry["use"]["mode"] != "compile-max-autotune"


def test_the_mode_table_has_one_row_per_mode_even_where_a_setting_differs_by_model(paper_inputs):
    runs = pd.read_csv(paper_inputs[0]["runs"])
    jit = runs.index[runs["mode"] == "jit"]
    runs.loc[jit, "mode_jit_method"] = "trace"
    runs.loc[jit[0], "mode_jit_method"] = "script"  # chosen per model
    table = rows.mode_table(runs)
    assert sorted(r["mode"] for r in table) == sorted(runs.dropna(subset=["mode_kind"])["mode"].unique())
    assert next(r for r in table if r["mode"] == "jit")["mode_jit_method"] == "script / trace"


def test_page_one_names_a_runtimes_one_off_cost_for_what_it_is(paper_inputs):
    tabs, _, _ = paper_inputs
    runs, speedups = pd.read_csv(tabs["runs"]), pd.read_csv(tabs["speedups"])
    (entry, *_) = [a for a in rows.answer(runs, speedups) if a["model"] == "resnet"]
    assert "s cold compile pays off after" in findings.advice(entry)
    entry["use"]["kind"] = "onnxruntime"
    said = findings.advice(entry)
    assert "s export to ONNX and session pays off after" in said and "cold compile" not in said


def test_a_speedup_inside_its_noise_floor_is_the_same(paper_inputs):
    tabs, figs, envs = paper_inputs
    runs = pd.read_csv(tabs["runs"])
    speedups = speedup_tables.speedups(runs)
    assert set(speedups.loc[speedups["model"] == "resnet", "against_noise"]) == {"faster"}
    noisy = (runs["hardware"] == "cpu") & (runs["model"] == "resnet") & (runs["mode"] == "eager")
    runs.loc[noisy, ["noise_ci95_low", "noise_ci95_high"]] = [0.4, 3.0]  # a floor wider than any speedup here
    judged = speedup_tables.speedups(runs)
    # The floor's half-width (1.3) widens the band of `same` beyond the threshold: resnet's modes are the same.
    on_cpu = judged[(judged["hardware"] == "cpu") & (judged["model"] == "resnet")]
    assert set(on_cpu["against_noise"]) == {"same"}
    answered = next(a for a in rows.answer(runs, judged) if (a["hardware"], a["model"]) == ("cpu", "resnet"))
    assert answered["use"]["mode"] == "eager"
    assert {r["verdict"] for r in answered["rows"] if r["mode"] != "eager"} == {"no detectable difference"}
    html = render(tabs, figs, envs, validated())
    table = html[html.index('id="results-table"') : html.index("</table>", html.index('id="results-table"'))]
    assert "0.97–1.03" in table and "noise floor" in table and "faster" in table


def test_correctness_table_shows_the_float64_errors_and_the_rule(paper_inputs):
    tabs, figs, envs = paper_inputs
    html = render(tabs, figs, envs, validated())
    section = html[html.index('id="correctness"') :]
    assert "RMSE vs float64" in section and "2.00e-06" in section and "1.50e-06" in section
    assert "RMSE against float64 ≤ 2 x eager&#39;s own" in section and "75%, first differs at 12" in section
    assert section.count('<td class="rule">A</td>') > 5  # one rule, written once under the table


def test_every_table_of_the_pdf_fits_the_page_and_the_correctness_table_one_page(tmp_path, monkeypatch):
    """Two platforms, two models in four modes and a three-point sweep (22 experiments, every table present, with
    a published study's three columns in Table 1), rendered to PDF as the workflow renders it: no word of it lies
    outside the printable width of its page."""
    from compilebench.report import pagefit

    monkeypatch.chdir(tmp_path)
    paths = synthetic_results(tmp_path) + synthetic_sweep(tmp_path)
    published = {
        "source": "Accelerate PyTorch Models using torch.compile on AMD GPUs with ROCm",
        "hardware": "AMD Instinct MI210, bf16 autocast, batch 1",
        "values": {
            "median_ms": {"resnet": {"eager": 18.76, "compile-default": 15.28}},
            "compile_s": {"resnet": {"compile-default": 124.6}},
            "tokens_per_s": {"llama": {"eager": 1028.6, "compile-default": 10073.9}},
        },
    }
    config = validated(report={"baseline_hardware": "cpu"}, published=published)
    tabs = write_tables(paths, config, tmp_path)
    assert all(len(pd.read_csv(tabs[name])) for name in ("scaling", "comparison", "limits", "speedups"))
    pdf = tmp_path / "paper.pdf"
    write_json(tmp_path / "figures.json", {"figures": []})
    context = paper.context(
        {n: tabs[n] for n in table_names(paper_only=True)},
        [],
        tmp_path / "figures.json",
        [],
        config,
        "snakemake --cores 4",
    )
    paper.write(context, pdf, REPORT / "paper.html.j2", REPORT / "paper.css")
    outside = pagefit.outside_margins(pdf)
    assert outside == [], outside[:10]
    assert len(pagefit.pages_between(pdf, "C1.", "applied:")) == 1


def test_paper_has_every_section_and_the_published_column(paper_inputs):
    tabs, figs, envs = paper_inputs
    published = {"source": "The Study", "hardware": "MI210", "values": {"median_ms": {"resnet": {"eager": 18.76}}}}
    config = validated(title="A study", authors="A. Author", published=published)
    html = render(tabs, figs, envs, config)
    for heading in PAPER_SECTIONS:
        assert heading in html
    assert "A. Author" in html and "Test CPU" in html and "DNNL_DEFAULT_FPMATH_MODE=BF16" in html
    assert "published ms" in html and "18.76" in html and "The Study" in html
    beside = html[html.index('id="published-table"') : html.index("</table>", html.index('id="published-table"'))]
    # Its header and resnet/eager, the one experiment the study published, on each of the two hardware entries
    assert beside.count("<tr>") == 3 and beside.count("18.76") == 2 and "llama" not in beside
    assert html.count("data:image/svg+xml;base64,") == 2
    assert "Figure 2." in html
    assert "llama/jit" in html and "unsupported" in html  # non-ok experiments are named with their error
    assert "abc123" in html and "snakemake --cores 4" in html


def test_paper_shows_limits_top_operators_and_an_unbacked_fast_math_request(paper_inputs):
    tabs, figs, envs = paper_inputs
    html = render(tabs, figs, envs, validated())
    assert "Distance to the hardware" in html and "NVIDIA H100 SXM" in html
    limits = html[html.index('id="limits-table"') : html.index("</table>", html.index('id="limits-table"'))]
    assert "0.05 TFLOP/s" in limits and "20 GB/s" in limits and "not measured" in limits  # cpu-fast measured none
    # The synthetic runs reach 1 TFLOP/s against a measured 0.05: each such fraction is flagged, never plain.
    table = pd.read_csv(tabs["limits"])
    over = table[table["above_measured"] == True]  # noqa: E712
    assert len(over) and (over["achieved"] > over["measured"]).all()
    assert not (table.loc[table["above_measured"] == False, "fraction_of_measured"] > 1).any()  # noqa: E712
    assert limits.count(">above<") == len(over) + int((table["above_peak"] == True).sum())  # noqa: E712
    note = html[html.index('id="above-ceiling"') :].split("</p>")[0]
    assert "cpu/resnet/eager</strong> reached" in note and "of the ceiling measured on the device" in note
    assert "Measured ceilings" in html and "bfloat16 0.05 TFLOP/s" in html and "torch.mm" in html
    # A platform whose environment failed measured nothing; the paper still renders.
    failed = envs[0].parent / "failed-env.json"
    record = {k: v for k, v in read_json(envs[0]).items() if k != "ceilings"}
    write_json(failed, {**record, "hardware": "cpu-broken", "status": "failed", "error": {"message": "no torch"}})
    assert "cpu-broken" in render(tabs, figs, [*envs, failed], validated())
    assert "Where the time goes" in html
    assert "eager_op_0" in html and "compile-max-autotune_op_4" in html and "eager_op_5" not in html
    assert "no native bf16 instructions" in html


def test_scaling_findings_state_the_change_across_the_sweep_as_a_comparison(tmp_path):
    import pandas as pd

    paths = synthetic_sweep(tmp_path)
    scaling = speedup_tables.scaling(tables.runs_table(paths), read_results(paths), 0.05)
    compiled = scaling[scaling["mode"] == "compile-default"]
    assert compiled["change_verdict"].isna().iloc[0]  # the first point is what the others are set against
    assert list(compiled["change_verdict"].iloc[1:]) == ["slower", "slower"]  # 2.0x, then 1.5x and 1.05x
    assert compiled["change"].iloc[-1] == pytest.approx(1.05 / 2.0, rel=0.05)
    (finding,) = findings.scaling_findings(scaling)
    assert finding.startswith("On cpu, compile-default's speedup on net went from 2.0")
    assert "at batch size 1 to 1.0" in finding and "at batch size 16: 0.5" in finding and "95% CI" in finding
    assert finding.endswith(", slower.")
    wide = scaling.assign(change_ci95_low=0.4, change_ci95_high=1.2, change_verdict="unclear")
    assert findings.scaling_findings(pd.DataFrame(wide))[0].endswith(", unclear.")


def test_published_figures_without_source_or_hardware_still_render(paper_inputs):
    tabs, figs, envs = paper_inputs
    config = validated(published={"values": {"median_ms": {"resnet": {"eager": 18.76}}}})
    html = render(tabs, figs, envs, config)
    assert "beside the published figures of <em>the published study</em>" in html and "18.76" in html


def test_the_comparison_section_states_each_platform_against_the_baseline(paper_inputs):
    tabs, figs, envs = paper_inputs
    html = render(tabs, figs, envs, validated())
    assert 'id="comparison-table"' in html and "verdict-slower" in html
    sentence = "Against cpu, cpu-fast was faster in 0, slower in 7, the same in 0 and unclear in 0 of 7 experiments"
    assert sentence in html
    assert "geometric mean per mode: eager 0.50× (95% CI" in html


def test_the_change_against_a_previous_run_names_every_regression(paper_inputs, tmp_path):
    import json
    import shutil

    tabs, figs, envs = paper_inputs
    previous = tmp_path / "previous" / "results"
    shutil.copytree(tmp_path / "runs", previous / "runs")
    for path in previous.rglob("*.json"):  # the earlier run was 30% faster throughout
        path.write_text(json.dumps(scaled_latencies(json.loads(path.read_text()), 1 / 1.3)))
    config = validated(report={"compare_with": str(tmp_path / "previous")})
    current = sorted((tmp_path / "runs").rglob("*.json"))
    tabs = {**tabs, "change": write_tables(current, config, tmp_path / "with-change")["change"]}
    html = render(tabs, figs, envs, config)
    assert 'id="change-table"' in html
    assert (
        f"Against the run in {tmp_path / 'previous'}, of the 16 experiments both runs hold, 0 were faster, 14 slower"
        in html
    )
    assert "(2 not timed on both sides)" in html and "Regressions: cpu/llama/compile-default (slower)" in html


def test_compare_with_a_folder_without_results_is_refused_before_any_job(tmp_path):
    with pytest.raises(configuration.ConfigError, match="`report.compare_with`.*holds no results"):
        validated(report={"compare_with": str(tmp_path)})


def test_the_pay_off_section_states_when_each_compiled_mode_repays_its_compile(paper_inputs):
    tabs, figs, envs = paper_inputs
    html = render(tabs, figs, envs, validated())
    section = html.split('id="pay-off"')[1].split('id="comparison"')[0]
    assert 'id="pay-off-table"' in section
    sentence = next(p for p in section.split("<p") if "On cpu, resnet: " in p)
    assert "compile-default pays off after " in sentence and " warm" in sentence
    runs = pd.read_csv(tabs["runs"])
    row = runs[(runs["hardware"] == "cpu") & (runs["model"] == "resnet") & (runs["mode"] == "compile-default")].iloc[0]
    assert f"compile-default pays off after {findings.calls(row['break_even_calls'])} calls cold" in sentence
    assert findings.calls(float("inf")) == "never" and findings.calls(1234.4) == "1,234"
    # Only what some experiment timed is a column: warm compiles and bundles were timed here, starts were not.
    table = section.split('id="pay-off-table"')[1].split("</table>")[0]
    assert "warm compile s" in table and "break-even calls (warm)" in table and "bundle compile s" in table
    assert "cold start s" not in table and "warm start s" not in table
    assert "Not timed in this run, so not shown: cold starts from process start (measure.starts)" in section
    cold_only = rows.pay_off_shown(rows.pay_off_rows(runs.assign(compile_warm_s=None, break_even_calls_warm=None)))
    assert "compile_warm_s" not in cold_only and "compile_bundle_s" in cold_only


def test_a_flagged_steady_state_is_marked_in_table_1_and_named_in_the_findings(paper_inputs):
    tabs, figs, envs = paper_inputs
    runs = pd.read_csv(tabs["runs"]).set_index(["hardware", "model", "mode"])
    assert runs.loc[FLAGGED, "steady_state_flagged"] == True  # noqa: E712
    assert runs.loc[FLAGGED, "steady_state_ratio"] == pytest.approx(1.15, rel=0.02)
    assert runs["steady_state_flagged"].eq(True).sum() == 1
    html = render(tabs, figs, envs, validated())
    table = html[html.index('id="results-table"') : html.index("</table>", html.index('id="results-table"'))]
    flagged = [row for row in table.split("<tr>") if "alternating with eager changed its speed" in row]
    assert len(flagged) == 1 and "compile-default" in flagged[0] and "‡" not in html
    finding = next(f for f in findings.fidelity_findings(runs.reset_index()) if "interleaved median" in f)
    assert finding.startswith("On cpu, resnet in compile-default is flagged: its interleaved median is 1.15×")


def test_eager_slowed_beside_its_mode_is_marked_in_table_1_and_named_in_the_findings(paper_inputs):
    tabs, figs, envs = paper_inputs
    runs = pd.read_csv(tabs["runs"]).set_index(["hardware", "model", "mode"])
    assert runs.loc[EAGER_ALONE_FLAGGED, "eager_alone_ratio"] == pytest.approx(1.12, rel=0.02)
    assert runs["eager_alone_flagged"].eq(True).sum() == 1
    assert runs.loc[FLAGGED, "eager_alone_flagged"] == False  # noqa: E712
    html = render(tabs, figs, envs, validated())
    table = html[html.index('id="results-table"') : html.index("</table>", html.index('id="results-table"'))]
    flagged = [row for row in table.split("<tr>") if "eager slowed or sped up beside it" in row]
    assert len(flagged) == 1 and "<td>jit</td>" in flagged[0] and "¶" not in html
    finding = next(f for f in findings.fidelity_findings(runs.reset_index()) if "eager timed alone" in f)
    assert finding.startswith("On cpu, resnet in jit is flagged: eager interleaved with the mode ran 1.12×")


@pytest.mark.parametrize(
    ("after", "said"),
    [
        (1.40, "moved meanwhile (1.75× → 1.40×): likelier the machine."),
        (1.70, "held (1.75×, 1.70×)."),
    ],
)  # fmt: skip
def test_an_eager_alone_flag_says_whether_the_machines_parallel_speedup_moved(paper_inputs, after, said):
    runs = pd.read_csv(paper_inputs[0]["runs"]).set_index(["hardware", "model", "mode"])
    assert runs["parallel_speedup_before"].isna().all()  # the synthetic results carry no probes: nothing is said
    unsaid = next(f for f in findings.fidelity_findings(runs.reset_index()) if "eager timed alone" in f)
    assert "parallel speedup" not in unsaid
    runs.loc[EAGER_ALONE_FLAGGED, ["parallel_speedup_before", "parallel_speedup_after"]] = [1.75, after]
    finding = next(f for f in findings.fidelity_findings(runs.reset_index()) if "eager timed alone" in f)
    assert finding.endswith("The machine's parallel speedup " + said)
    runs.loc[EAGER_ALONE_FLAGGED, ["eager_alone_faults_per_call", "eager_faults_per_call"]] = [7029.4, 3267.2]
    finding = next(f for f in findings.fidelity_findings(runs.reset_index()) if "eager timed alone" in f)
    assert finding.endswith(said + " Eager took 7,029 page faults a call alone and 3,267 beside the mode.")
    runs.loc[EAGER_ALONE_FLAGGED, "eager_alone_faults_per_call"] = 3100.0  # within 256 a call: alike
    said = next(f for f in findings.fidelity_findings(runs.reset_index()) if "eager timed alone" in f)
    assert "page faults" not in said


def test_a_mode_whose_calls_fault_is_marked_in_table_1_and_named_with_its_cost_and_the_remedy(paper_inputs):
    tabs, figs, envs = paper_inputs
    runs = pd.read_csv(tabs["runs"]).set_index(["hardware", "model", "mode"])
    assert runs["faults_flagged"].eq(True).sum() == 1 and runs.loc[FAULTING, "mode_faults_per_call"] == 5058.1
    html = render(tabs, figs, envs, validated())
    table = html[html.index('id="results-table"') : html.index("</table>", html.index('id="results-table"'))]
    assert len([row for row in table.split("<tr>") if "page faults" in row]) == 1 and "‖" not in html
    finding = next(f for f in findings.fidelity_findings(runs.reset_index()) if "page faults" in f)
    assert finding.startswith(
        "On cpu, resnet in compile-max-autotune took 5,058 page faults a call (eager beside it: 2)"
    )
    assert "Each thousand faults a call cost 1 ms (95% CI 0.93–1.06), block by block." in finding
    trust = html.split('id="trust"')[1].split("</section>")[0]  # the remedy, said once for every such line
    assert trust.count("MALLOC_MMAP_MAX_ to 0") == 1 and "LD_PRELOAD" in trust and "`" not in finding
    runs.loc[FAULTING, "ms_per_1000_faults_ci95_low"] = -0.5  # blocks alike in their faults cannot tell a cost
    finding = next(f for f in findings.fidelity_findings(runs.reset_index()) if "page faults" in f)
    assert "thousand faults" not in finding


def test_a_model_the_memory_guard_could_not_estimate_is_named_with_why(paper_inputs, tmp_path):
    tabs, figs, envs = paper_inputs
    html = render(tabs, figs, envs, validated())
    assert 'id="memory-unguarded"' not in html  # every synthetic model was estimated
    paths = sorted((tmp_path / "runs").rglob("*.json"))
    for path in paths:
        if path.parent.name == "llama":
            result = json.loads(path.read_text())
            result["memory"] = {"peak_bytes": 1, "estimate_unavailable": "a transformers checkpoint is not built"}
            path.write_text(json.dumps(result))
    tabs = write_tables(paths, validated(), tmp_path / "again")
    html = render({name: tabs[name] for name in table_names(paper_only=True)}, figs, envs, validated())
    note = html[html.index('id="memory-unguarded"') :].split("</p>")[0]
    assert "cpu/llama" in note and "cpu-fast/llama" in note and "a transformers checkpoint is not built" in note
    assert "resnet" not in note


def test_the_appendix_reads_as_text_and_figures_are_numbered_in_reading_order(paper_inputs, tmp_path):
    tabs, _, envs = paper_inputs
    figs = []
    names = ("latency", "pay_off", "comparison", "compile_phases", "memory")  # in later sections, the appendix
    for name in names:
        figs.append(tmp_path / f"{name}.svg")
        figs[-1].write_text('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>')
    drew = [
        {"name": n, "section": FIGURE_SECTIONS[n], "not_drawn": None if n in names else "nothing"}
        for n in FIGURE_SECTIONS
    ]
    write_json(tmp_path / "figures.json", {"figures": drew})
    record = read_json(envs[0])
    record["ceilings"]["method"] = "fastest torch.mm calls (2n³ FLOPs a call)"
    write_json(envs[0], record)
    config = validated()
    shared = {"num_classes": 10}
    config["models"]["resnet"]["config"] = config["models"]["llama"]["spec_note"] = shared  # one value, two keys
    html = render(tabs, figs, envs, config)
    appendix = html[html.index('class="appendix"') :]
    assert "&amp;id0" not in appendix and "*id0" not in appendix and "&id0" not in appendix
    assert appendix.count("num_classes: 10") == 2
    assert "2n³" in appendix and "\\xB3" not in appendix  # the ceiling's method, as text
    blocks = re.findall(r"<pre>(.*?)</pre>", appendix.split("Config as run")[1].split("Environment records")[0], re.S)
    assert blocks[0].startswith("modes:") and any(b.startswith("models:\n  resnet:") for b in blocks)
    assert any(b.startswith("  llama:") for b in blocks)  # each model a block of its own, kept in one column
    numbers = {name: int(n) for n, name in re.findall(r"Figure (\d+): (\w+)", html)}
    order = [m.group(1) for m in re.finditer(r'<figure id="figure-(\w+)"', html)]
    assert [numbers[name] for name in order] == sorted(numbers.values()) == list(range(1, len(order) + 1))
    assert order.index("memory") < order.index("pay_off") < order.index("compile_phases")  # the body's first
    prose = re.sub(r"<figcaption>.*?</figcaption>", "", html, flags=re.S)
    assert all(f"Figure {n} " in prose for n in numbers.values())  # each named by the text, not only its caption
    assert html.index("Appendix D") < html.index('id="figure-compile_phases"')
    not_drawn = html[html.index('id="not-drawn"') :].split("</p>")[0]
    assert "generation (nothing)" in not_drawn and "compile cost" not in not_drawn  # no appendix figure named


def test_the_starts_section_states_each_path_against_eagers_start(paper_inputs, tmp_path):
    tabs, figs, envs = paper_inputs
    record = synthetic_starts({"eager": [2.0, 2.1, 2.2], "warm": [5.0, 5.2, 5.1]}, precompiled="no aot_compile here")
    tables.write_csv(start_tables.start_paths([record]), tmp_path / "synthetic_start_paths.csv")
    html = render({**tabs, "start_paths": tmp_path / "synthetic_start_paths.csv"}, figs, envs, validated())
    section = html.split('id="starts"')[1].split('id="comparison"')[0]
    assert "From process start to first output" in section and 'id="starts-table"' in html.split("Appendix B.")[1]
    assert "warm 5.10 s (95% CI" in section and "over eager" in section
    assert "unsupported: no aot_compile here" in html.split("Appendix B.")[1]
    assert 'id="starts"' not in render(tabs, figs, envs, validated())  # no experiment with starts: no section


def test_a_geometric_mean_is_stated_only_where_its_models_verdicts_agree():
    summary = pd.DataFrame(
        {"hardware": ["cpu", "cpu"], "mode": ["compile-default", "jit"], "geomean_speedup": [1.04, 1.3],
         "models": [2, 2], "models_total": [2, 2]}
    )  # fmt: skip
    speedups = pd.DataFrame(
        {"hardware": ["cpu"] * 4, "model": ["resnet", "llama"] * 2, "status": ["ok"] * 4, "correct": [True] * 4,
         "mode": ["compile-default", "compile-default", "jit", "jit"],
         "against_noise": ["slower", "faster", "faster", "faster"]}
    )  # fmt: skip
    stated = rows.agreeing_means(summary, speedups)
    assert [(r["mode"], r["verdict"]) for r in stated] == [("jit", "faster")]  # 0.55x and 1.91x average to nothing


def test_a_run_the_size_of_the_default_one_has_a_body_of_at_most_eight_pages(paper_inputs, tmp_path):
    """One hardware entry, two models, six modes each (the default run has twelve experiments on one entry): every
    figure drawn that has content, and the PDF's body, before Appendix A, on eight pages or fewer."""
    from compilebench.report import pagefit

    _, _, envs = paper_inputs
    folder = tmp_path / "one-entry"
    folder.mkdir()
    written = write_tables(synthetic_results(folder, hardware=("cpu",)), validated(), folder)
    drawn = figures.load_tables(*(written[name] for name in FIGURE_TABLES))
    figures.render_all(drawn, lambda name: [folder / f"{name}.png"], folder / "figures.json")
    tabs = {name: written[name] for name in table_names(paper_only=True)}
    pngs = sorted(folder.glob("*.png"))
    context = paper.context(tabs, pngs, folder / "figures.json", envs, validated(), "snakemake --cores 4")
    pdf = folder / "paper.pdf"
    paper.write(context, pdf, REPORT / "paper.html.j2", REPORT / "paper.css")
    assert pagefit.page_of(pdf, "Appendix", "A.") - 1 <= 8
    assert len(context["figures"]) >= 5


def test_a_blown_up_interval_is_printed_short_enough_to_fit_its_column():
    """An interval whose bound a near-zero denominator blew up prints in three significant digits, not fourteen."""
    assert paper.num(45806644057613.12) == "4.58e+13" and paper.num(1.234) == "1.23" and paper.num(None) == "–"


def test_the_memory_finding_sets_the_largest_peak_beside_the_modes_start_as_deployed():
    """A runtime holding its export, its session and eager at once peaks at 5x eager in the measuring process;
    started alone from its saved model it needs 1.28x eager's start, and the finding says both."""
    runs = pd.DataFrame([
        {"hardware": "cpu", "model": "resnet18", "mode": "eager", "status": "ok", "peak_memory_bytes": 40e6},
        {"hardware": "cpu", "model": "resnet18", "mode": "onnxruntime", "status": "ok", "peak_memory_bytes": 200e6},
    ])  # fmt: skip
    starts = pd.DataFrame([
        {"hardware": "cpu", "model": "resnet18", "mode": "onnxruntime", "path": path, "status": "ok",
         "peak_bytes": peak}
        for path, peak in (("eager", 782e6), ("cold", 1112e6), ("package", 1000e6))
    ])  # fmt: skip
    figure = [{"name": "memory", "number": 2}]
    said = findings.memory_sentence(figure, runs, starts)
    assert "onnxruntime for resnet18 on cpu, 5.0× eager's peak" in said
    assert (
        "from its package path, as it is deployed, onnxruntime peaked at 1000 MB against eager's start at 782 MB "
        "(1.28×)" in said
    )
    assert findings.memory_sentence(figure, runs, starts.drop(columns="peak_bytes")).endswith("5.0× eager's peak.")


def test_a_run_of_a_dozen_models_opens_with_the_suite_table_and_figure(paper_inputs, tmp_path, monkeypatch):
    """Twelve models on one entry are a suite: page 1 is the suite table, in words in the abstract, and its figure
    of sorted speedups; the per-model figures say where their numbers went, and Appendix F lists every model."""
    import synthetic

    _, _, envs = paper_inputs
    monkeypatch.setattr(synthetic, "MODELS", {f"net{i:02d}": ("image-classification", 10.0 + i) for i in range(12)})
    folder = tmp_path / "suite"
    folder.mkdir()
    written = write_tables(synthetic_results(folder, hardware=("cpu",)), validated(), folder)
    drawn = figures.load_tables(*(written[name] for name in FIGURE_TABLES))
    figures.render_all(drawn, lambda name: [folder / f"{name}.svg"], folder / "figures.json")
    manifest = {f["name"]: f["not_drawn"] for f in read_json(folder / "figures.json")["figures"]}
    assert manifest["suite"] is None and "A suite of 12 models" in manifest["latency"]
    figure = figures.suite_speedups(drawn)
    assert legibility.problems(figure) == [] and len(figure.axes[0].get_lines()) == 3 + 1  # a line a mode, and 1×
    tabs = {name: written[name] for name in table_names(paper_only=True)}
    context = paper.context(tabs, sorted(folder.glob("*.svg")), folder / "figures.json", envs, validated(), "x")
    html = paper.render_html(context, REPORT / "paper.html.j2", REPORT / "paper.css")
    page_one = html[: html.index('<section id="setup">')]
    assert "Table 1. The run as a suite, per mode" in page_one and 'id="answer-table"' not in html
    assert "compile-default on cpu: 12 of 12 models passed, geometric-mean speedup" in page_one
    assert 'id="figure-suite"' in page_one and "Appendix F. The suite, model by model" in html
    appendix_f = html[html.index('id="suite-models-table"') :].split("</table>")[0]
    assert appendix_f.count("<tr><td>cpu</td><td>net") == 3 * 12  # jit, compile-default, compile-max-autotune

    tabs, figs, _ = paper_inputs  # two models: today's page 1, no suite anywhere
    few = paper.context(tabs, figs, figs[0].parent / "figures.json", envs, validated(), "x")
    assert few["is_suite"] is False and "suite" not in {f["name"] for f in few["not_drawn"]}
