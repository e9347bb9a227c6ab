"""The report, torch-free: the table registry and the tables, the figures, the paper and the standalone report
of a finished run. Imports the core, the configuration and the analysis."""
