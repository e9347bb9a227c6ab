"""The torch-free core both sides use: the experiment, process records and results and their files, paths,
modes, thresholds, errors, the job log, device peaks and process supervision. Imports nothing else of the package."""
