rule environment_record:
    input:
        engine=ENGINE_SOURCES,
    output:
        "results/env/{hardware}.json",
    params:
        entry=get_hardware_settings,
    resources:
        benchmark_slot=1,
    log:
        "logs/environment/{hardware}.log",
    conda:
        get_conda_env
    script:
        "../scripts/environment_record.py"
