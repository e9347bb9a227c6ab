"""A model of your own, as compilebench measures it: `source: python` in config/experiments/own_model.yaml."""

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, features: int = 64, classes: int = 10):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 128), nn.GELU(), nn.LayerNorm(128), nn.Linear(128, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).softmax(dim=-1)


def build_model() -> nn.Module:
    return Classifier()


def example_inputs(batch_size: int) -> tuple[torch.Tensor, ...]:
    return (torch.randn(batch_size, 64),)
