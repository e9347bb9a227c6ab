rule figures:
    input:
        **{name: layout.table(name) for name in layout.FIGURE_TABLES},
    output:
        **figure_outputs("svg", mark=report),
        **figure_outputs("png"),
        manifest=layout.FIGURE_MANIFEST,
    log:
        "logs/report/figures.log",
    conda:
        "../envs/cpu.yaml"
    params:
        code=code_of("figures"),
    script:
        "../scripts/figures.py"


rule paper_html:
    input:
        unpack(pipe.get_paper_inputs),
        figures=expand(layout.FIGURE, figure=figure_catalog.NAMES, ext="svg"),
        figure_manifest=layout.FIGURE_MANIFEST,
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
        config=pipe.get_config_as_run(),
        command=pipe.get_command_line(),
        code=code_of("paper"),
    script:
        "../scripts/paper.py"


rule paper_pdf:
    input:
        unpack(pipe.get_paper_inputs),
        figures=expand(layout.FIGURE, figure=figure_catalog.NAMES, ext="png"),
        figure_manifest=layout.FIGURE_MANIFEST,
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
        config=pipe.get_config_as_run(),
        command=pipe.get_command_line(),
        code=code_of("paper"),
    script:
        "../scripts/paper.py"


# With measure.compile_trace: each compiling experiment's tlparse report, for Snakemake's --report.
rule compile_trace_report:
    input:
        run=layout.RUN,
    output:
        report(
            directory(layout.COMPILE_TRACE_REPORT),
            htmlindex="index.html",
            caption="../report/captions/compile_trace.rst",
            category="Compile traces",
            labels={"hardware": "{hardware}", "model": "{model}", "mode": "{mode}"},
        ),
    log:
        "logs/report/compile_trace/{hardware}/{model}/{mode}.log",
    localrule: True
    conda:
        "../envs/cpu.yaml"
    script:
        "../scripts/compile_trace_report.py"


# With `history:`, the finished run appended to that store (SQLite) once its paper is made: appending the same
# run again adds nothing, so a rerun that measured nothing adds no point.
rule history_add:
    input:
        papers=pipe.get_papers(),
        results=pipe.get_run_results,
    output:
        layout.HISTORY_ADDED,
    log:
        "logs/report/history.log",
    conda:
        "../envs/cpu.yaml"
    params:
        store=config.get("history"),
        code=code_of("history_add"),
    script:
        "../scripts/history_add.py"
