rule reference_output:
    input:
        env=layout.ENV_RECORD,
        downloads=pipe.get_model_inputs,
    output:
        layout.REFERENCE,
    log:
        "logs/reference/{hardware}/{model}.log",
    priority: pipe.preparation_priority
    conda:
        pipe.get_conda_env
    threads: pipe.get_job_threads
    resources:
        **pipe.hardware_resources(),
        benchmark_slot=1,
    params:
        experiment=pipe.get_reference_experiment,
        code=code_of("reference_output"),
    script:
        "../scripts/reference_output.py"


# An experiment's processes are jobs of their own, run in rounds: the first process of every
# experiment, then the second of every experiment, and so on (a job's priority falls with its
# process number), so that a slow spell of the machine hits one process of many experiments
# rather than every process of one.
rule benchmark_cold_process:
    input:
        env=layout.ENV_RECORD,
        reference=pipe.get_reference,
        mode_check=pipe.get_mode_check,
        downloads=pipe.get_model_inputs,
    output:
        record=layout.PROCESS.replace("{process}", "1"),
        caches=temp(directory(layout.PROCESS_CACHES)),
    log:
        "logs/benchmark/{hardware}/{model}/{mode}/1.log",
    priority: pipe.rounds
    conda:
        pipe.get_conda_env
    threads: pipe.get_job_threads
    resources:
        **pipe.hardware_resources(exclusive=True),
        benchmark_slot=1,
    params:
        experiment=pipe.get_experiment,
        process=1,
        code=code_of("benchmark_process"),
    script:
        "../scripts/benchmark_process.py"


rule benchmark_warm_process:
    input:
        env=layout.ENV_RECORD,
        reference=pipe.get_reference,
        mode_check=pipe.get_mode_check,
        downloads=pipe.get_model_inputs,
        first=layout.PROCESS.replace("{process}", "1"),
        caches=layout.PROCESS_CACHES,
    output:
        record=layout.PROCESS,
    log:
        "logs/benchmark/{hardware}/{model}/{mode}/{process}.log",
    wildcard_constraints:
        process=LATER_PROCESS,
    priority: pipe.get_process_priority
    conda:
        pipe.get_conda_env
    threads: pipe.get_job_threads
    resources:
        **pipe.hardware_resources(exclusive=True),
        benchmark_slot=1,
    params:
        experiment=pipe.get_experiment,
        process=pipe.get_process_number,
        code=code_of("benchmark_process"),
    script:
        "../scripts/benchmark_process.py"


# The result, made from its processes' records where snakemake runs (a few bootstraps, no torch),
# never beside a measurement. The records are kept: a change to the statistics, or a deleted
# result, rebuilds it from them without measuring again.
rule benchmark_run:
    input:
        processes=pipe.get_process_records,
    output:
        layout.RUN,
    log:
        "logs/benchmark/{hardware}/{model}/{mode}.log",
    conda:
        "../envs/cpu.yaml"
    resources:
        benchmark_slot=1,
    params:
        experiment=pipe.get_experiment,
        code=code_of("benchmark_result"),
    script:
        "../scripts/benchmark_result.py"


# From process start to first output on each path of `measure.starts`: fresh processes in rounds, after every
# measuring process (lowest priority), in the benchmark slot like every timed process.
rule starts_run:
    input:
        env=layout.ENV_RECORD,
        reference=pipe.get_reference,
        mode_check=pipe.get_mode_check,
        downloads=pipe.get_model_inputs,
    output:
        layout.STARTS,
    log:
        "logs/starts/{hardware}/{model}/{mode}.log",
    conda:
        pipe.get_conda_env
    threads: pipe.get_job_threads
    resources:
        **pipe.hardware_resources(exclusive=True),
        benchmark_slot=1,
    params:
        experiment=pipe.get_experiment,
        starts=pipe.get_starts_plan,
        code=code_of("starts_process"),
    script:
        "../scripts/starts_process.py"
