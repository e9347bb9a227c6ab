"""TorchDynamo counters: graphs captured, graph breaks with reasons, recompiles."""

from __future__ import annotations

import logging

import torch
from torch._dynamo.utils import counters

RECOMPILES_LOGGER = "torch._dynamo.guards.__recompiles"


class Messages(logging.Handler):
    """The messages of a torch logger (those holding `needle`, where given), each as its first line, or with
    `guards` as the failed guards it lists (a recompile's message names the function, then each guard on a line of
    its own)."""

    def __init__(self, needle: str | None = None, *, guards: bool = False):
        super().__init__(logging.DEBUG)
        self.needle, self.guards, self.messages = needle, guards, []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if self.needle is not None and self.needle not in message:
            return
        failed = [line.strip()[2:] for line in message.splitlines() if line.strip().startswith("- ")]
        if self.guards and failed:
            self.messages.append("; ".join(failed)[:300])
        else:
            self.messages.append(message.splitlines()[0][: 300 if self.guards else None])


class CompilerHealth:
    """Reset Dynamo's state before a run; read its counters after."""

    def __init__(self):
        self.recompiles = Messages()

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
