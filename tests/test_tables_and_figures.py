"""Tables and figures on synthetic results: each figure is a function from tidy tables to a file."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from synthetic import MODELS, MODES, synthetic_results, synthetic_starts, synthetic_sweep

from compilebench.analysis import comparisons
from compilebench.core.files import read_results
from compilebench.core.layout import FIGURE_TABLES
from compilebench.report import (
    compile_tables,
    figures,
    hardware_tables,
    legibility,
    speedup_tables,
    start_tables,
    stream_tables,
    tables,
    training_tables,
)


@pytest.fixture
def synthetic_tables(tmp_path):
    paths = synthetic_results(tmp_path)
    runs = tables.runs_table(paths)
    costs = hardware_tables.hardware_costs(runs, {"cpu": 1.0, "cpu-fast": 3.0}, baseline="cpu")
    samples = tables.latency_samples(paths)
    comparison = comparisons.within_run(read_results(paths), "cpu", 0.05)
    phases = compile_tables.compile_phases(paths)
    results = read_results(paths)
    streamed = stream_tables.stream_calls(results)
    depth = speedup_tables.compile_depth(runs, results)
    started = start_tables.start_paths([synthetic_starts({"eager": [2.0, 2.1, 2.2], "warm": [5.0, 5.2, 5.1]})])
    speedups = speedup_tables.speedups(runs)
    return figures.Tables(
        runs,
        samples,
        speedups,
        costs,
        speedup_tables.scaling(runs),
        comparison,
        phases,
        streamed,
        depth,
        started,
        training_tables.training(results, speedups),
    )


def test_runs_table_has_one_row_per_job(synthetic_tables):
    runs = synthetic_tables.runs
    assert len(runs) == 2 * len(MODELS) * len(MODES)
    assert tables.status_line(runs) == "14 ok, 0 failed, 0 timeout, 2 unsupported"
    assert runs.loc[runs["status"] == "unsupported", "error"].str.contains("TorchScript").all()


def test_latency_samples_are_one_row_per_iteration(synthetic_tables):
    samples = synthetic_tables.samples
    assert list(samples.columns) == [*tables.SAMPLE_KEYS, "iteration", "latency_ms"]
    assert tables.SAMPLE_KEYS[:5] == ["hardware", "model", "mode", "dtype", "batch_size"]
    assert len(samples) == 14 * 30
    assert samples.groupby(["hardware", "model", "mode"])["iteration"].max().eq(29).all()


def test_speedups_and_geometric_mean(synthetic_tables):
    sp = synthetic_tables.speedups
    row = sp[(sp["hardware"] == "cpu") & (sp["model"] == "resnet") & (sp["mode"] == "compile-max-autotune")].iloc[0]
    assert row["speedup_ci95_low"] < row["speedup"] < row["speedup_ci95_high"]
    assert row["speedup"] == pytest.approx(2.0, rel=0.05)
    assert row["cross_job_speedup"] == pytest.approx(row["eager_job_median_ms"] / row["median_ms"])
    summary = speedup_tables.geometric_mean_summary(sp)
    cpu_default = summary[(summary["hardware"] == "cpu") & (summary["mode"] == "compile-default")].iloc[0]
    values = sp[(sp["hardware"] == "cpu") & (sp["mode"] == "compile-default")]["speedup"]
    assert cpu_default["geomean_speedup"] == pytest.approx(float(np.exp(np.log(values).mean())))
    jit = summary[(summary["hardware"] == "cpu") & (summary["mode"] == "jit")].iloc[0]
    assert (jit["models"], jit["models_total"]) == (1, 2)  # the unsupported llama/jit is left out


def test_a_model_that_failed_correctness_is_left_out_of_the_mean():
    sp = pd.DataFrame(
        {
            "hardware": ["cpu"] * 2,
            "model": ["a", "b"],
            "mode": ["compile-default"] * 2,
            "status": ["ok"] * 2,
            "speedup": [2.0, 8.0],
            "correct": [True, False],
        }
    )
    row = speedup_tables.geometric_mean_summary(sp).iloc[0]
    assert row["geomean_speedup"] == pytest.approx(2.0) and row["models"] == 1


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_every_figure_renders_svg_and_png(synthetic_tables, tmp_path, name):
    svg, png = tmp_path / f"{name}.svg", tmp_path / f"{name}.png"
    figures.render(name, synthetic_tables, [svg, png])
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    image = np.asarray(Image.open(png).convert("L"), dtype=float)
    assert image.shape[0] > 100 and image.shape[1] > 200
    assert image.std() > 10  # something was drawn, not a blank canvas
    width_in = image.shape[1] / 150  # saved at 150 dpi
    assert width_in <= figures.PAGE_WIDTH_IN + 0.4, "its ticks would print under 7 pt at the PDF's text width"


def test_figures_say_so_when_there_is_nothing_to_show(synthetic_tables, tmp_path):
    only_images = dataclasses.replace(
        synthetic_tables, runs=synthetic_tables.runs[synthetic_tables.runs["model"] == "resnet"]
    )
    assert figures.generation_throughput(only_images) == "No text-generation experiments in this run."
    out = tmp_path / "generation.svg"
    assert figures.render("generation", only_images, [out]) == "No text-generation experiments in this run."
    assert ET.parse(out).getroot().tag.endswith("svg")


def test_limits_compare_achieved_rates_with_the_device_peak(synthetic_tables):
    limits = hardware_tables.limits(
        synthetic_tables.runs, {"cpu": {"memory_bandwidth_gbs": 100.0, "tflops": {"bfloat16": 2.0}}}
    )
    gpu = limits[(limits["hardware"] == "cpu-fast") & (limits["model"] == "resnet") & (limits["mode"] == "eager")].iloc[
        0
    ]
    run = synthetic_tables.runs.set_index(["hardware", "model", "mode"]).loc[("cpu-fast", "resnet", "eager")]
    assert gpu["metric"] == "compute" and gpu["peak_device"] == "NVIDIA H100 SXM" and gpu["peak"] == 989
    assert gpu["achieved"] == pytest.approx(20e9 / (run["median_ms"] / 1e3) / 1e12)
    assert gpu["fraction_of_peak"] == pytest.approx(gpu["achieved"] / 989)
    llama = limits[(limits["hardware"] == "cpu") & (limits["model"] == "llama") & (limits["mode"] == "eager")].iloc[0]
    tokens = synthetic_tables.runs.set_index(["hardware", "model", "mode"]).loc[
        ("cpu", "llama", "eager"), "decode_tokens_per_s"
    ]
    assert llama["metric"] == "memory bandwidth" and llama["peak_source"] == "config"
    assert llama["achieved"] == pytest.approx(14e9 * tokens / 1e9)
    assert llama["fraction_of_peak"] == pytest.approx(llama["achieved"] / 100.0)
    # weights that fit in the last-level cache are read from it: no DRAM bandwidth is set against them
    cached = synthetic_tables.runs.assign(llc_bytes=2 * 14e9)
    llama = hardware_tables.limits(cached, {"cpu": {"memory_bandwidth_gbs": 100.0}}).set_index(["hardware", "model"])
    row = llama.loc[("cpu", "llama")].iloc[0]
    assert row["bound"].startswith("in cache (13351.4 MiB of weights, 26702.9 MiB cache)") and pd.isna(row["measured"])
    assert pd.isna(row["fraction_of_peak"]) and pd.isna(row["fraction_of_measured"]) and not row["above_peak"]


def test_unknown_devices_get_the_fraction_of_their_measured_ceiling_only(synthetic_tables):
    limits = hardware_tables.limits(synthetic_tables.runs, {})
    cpu = limits[limits["hardware"] == "cpu"]
    assert cpu["achieved"].gt(0).all() and cpu["peak"].isna().all() and cpu["fraction_of_peak"].isna().all()
    resnet = cpu[cpu["model"] == "resnet"]
    assert resnet["measured"].eq(0.05).all()  # the ceiling of the dtype the arithmetic ran in (bfloat16)
    assert resnet["fraction_of_measured"].to_numpy() == pytest.approx(resnet["achieved"].to_numpy() / 0.05)
    llama = cpu[cpu["model"] == "llama"]
    assert llama["fraction_of_measured"].to_numpy() == pytest.approx(llama["achieved"].to_numpy() / 20.0)
    assert limits.loc[limits["hardware"] == "cpu-fast", "fraction_of_measured"].isna().all()  # it measured none


def test_top_ops_keep_ten_per_profiled_run(tmp_path):
    ops = compile_tables.top_ops(synthetic_results(tmp_path))
    assert set(ops["mode"]) == {"eager", "compile-max-autotune"}
    assert ops.groupby(["hardware", "model", "mode"]).size().eq(10).all()
    assert compile_tables.plain_op_name("## Call CompiledFxGraph fsh4amx ##") == "## Call CompiledFxGraph ##"
    kernel = (
        "void at::native::batch_norm_transform_input_kernel<c10::BFloat16, float, float, true, int>"
        "(at::GenericPackedTensorAccessor)"
    )
    assert compile_tables.plain_op_name(kernel) == "at::native::batch_norm_transform_input_kernel<…>"


def test_hardware_legend_flags_fast_math_without_native_bf16(synthetic_tables):
    runs = synthetic_tables.runs.assign(
        fpmath_mode=np.where(synthetic_tables.runs["hardware"] == "cpu-fast", "BF16", None), bf16_native=False
    )
    labels = set(hardware_tables.hardware_costs(runs, {}, "cpu")["hardware_label"])
    assert labels == {"cpu", "cpu-fast (bf16 requested, not native)"}


def test_hardware_costs_give_relative_p90_and_cost_per_million(synthetic_tables):
    costs = synthetic_tables.hardware_costs.set_index(["hardware", "model", "mode"])
    runs = synthetic_tables.runs.set_index(["hardware", "model", "mode"])
    fast, base = runs.loc[("cpu-fast", "resnet", "eager")], runs.loc[("cpu", "resnet", "eager")]
    assert costs.loc[("cpu-fast", "resnet", "eager"), "relative_p90"] == pytest.approx(fast["p90_ms"] / base["p90_ms"])
    assert costs.loc[("cpu", "resnet", "eager"), "relative_p90"] == pytest.approx(1.0)
    # 3 per hour at one inference per median latency: 3 / 3600 s x median s x 1e6
    expected = 3.0 / 3600 * fast["median_ms"] / 1e3 * 1e6
    assert costs.loc[("cpu-fast", "resnet", "eager"), "cost_per_million"] == pytest.approx(expected)


def test_a_sweep_gives_one_row_per_point_and_a_scaling_figure(tmp_path):
    runs = tables.runs_table(synthetic_sweep(tmp_path))
    assert list(runs["sweep_of"].unique()) == ["net"] and sorted(runs["batch_size"].unique()) == [1, 4, 16]
    scaling = speedup_tables.scaling(runs)
    compiled = scaling[scaling["mode"] == "compile-default"]
    assert list(compiled["value"]) == [1, 4, 16] and set(compiled["swept"]) == {"batch_size"}
    assert compiled["speedup"].iloc[0] == pytest.approx(2.0, rel=0.05)
    assert compiled["speedup"].iloc[-1] == pytest.approx(1.05, rel=0.05)
    empty = pd.DataFrame(columns=runs.columns)
    drawn = figures.Tables(runs, empty, empty, empty, scaling, empty, empty, empty, empty, empty, empty)
    figure = figures.scaling(drawn)
    lines = [[list(line.get_xdata()) for line in ax.get_lines() if line.get_marker() == "o"] for ax in figure.axes]
    assert lines == [[[1, 4, 16]] * 2, [[1, 4, 16]] * 2, [[1, 4, 16]]]  # eager has no speedup over itself
    assert figure.axes[2].get_xlabel() == "batch_size"


def test_every_platform_is_compared_with_the_baseline_with_an_interval_and_a_verdict(synthetic_tables):
    """In the synthetic run, cpu-fast's latencies are twice cpu's (the name is a misnomer on purpose)."""
    comparison = synthetic_tables.comparison
    assert set(comparison["hardware"]) == {"cpu-fast"} and set(comparison["baseline_hardware"]) == {"cpu"}
    each = comparison[comparison["scope"] == "experiment"]
    ok = synthetic_tables.ok
    assert len(each) == len(ok[ok["hardware"] == "cpu"])  # every experiment ok on both entries
    assert (each["verdict"] == "slower").all()
    assert np.allclose(each["ratio"], each["base_median_ms"] / each["median_ms"])
    assert ((each["ratio_ci95_low"] < each["ratio"]) & (each["ratio"] < each["ratio_ci95_high"])).all()
    means = comparison[comparison["scope"] == "geomean"].set_index("mode")
    assert set(means.index) == set(each["mode"]) and (means["verdict"] == "slower").all()
    assert means.loc["eager", "ratio"] == pytest.approx(0.5, rel=0.05)


def test_a_platform_against_itself_is_the_same(tmp_path):
    results = read_results(synthetic_results(tmp_path))
    twins = [{**r, "hardware": "cpu-twin"} for r in results if r["hardware"] == "cpu"]
    comparison = comparisons.within_run(results + twins, "cpu", 0.05)
    twin_rows = comparison[comparison["hardware"] == "cpu-twin"]
    assert not twin_rows.empty and (twin_rows["verdict"] == "same").all()


def interleaved(eager_ms: float, mode_ms: float, n: int = 40) -> dict:
    """A compiled run's result with interleaved samples around the given medians."""
    rng = np.random.default_rng(1)
    return {
        "status": "ok",
        "compile_s": 20.5,
        "compile_warm_s": 2.5,
        "eager_latency_ms": list(rng.normal(eager_ms, 0.2, n)),
        "latency_ms": list(rng.normal(mode_ms, 0.2, n)),
        "measure": {"bootstrap_resamples": 500},
    }


