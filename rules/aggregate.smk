rule runs_table:
    input:
        runs=get_run_results,
        code=TABLE_SOURCES,
    output:
        "results/tables/runs.csv",
    log:
        "logs/aggregate/runs_table.log",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/runs_table.py"
