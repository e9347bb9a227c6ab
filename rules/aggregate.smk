rule runs_table:
    input:
        runs=get_run_results,
        code=TABLE_SOURCES,
    output:
        report(
            "results/tables/runs.csv",
            caption="../report/captions/runs_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/runs_table.log",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/runs_table.py"


rule latency_samples_table:
    input:
        runs=get_run_results,
        code=TABLE_SOURCES,
    output:
        report(
            "results/tables/latency_samples.csv",
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
        runs="results/tables/runs.csv",
        code=TABLE_SOURCES,
    output:
        speedups=report(
            "results/tables/speedups.csv",
            caption="../report/captions/speedups_table.rst",
            category="Tables",
        ),
        summary=report(
            "results/tables/summary.csv",
            caption="../report/captions/summary_table.rst",
            category="Tables",
        ),
    log:
        "logs/aggregate/speedups_table.log",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/speedups_table.py"


rule top_ops_table:
    input:
        runs=get_run_results,
        code=TABLE_SOURCES,
    output:
        report(
            "results/tables/top_ops.csv",
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
        runs="results/tables/runs.csv",
        code=TABLE_SOURCES,
    output:
        report(
            "results/tables/limits.csv",
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