def test_a_faster_mode_pays_off_after_a_finite_number_of_calls_and_a_slower_one_never():
    faster = tables.break_even_columns(interleaved(12.0, 10.0), eager_first_call_s=0.5)
    assert faster["break_even_calls"] == pytest.approx(20.0 / 2e-3, rel=0.05)  # (20.5 - 0.5) s over 2 ms a call
    assert faster["break_even_calls_ci95_low"] < faster["break_even_calls"] < faster["break_even_calls_ci95_high"]
    assert faster["break_even_calls_warm"] == pytest.approx(2.0 / 2e-3, rel=0.05)
    slower = tables.break_even_columns(interleaved(10.0, 12.0), eager_first_call_s=0.5)
    assert slower["break_even_calls"] == float("inf") and slower["break_even_calls_warm"] == float("inf")
    assert tables.break_even_columns(interleaved(12.0, 10.0), eager_first_call_s=None)["break_even_calls"] is None


def test_break_even_reaches_runs_csv_and_the_compile_phases_table(synthetic_tables):
    runs = synthetic_tables.runs
    compiled = runs[runs["mode"].str.startswith("compile")]
    assert compiled["break_even_calls"].notna().all() and compiled["break_even_calls_warm"].notna().all()
    assert runs.loc[runs["mode"] == "eager", "break_even_calls"].isna().all()
    phases = synthetic_tables.compile_phases
    assert set(phases["start"]) == {"cold", "warm"}
    cold = phases[(phases["start"] == "cold")].groupby(["hardware", "model", "mode"])
    assert (cold["seconds"].sum() - cold["start_s"].first()).abs().max() < 1e-9  # the phases and the rest add up


