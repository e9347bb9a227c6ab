"""The parent side of every job: it starts the worker in a process of its own, supervises it and turns what it
wrote into the job's outputs; starts, platform Python environments and asset downloads. Torch-free (a weights
download excepted). Imports the core and the configuration."""
