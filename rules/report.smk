rule figures:
    input:
        runs="results/tables/runs.csv",
        samples="results/tables/latency_samples.csv",
        speedups="results/tables/speedups.csv",
        code=REPORT_SOURCES,
    output:
        **figure_outputs("svg", in_report=True),
        **figure_outputs("png"),
    log:
        "logs/report/figures.log",
    conda:
        "../envs/cpu.yaml"
    params:
        prices=get_prices,
        baseline=get_baseline_hardware,
    script:
        "../scripts/figures.py"


rule paper_html:
    input:
        unpack(get_paper_inputs),
        figures=expand("results/report/figures/{figure}.svg", figure=FIGURE_NAMES),
    output:
        report(
            "results/report/paper.html",
            caption="../report/captions/paper.rst",
            category="Paper",
        ),
    log:
        "logs/report/paper_html.log",
    conda:
        "../envs/cpu.yaml"
    params:
        config=get_config_as_run(),
        command=get_command_line(),
    script:
        "../scripts/paper.py"


rule paper_pdf:
    input:
        unpack(get_paper_inputs),
        figures=expand("results/report/figures/{figure}.png", figure=FIGURE_NAMES),
    output:
        report(
            "results/report/paper.pdf",
            caption="../report/captions/paper.rst",
            category="Paper",
        ),
    log:
        "logs/report/paper_pdf.log",
    conda:
        "../envs/cpu.yaml"
    params:
        config=get_config_as_run(),
        command=get_command_line(),
    script:
        "../scripts/paper.py"