def test_the_cost_table_spreads_each_starts_compile_over_its_calls(synthetic_tables):
    costs = synthetic_tables.hardware_costs
    row = costs[
        (costs["hardware"] == "cpu") & (costs["model"] == "resnet") & (costs["mode"] == "compile-default")
    ].iloc[0]
    per_call = 1.0 / 3600 * row["median_ms"] / 1e3
    assert row["cost_per_million_cold_start"] == pytest.approx(1e6 * per_call + 1e6 / 100_000 * 32.0 / 3600)
    assert row["cost_per_million_warm_start"] == pytest.approx(1e6 * per_call + 1e6 / 100_000 * 2.0 / 3600)


def test_a_cpu_the_table_does_not_list_gets_a_peak_computed_from_its_description(synthetic_tables):
    from compilebench.core import peaks

    named = peaks.computed_cpu_peak("Intel(R) Xeon(R) Platinum 8488C", ["avx2", "avx512f"], 3800.0)
    assert named["per_core_tflops"]["float32"] == pytest.approx(3.8e9 * 16 * 2 * 2 / 1e12)
    assert named["factors"]["lanes_source"] == "the avx512f flag" and named["unknown"] == []
    anonymous = peaks.computed_cpu_peak("Intel(R) Xeon(R) Processor", ["avx2", "avx512f"], None)
    assert anonymous["per_core_tflops"] is None and anonymous["unknown"] == ["clock_ghz", "fma_units"]
    runs = synthetic_tables.runs.copy()
    cpu = runs["hardware"] == "cpu"
    runs.loc[cpu, "computed_peak_per_core_tflops_float32"] = named["per_core_tflops"]["float32"]
    runs.loc[cpu, "computed_peak_source"] = named["source"]
    runs.loc[cpu, "compute_dtype"] = "float32"
    limits = hardware_tables.limits(runs, {})
    resnet = limits[(limits["hardware"] == "cpu") & (limits["model"] == "resnet")].iloc[0]
    assert resnet["peak"] == pytest.approx(0.2432 * 2)  # per core, times the run's 2 threads
    assert resnet["peak_source"] == "computed: 3.80 GHz x 16 lanes x 2 FMA units x 2, per core, x 2 threads"
    assert resnet["above_peak"] == (resnet["achieved"] > resnet["peak"])


