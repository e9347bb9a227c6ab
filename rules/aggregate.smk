rule runs_table:
    input:
        get_run_results,
    output:
        "results/tables/runs.csv",
    log:
        "logs/aggregate/runs_table.log",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/runs_table.py"
