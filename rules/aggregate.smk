rule runs_table:
    input:
        runs=get_run_results,
        code=TABLE_SOURCES,
    output:
        report(
            layout.table("runs"),
            caption="../report/captions/runs_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/runs_table.log",
    conda:
        "../envs/cpu.yaml"
    params:
        expected=get_run_identities,
        foreign=get_foreign_results,
        downstream=get_final_output(),
    script:
        "../scripts/runs_table.py"


rule latency_samples_table:
    input:
        runs=get_run_results,
        checked=layout.table("runs"),
        code=TABLE_SOURCES,
    output:
        report(
            layout.table("latency_samples"),
            caption="../report/captions/latency_samples_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/latency_samples_table.log",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/latency_samples_table.py"


rule speedups_table:
    input:
        runs=layout.table("runs"),
        code=TABLE_SOURCES,
    output:
        speedups=report(
            layout.table("speedups"),
            caption="../report/captions/speedups_table.rst",
            category="Tables",
        ),
        summary=report(
            layout.table("summary"),
            caption="../report/captions/summary_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/speedups_table.log",
    conda:
        "../envs/cpu.yaml"
    params:
        threshold=get_threshold,
    script:
        "../scripts/speedups_table.py"


rule top_ops_table:
    input:
        runs=get_run_results,
        checked=layout.table("runs"),
        code=TABLE_SOURCES,
    output:
        report(
            layout.table("top_ops"),
            caption="../report/captions/top_ops_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/top_ops_table.log",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/top_ops_table.py"


rule limits_table:
    input:
        runs=layout.table("runs"),
        code=TABLE_SOURCES,
    output:
        report(
            layout.table("limits"),
            caption="../report/captions/limits_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/limits_table.log",
    conda:
        "../envs/cpu.yaml"
    params:
        peaks=get_peak_overrides,
    script:
        "../scripts/limits_table.py"


rule hardware_costs_table:
    input:
        runs=layout.table("runs"),
        code=TABLE_SOURCES,
    output:
        report(
            layout.table("hardware_costs"),
            caption="../report/captions/hardware_costs_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/hardware_costs_table.log",
    conda:
        "../envs/cpu.yaml"
    params:
        prices=get_prices,
        baseline=get_baseline_hardware,
        calls_per_start=get_calls_per_start,
    script:
        "../scripts/hardware_costs_table.py"


rule compile_phases_table:
    input:
        runs=get_run_results,
        checked=layout.table("runs"),
        code=TABLE_SOURCES,
    output:
        report(
            layout.table("compile_phases"),
            caption="../report/captions/compile_phases_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/compile_phases_table.log",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/compile_phases_table.py"


rule mode_effects_table:
    input:
        results=get_run_results,
        runs=layout.table("runs"),
        code=TABLE_SOURCES,
    output:
        report(
            layout.table("mode_effects"),
            caption="../report/captions/mode_effects_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/mode_effects_table.log",
    conda:
        "../envs/cpu.yaml"
    params:
        threshold=get_threshold,
    script:
        "../scripts/mode_effects_table.py"


rule scaling_table:
    input:
        results=get_run_results,
        runs=layout.table("runs"),
        code=TABLE_SOURCES,
    output:
        report(
            layout.table("scaling"),
            caption="../report/captions/scaling_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/scaling_table.log",
    conda:
        "../envs/cpu.yaml"
    params:
        threshold=get_threshold,
    script:
        "../scripts/scaling_table.py"


rule comparison_table:
    input:
        results=get_run_results,
        runs=layout.table("runs"),
        code=TABLE_SOURCES,
    output:
        report(
            layout.table("comparison"),
            caption="../report/captions/comparison_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/comparison_table.log",
    conda:
        "../envs/cpu.yaml"
    params:
        baseline=get_baseline_hardware,
        threshold=get_threshold,
    script:
        "../scripts/comparison_table.py"


rule change_table:
    input:
        runs=get_run_results,
        checked=layout.table("runs"),
        previous=get_previous_results,
        code=TABLE_SOURCES,
    output:
        report(
            layout.table("change"),
            caption="../report/captions/change_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/change_table.log",
    conda:
        "../envs/cpu.yaml"
    params:
        threshold=get_threshold,
    script:
        "../scripts/change_table.py"
