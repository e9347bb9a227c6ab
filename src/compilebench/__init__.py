"""compilebench: how much faster does torch.compile make this model on this hardware?"""

__version__ = "0.1.0"
