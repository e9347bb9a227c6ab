rule asset_download:
    output:
        "resources/assets/{asset}",
    params:
        source=get_asset_source,
    retries: 2
    log:
        "logs/assets/{asset}.log",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/asset_download.py"


rule weights_download:
    output:
        directory("resources/weights/{model}"),
    params:
        spec=get_model_spec,
    retries: 2
    log:
        "logs/weights/{model}.log",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/weights_download.py"
