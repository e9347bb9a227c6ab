rule reference_output:
    input:
        env="results/env/{hardware}.json",
        engine=ENGINE_SOURCES,
        downloads=get_model_inputs,
    output:
        "results/reference/{hardware}/{model}.pt",
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
        env="results/env/{hardware}.json",
        reference="results/reference/{hardware}/{model}.pt",
        engine=ENGINE_SOURCES,
        downloads=get_model_inputs,
    output:
        "results/runs/{hardware}/{model}/{mode}.json",
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
