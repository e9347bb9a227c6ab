rule asset_download:
    output:
        layout.ASSET,
    log:
        "logs/assets/{asset}.log",
    priority: PREPARATION_PRIORITY
    retries: 2
    conda:
        "../envs/cpu.yaml"
    params:
        source=get_asset_source,
    script:
        "../scripts/asset_download.py"


rule weights_download:
    output:
        directory(layout.WEIGHTS),
    log:
        "logs/weights/{model}.log",
    priority: PREPARATION_PRIORITY
    retries: 2
    conda:
        "../envs/cpu.yaml"
    params:
        spec=get_model_spec,
    script:
        "../scripts/weights_download.py"
