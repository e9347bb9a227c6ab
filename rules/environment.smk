rule environment_record:
    input:
        engine=ENGINE_SOURCES,
    output:
        layout.ENV_RECORD,
    log:
        "logs/environment/{hardware}.log",
    conda:
        get_conda_env
    threads: get_job_threads
    resources:
        **hardware_resources(),
        benchmark_slot=1,
    params:
        entry=get_hardware_settings,
    script:
        "../scripts/environment_record.py"


rule mode_check:
    input:
        engine=ENGINE_SOURCES,
    output:
        layout.MODE_CHECK,
    log:
        "logs/modes/{hardware}/{mode}.log",
    conda:
        get_conda_env
    resources:
        **hardware_resources(),
        benchmark_slot=1,
    params:
        settings=get_mode_check_settings,
        entry=get_hardware_settings,
    script:
        "../scripts/mode_check.py"
