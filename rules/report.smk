rule figures:
    input:
        runs=layout.table("runs"),
        samples=layout.table("latency_samples"),
        speedups=layout.table("speedups"),
        hardware_costs=layout.table("hardware_costs"),
        code=REPORT_SOURCES,
    output:
        **figure_outputs("svg", in_report=True),
        **figure_outputs("png"),
    log:
        "logs/report/figures.log",
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/figures.py"


rule paper_html:
    input:
        unpack(get_paper_inputs),
        figures=expand(layout.FIGURE, figure=layout.FIGURE_NAMES, ext="svg"),
    output:
        report(
            layout.PAPER.format(ext="html"),
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
        figures=expand(layout.FIGURE, figure=layout.FIGURE_NAMES, ext="png"),
    output:
        report(
            layout.PAPER.format(ext="pdf"),
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
