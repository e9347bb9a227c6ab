"""The analysis, torch-free: the estimators, the checks built on them, results summarised from process records,
and comparisons between runs. Imports the core."""