def test_eager_beside_a_mode_is_set_against_the_eager_job_and_flagged_where_they_differ(tmp_path):
    from compilebench.core.files import write_json
    from compilebench.report import findings

    paths = synthetic_results(tmp_path, hardware=("cpu",))
    one_process = speedup_tables.speedups(tables.runs_table(paths), 0.05, read_results(paths))
    assert one_process["eager_job_ratio"].notna().any() and one_process["eager_job_flagged"].isna().all()  # no spread
    for path in paths:  # each of resnet's results measured in two processes
        record = read_results([path])[0]
        if record["model"] != "resnet" or record["status"] != "ok":
            continue
        if record["mode"] == "compile-default":
            record["eager_latency_ms"] = [1.3 * x for x in record["eager_latency_ms"]]  # eager slowed beside it
        keys = [k for k in ("latency_ms", "eager_latency_ms") if k in record]
        # The machine's parallel speedup fell from 1.75x to 1.40x within compile-default's processes, held elsewhere.
        after = 1.40 if record["mode"] == "compile-default" else 1.74
        capacity = {"before": {"parallel_speedup": 1.75}, "after": {"parallel_speedup": after}}
        record["processes"] = [
            {**{k: record[k][half::2] for k in keys}, "machine": {"capacity": capacity}} for half in (0, 1)
        ]
        # Eager's calls page-faulted in the eager job, far less beside compile-default.
        faults = {"eager": 4708.0, "compile-default": 12.0}.get(record["mode"], 3.0)
        record["page_faults"] = {"mode_per_call": faults, "eager_per_call": 3267.0 if faults == 12.0 else faults}
        write_json(path, record)
    runs, results = tables.runs_table(paths), read_results(paths)
    speedups = speedup_tables.speedups(runs, 0.05, results).set_index(["model", "mode"])
    flagged = speedups.loc[("resnet", "compile-default")]
    assert flagged["eager_job_flagged"] == True and flagged["eager_job_ratio"] == pytest.approx(1.3, rel=0.05)  # noqa: E712
    assert (
        flagged["eager_job_ratio_ci95_low"] > 1.1 and flagged["eager_beside_median_ms"] > flagged["eager_job_median_ms"]
    )
    resnet = speedups.loc["resnet"].drop("compile-default")
    assert (resnet["eager_job_flagged"] == False).all()  # noqa: E712
    assert flagged["parallel_speedup"] == pytest.approx(1.575) and flagged["eager_job_parallel_speedup"] == 1.745
    shifted = runs.set_index(["model", "mode"])["capacity_shifted"]
    assert shifted[("resnet", "compile-default")] == True and shifted[("resnet", "eager")] == False  # noqa: E712
    assert shifted.drop("resnet").isna().all()  # measured without the probes
    found = findings.eager_job_findings(speedups.reset_index())
    assert len(found) == 1 and found[0].startswith("On cpu, eager beside resnet in compile-default ran 1.29×")
    assert "set against the eager job, its speedup of" in found[0]
    assert found[0].endswith("parallel speedup differed (1.57× in the mode's job, 1.75× in eager's). Eager took 4,708 "
                             "page faults a call in the eager job and 3,267 beside the mode.")  # fmt: skip
    assert speedups.loc[("resnet", "jit"), ["eager_faults_per_call", "eager_job_faults_per_call"]].tolist() == [3, 4708]


