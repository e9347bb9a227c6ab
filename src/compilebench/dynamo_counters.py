"""TorchDynamo counters: graphs captured, graph breaks with reasons, recompiles."""

from __future__ import annotations

import logging

import torch
from torch._dynamo.utils import counters

RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().splitlines()[0])


class CompilerHealth:
    """Reset Dynamo's state before a run; read its counters after."""

    def __init__(self):
        self.recompiles = _Collect()

    def start(self) -> None:
        torch._dynamo.reset()
        counters.clear()
        torch._logging.set_logs(recompiles=True)
        logging.getLogger(RECOMPILES_LOGGER).addHandler(self.recompiles)

    def report(self) -> dict:
        logging.getLogger(RECOMPILES_LOGGER).removeHandler(self.recompiles)
        breaks = dict(counters["graph_break"])
        return {
            "graphs": int(counters["stats"]["unique_graphs"]),
            "graph_breaks": int(sum(breaks.values())),
            "graph_break_reasons": {reason[:500]: int(n) for reason, n in breaks.items()},
            "recompiles": len(self.recompiles.messages),
            "recompile_reasons": self.recompiles.messages[:20],
        }
