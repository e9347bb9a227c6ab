rule asset_download:
    output:
        layout.ASSET,
    log:
        "logs/assets/{asset}.log",
    priority: pipe.preparation_priority
    retries: 2
    conda:
        "../envs/cpu.yaml"
    params:
        source=pipe.get_asset_source,
    script:
        "../scripts/asset_download.py"


rule weights_download:
    output:
        directory(layout.WEIGHTS),
    log:
        "logs/weights/{model}.log",
    priority: pipe.preparation_priority
    retries: 2
    conda:
        "../envs/cpu.yaml"
    params:
        spec=pipe.get_model_spec,
    script:
        "../scripts/weights_download.py"
