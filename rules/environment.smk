rule python_env:
    input:
        requirements=pipe.get_python_env_requirements,
    output:
        venv=directory(layout.PYTHON_ENV),
        record=layout.PYTHON_ENV_RECORD,
    log:
        "logs/python_envs/{python_env}.log",
    priority: pipe.preparation_priority
    conda:
        "../envs/cpu.yaml"
    resources:
        benchmark_slot=1,  # pip unpacking torch would skew a measurement running beside it
    params:
        requirements=pipe.get_python_env_requirements_path,
        code=code_of("python_env"),
    script:
        "../scripts/python_env.py"


# A checkpoint: on a cluster, whether an optional GPU entry has a GPU is known on its node only.
checkpoint environment_record:
    input:
        python_env=pipe.get_python_env_record,
    output:
        layout.ENV_RECORD,
    log:
        "logs/environment/{hardware}.log",
    priority: pipe.preparation_priority
    conda:
        pipe.get_conda_env
    threads: pipe.get_job_threads
    resources:
        **pipe.hardware_resources(),
        benchmark_slot=1,
    params:
        entry=pipe.get_hardware_settings,
        skip_if_absent=pipe.get_skip_if_absent,
        deciding_host=pipe.get_deciding_host,
        code=code_of("environment_record"),
    script:
        "../scripts/environment_record.py"


rule mode_check:
    input:
        python_env=pipe.get_python_env_record,
    output:
        layout.MODE_CHECK,
    log:
        "logs/modes/{hardware}/{mode}.log",
    priority: pipe.preparation_priority
    conda:
        pipe.get_conda_env
    resources:
        **pipe.hardware_resources(),
        benchmark_slot=1,
    params:
        settings=pipe.get_mode_check_settings,
        models={},
        entry=pipe.get_hardware_settings,
        code=code_of("mode_check"),
    script:
        "../scripts/mode_check.py"


# A regional mode's stack, found in each model that runs it before any is measured: a job per model.
rule region_check:
    input:
        python_env=pipe.get_python_env_record,
    output:
        layout.REGION_CHECK,
    log:
        "logs/modes/{hardware}/{mode}/{model}.log",
    priority: pipe.preparation_priority
    conda:
        pipe.get_conda_env
    resources:
        **pipe.hardware_resources(),
        benchmark_slot=1,
    params:
        settings=pipe.get_mode_check_settings,
        models=pipe.get_region_check_model,
        entry=pipe.get_hardware_settings,
        code=code_of("mode_check"),
    script:
        "../scripts/mode_check.py"