def test_each_runtime_is_set_against_the_best_torch_mode_with_an_interval(tmp_path):
    from synthetic import resealed, scaled_latencies, speedup

    from compilebench.analysis.stats import summarize
    from compilebench.core.experiment import Experiment
    from compilebench.core.files import read_json, write_json
    from compilebench.core.modes import BUILTIN_MODES, settings
    from compilebench.core.records import result_header
    from compilebench.report import runtime_tables

    paths = synthetic_results(tmp_path, hardware=("cpu",))
    best = read_json(tmp_path / "runs" / "cpu" / "resnet" / "compile-max-autotune.json")
    for mode, factor in (("onnxruntime", 0.5), ("openvino", None)):
        record = resealed(best, mode=mode, mode_settings=settings(BUILTIN_MODES[mode]))
        if factor is None:
            exp, said = Experiment.from_json(record["experiment"]), "openvino.convert_model failed: no converter"
            record = result_header(exp, "unsupported", said, started_at=record["started_at"])
        else:
            record = scaled_latencies(record, factor)
            record["stats"] = summarize(record["latency_ms"], resamples=200)
            ratio = speedup(record["eager_latency_ms"], record["latency_ms"])
            record["speedup"] = record["processes"][0]["speedup"] = ratio
            record["preparation"] = {"onnx_export_s": 2.0, "session_s": 0.5, "artifact_bytes": 45_000_000}
            record["compile_s"] = 2.5
            record["runtime"] = {"name": mode, "version": "1.31.1", "threads": 2}
        path = tmp_path / "runs" / "cpu" / "resnet" / f"{mode}.json"
        write_json(path, record)
        paths.append(path)
    runs = tables.runs_table(paths)
    speedups = speedup_tables.speedups(runs)
    started = pd.DataFrame([
        {"hardware": "cpu", "model": "resnet", "mode": mode, "path": path, "status": "ok", "total_s": total,
         "total_ci95_low": total - 0.1, "total_ci95_high": total + 0.1}
        for mode, path, total in (("compile-max-autotune", "eager", 2.0), ("compile-max-autotune", "cold", 30.0),
                                  ("compile-max-autotune", "warm", 6.0), ("onnxruntime", "package", 2.4))
    ])  # fmt: skip
    table = runtime_tables.runtimes(read_results(paths), speedups, 0.05, started)
    assert list(table["model"].unique()) == ["resnet"]  # the model without a runtime mode has no rows
    rows = table.set_index("mode")
    assert rows.loc["eager", "role"] == "eager" and rows.loc["compile-max-autotune", "role"] == "best torch mode"
    ort = rows.loc["onnxruntime"]
    assert ort["vs_torch_mode"] == "compile-max-autotune" and ort["vs_torch_ratio"] == pytest.approx(2.0, rel=0.1)
    assert ort["vs_torch_ci95_low"] <= ort["vs_torch_ratio"] <= ort["vs_torch_ci95_high"]
    assert ort["vs_torch_verdict"] == "faster" and ort["compile_s"] == 2.5 and ort["artifact_bytes"] == 45_000_000
    assert ort["speedup"] == pytest.approx(speedups.set_index("mode").loc["onnxruntime", "speedup"])
    starts = rows[["start_path", "start_s"]].to_dict("index")
    assert starts["eager"] == {"start_path": "eager", "start_s": 2.0}  # eager's own, from the torch mode's job
    assert starts["compile-max-autotune"] == {"start_path": "warm", "start_s": 6.0}  # its most prepared path
    assert starts["onnxruntime"] == {"start_path": "package", "start_s": 2.4}
    openvino = rows.loc["openvino"]
    assert openvino["status"] == "unsupported" and "no converter" in openvino["reason"]
    assert pd.isna(openvino["vs_torch_ratio"])
    (sentence,) = runtime_tables.runtime_findings(table)
    assert sentence.startswith("On cpu, resnet: onnxruntime (") and "is faster than compile-max-autotune" in sentence
    # page 1: beside the mode it says to use
    said = runtime_tables.answer_clause(table, "cpu", "resnet", "onnxruntime")
    assert said.startswith("Against compile-max-autotune, the best torch mode: 2.") and ", faster, " in said
    # the ratio says which two printed numbers it divides: the two speedups, each over its own eager
    quotient = re.search(r"beside it \(([\d.]+)×\) over the mode's \(([\d.]+)×\)", said)
    assert float(quotient[1]) / float(quotient[2]) == pytest.approx(ort["vs_torch_ratio"], rel=0.01)
    assert quotient[0] in sentence
    said = runtime_tables.answer_clause(table, "cpu", "resnet", "compile-max-autotune")
    assert said.startswith("Against it, onnxruntime 2.") and ", faster, " in said
    assert runtime_tables.answer_clause(table, "cpu", "resnet", "eager") is None
    assert runtime_tables.answer_clause(table, "cpu", "llama", "compile-default") is None
    # on a busy machine its verdict is Table 1's: unclear, whatever its interval alone says
    assert ort["verdict"] == "faster"
    busy = runs.assign(machine_busy=runs["machine_busy"].where(runs["mode"] != "onnxruntime", True))
    judged = runtime_tables.runtimes(read_results(paths), speedup_tables.speedups(busy), 0.05, started)
    row = judged.set_index("mode").loc["onnxruntime"]
    assert (row["against_noise"], row["verdict"], row["verdict_why"]) == ("faster", "unclear", "machine not steady")


