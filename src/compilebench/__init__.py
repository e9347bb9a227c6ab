"""compilebench: how much faster does torch.compile make this model on this hardware?

Which code each job of the workflow runs, and when a change to it reruns that job, follows from the package's
imports (`codebase`), not from a list kept by hand.
"""

__version__ = "0.2.0"
