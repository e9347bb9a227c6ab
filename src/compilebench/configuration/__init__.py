"""The configuration: the YAML loaded and checked against its schema, sweeps and streams expanded, experiments
built, the model catalog and the plan. Torch-free (the catalog lists torchvision's architectures once, cached).
Imports the core."""