def test_the_memory_figure_sets_each_mode_started_alone_beside_its_measuring_process(synthetic_tables):
    """Where the run timed starts, Figure 2 draws beside the measuring processes' peaks each mode's start on its
    most prepared path (ONNX Runtime's package, not its cold start) and eager's start, in MiB."""
    started = pd.DataFrame([
        {"hardware": "cpu", "model": "resnet", "mode": "onnxruntime", "path": path, "status": "ok", "peak_bytes": peak}
        for path, peak in (("eager", 782 * 2**20), ("cold", 1112 * 2**20), ("package", 1000 * 2**20))
    ])  # fmt: skip
    assert start_tables.deployed_peaks(started)[["mode", "path"]].values.tolist() == [
        ["eager", "eager"], ["onnxruntime", "package"]
    ]  # fmt: skip
    alone = figures.peak_memory(dataclasses.replace(synthetic_tables, start_paths=started))
    panels = {ax.get_title(): ax for ax in alone.axes if ax.axison}
    assert "cpu: started alone, as deployed" in panels and "cpu: measured" in panels
    heights = sorted(round(bar.get_height()) for bar in panels["cpu: started alone, as deployed"].patches)
    assert [h for h in heights if h > 0] == [782, 1000]
    plain = figures.peak_memory(synthetic_tables)  # no start read its memory: the measuring processes alone
    assert all(":" not in ax.get_title() for ax in plain.axes)
    step = synthetic_tables.runs.iloc[[0]].assign(model="resnet.train", train_of="resnet", peak_memory_bytes=9e9)
    with_step = dataclasses.replace(synthetic_tables, runs=pd.concat([synthetic_tables.runs, step]))
    ticks = [t.get_text() for ax in figures.peak_memory(with_step).axes for t in ax.get_xticklabels()]
    assert "resnet" in ticks and "resnet.train" not in ticks  # a training step's memory is Appendix B's


