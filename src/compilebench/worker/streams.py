"""Shape streams: one process calls a model at a sequence of input shapes, eager and the mode in alternating passes,
and records each call's latency and what Dynamo compiled for it.
"""

from __future__ import annotations

import logging
import random
from itertools import accumulate

import torch

from ..core.experiment import Experiment, Stream
from . import correctness, timing
from .dynamo_counters import RECOMPILES_LOGGER, Messages
from .models import BuiltModel, inputs_at

log = logging.getLogger(__name__)

# The input dimensions each axis names.
AXIS_DIMS = {"batch_size": (0,), "seq_len": (1,), "image_size": (2, 3)}
LIMIT_LOGGER = "torch._dynamo.convert_frame"
DEFAULT_PASSES = 3


def shapes(stream: Stream) -> tuple[str, list[int]]:
    """The stream's axis and its values in call order: a list repeated `repeat` times, or `calls` seeded draws."""
    axis = stream.axis
    values = getattr(stream, axis)
    if isinstance(values, dict):
        draw = random.Random(stream.seed or 0)
        return axis, [draw.randint(values["low"], values["high"]) for _ in range(stream.calls)]
    return axis, list(values) * (stream.repeat or 1)


def mark_dynamic(inputs: tuple[torch.Tensor, ...], axes: list[str]) -> None:
    """Mark the dimensions of `axes` dynamic on every input that has them, before the first call."""
    for tensor in inputs:
        for axis in axes:
            for dim in AXIS_DIMS[axis]:
                if dim < tensor.dim():
                    torch._dynamo.mark_dynamic(tensor, dim)


class CompileWatch:
    """What Dynamo did during each call: frames compiled, recompile reasons, seconds compiling, the limit hit."""

    def __enter__(self):
        torch._logging.set_logs(recompiles=True)
        self.recompiles, self.limit = Messages(guards=True), Messages("hit config.", guards=True)
        logging.getLogger(RECOMPILES_LOGGER).addHandler(self.recompiles)
        logging.getLogger(LIMIT_LOGGER).addHandler(self.limit)
        self.seen = len(torch._dynamo.utils.get_compilation_metrics())
        return self

    def __exit__(self, *exc):
        logging.getLogger(RECOMPILES_LOGGER).removeHandler(self.recompiles)
        logging.getLogger(LIMIT_LOGGER).removeHandler(self.limit)

    def mark(self) -> None:
        """Where the next call starts."""
        self.reasons, self.limits = len(self.recompiles.messages), len(self.limit.messages)

    def since_mark(self) -> dict:
        """What Dynamo compiled since `mark`: graphs, recompiles with their reasons, seconds, the limit hit."""
        metrics = torch._dynamo.utils.get_compilation_metrics()
        new = [m for m in metrics[self.seen :] if not getattr(m, "is_runtime", False)]
        self.seen = len(metrics)
        graphs = [m for m in new if not m.fail_type]
        return {
            "compiled": bool(graphs),
            "recompiled": any((m.cache_size or 0) > 0 or m.recompile_reason for m in graphs),
            "compile_s": sum((m.dynamo_cumulative_compile_time_us or 0) for m in new) / 1e6,
            "recompile_reasons": self.recompiles.messages[self.reasons :],
            "limit_reached": len(self.limit.messages) > self.limits,
        }


def measure(model: BuiltModel, exp: Experiment, call_mode, clock: timing.Clock) -> dict:
    """The stream, eager and the mode in alternating passes (the mode's first compiles), per call and in total."""
    spec, device = exp.spec, exp.device
    axis, values = shapes(spec.stream)
    passes = spec.stream.passes or DEFAULT_PASSES
    at = {v: spec.replace(**{axis: v}) for v in dict.fromkeys(values)}
    inputs = {v: inputs_at(model, exp.model, shape, exp.seed, device) for v, shape in at.items()}
    if axes := getattr(exp.mode_settings, "mark_dynamic", None):  # a compile setting
        for args in inputs.values():
            mark_dynamic(args, axes)
    eager = model.module
    calls, eager_ms, mode_ms, limit_call = [], [], [], None
    compiled_values: set[int] = set()
    with CompileWatch() as watch:
        for k in range(passes):
            for side in ("eager", "mode"):
                for i, value in enumerate(values):
                    args = inputs[value]
                    if side == "eager":
                        ms, _ = clock.time(lambda a=args: eager(*a))
                        eager_ms.append((k, i, ms))
                    else:
                        watch.mark()
                        ms, _ = clock.time(lambda a=args: call_mode(*a))
                        what = watch.since_mark()
                        if what["compiled"]:
                            compiled_values.add(value)
                        if what["limit_reached"] and limit_call is None:
                            limit_call = i
                        mode_ms.append((k, i, ms))
                        if k == 0:
                            calls.append(
                                {
                                    "call": i,
                                    "axis": axis,
                                    "value": value,
                                    "latency_ms": ms,
                                    **what,
                                    "after_limit_uncompiled": limit_call is not None and value not in compiled_values,
                                }
                            )
    eager_totals = [sum(ms for p, _, ms in eager_ms if p == k) / 1e3 for k in range(passes)]
    mode_totals = [sum(ms for p, _, ms in mode_ms if p == k) / 1e3 for k in range(passes)]
    per_value = _per_value(values, eager_ms, mode_ms)
    for value, row in per_value.items():
        args = inputs[value]
        check = correctness.compare(eager(*args), call_mode(*args), spec.dtype)
        row.update(correct=check["passed"], cosine=check["cosine"], max_abs_err=check["max_abs_err"])
    reasons = [r for c in calls for r in c["recompile_reasons"]]
    eager_cumulative = list(accumulate(ms for p, _, ms in eager_ms if p == 0))
    mode_cumulative = list(accumulate(c["latency_ms"] for c in calls))
    overtakes = next((i for i, (m, e) in enumerate(zip(mode_cumulative, eager_cumulative)) if m < e), None)
    return {
        "stream": {
            "axis": axis,
            "values": values,
            "passes": passes,
            "calls": calls,
            "compiles": sum(c["compiled"] for c in calls),
            "recompiles": sum(c["recompiled"] for c in calls),
            "recompile_reasons": reasons[:50],
            "limit_reached": limit_call is not None,
            "limit_call": limit_call,
            "calls_after_limit_uncompiled": sum(c["after_limit_uncompiled"] for c in calls),
            "total_s": mode_totals[0],
            "eager_total_s": eager_totals[0],
            "steady_total_s": min(mode_totals[1:]),
            "eager_steady_total_s": min(eager_totals[1:]),
            "pass_totals_s": mode_totals,
            "eager_pass_totals_s": eager_totals,
            "eager_call_ms": [ms for p, _, ms in eager_ms if p == 0],
            "overtakes_eager_at_call": overtakes,
            "per_value": list(per_value.values()),
            "correct": all(row["correct"] for row in per_value.values()),
        }
    }


def _per_value(values, eager_ms, mode_ms) -> dict[int, dict]:
    """Per distinct value, once compiled (the passes after the first): the calls' latencies of both sides at that
    value, from which `summaries` draws the speedup at it."""
    rows = {}
    for value in dict.fromkeys(values):
        at = {i for i, v in enumerate(values) if v == value}
        base = [ms for p, i, ms in eager_ms if p > 0 and i in at]
        mine = [ms for p, i, ms in mode_ms if p > 0 and i in at]
        rows[value] = {"value": value, "calls": len(mine), "eager_ms": base, "mode_ms": mine}
    return rows
