rule environment_record:
    input:
        engine=ENGINE_SOURCES,
    output:
        "results/env/{hardware}.json",
    log:
        "logs/environment/{hardware}.log",
    conda:
        get_conda_env
    resources:
        benchmark_slot=1,
    params:
        entry=get_hardware_settings,
    script:
        "../scripts/environment_record.py"
