# One rule per table declared in compilebench's table registry (src/compilebench/report/registry.py).
for spec in registry.TABLES.values():

    rule:
        name:
            f"{spec.name}_table"
        input:
            **pipe.table_inputs(spec),
        output:
            report(
                layout.table(spec.name),
                caption=table_caption(spec),
                category="Tables",
            ),
        log:
            f"logs/aggregate/{spec.name}_table.log",
        localrule: True
        conda:
            "../envs/cpu.yaml"
        params:
            **pipe.table_params(spec, code_of("table")),
        script:
            "../scripts/table.py"
