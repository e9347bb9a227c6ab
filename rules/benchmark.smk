rule reference_output:
    input:
        env=layout.ENV_RECORD,
        engine=ENGINE_SOURCES,
        downloads=get_model_inputs,
    output:
        layout.REFERENCE,
    log:
        "logs/reference/{hardware}/{model}.log",
    conda:
        get_conda_env
    threads: get_job_threads
    resources:
        **hardware_resources(),
        benchmark_slot=1,
    params:
        experiment=get_reference_experiment,
    script:
        "../scripts/reference_output.py"


rule benchmark_run:
    input:
        env=layout.ENV_RECORD,
        reference=layout.REFERENCE,
        mode_check=get_mode_check,
        engine=ENGINE_SOURCES,
        downloads=get_model_inputs,
    output:
        layout.RUN,
    log:
        "logs/benchmark/{hardware}/{model}/{mode}.log",
    conda:
        get_conda_env
    threads: get_job_threads
    resources:
        **hardware_resources(exclusive=True),
        benchmark_slot=1,
    params:
        experiment=get_experiment,
    script:
        "../scripts/benchmark_run.py"