def _drawn(tables_: figures.Tables):
    """Each figure the tables draw, by name (those with nothing to draw left out)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="paper")
    for name, draw in figures.FIGURES.items():
        fig = draw(tables_)
        if not isinstance(fig, str):
            yield name, fig
            plt.close(fig)


def test_no_figure_puts_text_over_text_or_a_legend_over_data_even_with_long_model_names(synthetic_tables):
    long = {"resnet": "resnet18-at-224-batch-8", "llama": "llama-tiny-four-layers.bs8"}
    renamed = figures.Tables(
        *(
            frame.assign(**{c: frame[c].replace(long) for c in ("model", "train_of") if c in frame})
            for frame in dataclasses.astuple(synthetic_tables)
        )
    )
    drawn = dict((name, legibility.problems(fig)) for name, fig in _drawn(renamed))
    assert {"latency", "memory", "hardware", "comparison", "compile_cost", "pay_off"} <= set(drawn)
    assert {name: found for name, found in drawn.items() if found} == {}
    # the check sees what it exists for: a legend over the bars, and two labels on one point
    fig = figures.FIGURES["latency"](renamed)
    fig.axes[0].legend(loc="center")
    assert any("covers a bar" in p for p in legibility.problems(fig))
    fig.axes[0].annotate("resnet", (0, 10))
    fig.axes[0].annotate("resnet", (0, 10))
    assert "text 'resnet' overlaps text 'resnet'" in legibility.problems(fig)


def test_every_figure_of_the_shared_run_can_be_read(finished):
    project, _, _ = finished
    paths = [project / "results" / "tables" / f"{name}.csv" for name in FIGURE_TABLES]
    drawn = dict((name, legibility.problems(fig)) for name, fig in _drawn(figures.load_tables(*paths)))
    assert len(drawn) >= 8
    assert {name: found for name, found in drawn.items() if found} == {}
