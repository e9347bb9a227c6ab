"""The pipeline glue that `rules/*.smk` calls: what the Snakemake process decides, without torch. Imports the core,
the configuration, the parent side and the report."""
