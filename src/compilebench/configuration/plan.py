"""What a config plans before anything runs: its experiments, their measuring processes and starts, and a lower
bound on the time the measurement takes from the settings alone; settings that cannot fit a process's
`measure.timeout_s` are refused, and a run past `max_hours` does not start. Torch-free."""

from __future__ import annotations

from dataclasses import dataclass

from ..core import kinds
from ..core.errors import ConfigError

DEFAULT_START_REPEATS = 3  # fresh processes per path of `measure.starts` where the config gives none
DEFAULT_PASSES = 3  # a stream's passes where the config gives none (streams.DEFAULT_PASSES)
CALL_FLOOR_S = 5e-6  # no call of a torch module returns sooner: what a stream's calls take at the least


@dataclass(frozen=True)
class ExperimentPlan:
    """One experiment's share of a run."""

    processes: int  # measuring processes
    starts: int  # fresh processes that time a first call from the caches or the bundle, or a start on a path
    stream_calls: int  # a stream's calls, on each side, over all its passes
    lower_bound_s: float  # timed phases and steady state that the settings ask, over all its processes, and its starts


def timed_floor_s(measure: dict, eager: bool) -> float:
    """The seconds one measuring process times at least, from its settings: the mode's timed phase (`min_time_s`,
    and `min_blocks` blocks of `interleave_block_s`), eager's blocks beside it, and the mode timed alone
    (`steady_state_s`) with eager alone before it (half that). Blocks of a fixed call count take no known time.
    Its start-up, compile and warm-up are not counted."""
    blocks_s = 0.0 if measure.get("interleave_block") else measure["min_blocks"] * measure["interleave_block_s"]
    return max(measure["min_time_s"], blocks_s) + blocks_s + (0.0 if eager else 1.5 * measure["steady_state_s"])


def paths_asked(measure: dict, mode: str) -> list[str]:
    """The start paths `measure.starts` asks of `mode`: the list, or the mode's entry of a mapping."""
    paths = measure.get("starts") or []
    return list(paths.get(mode, [])) if isinstance(paths, dict) else list(paths)


# The least one fresh start takes on a path, whatever the machine: an interpreter that imports torch (eager, and
# every path that loads what an earlier process made), and a compile besides (cold, and each artifact's build).
START_FLOOR_S = 0.5
COMPILE_FLOOR_S = 1.0
COMPILING_PATHS = ("cold", "package", "precompiled")


def start_processes(paths: list[str], repeats: int) -> tuple[int, float]:
    """The fresh processes a starts job runs, and the seconds they take at the least: one that reads torch's files
    into the machine's cache, one per artifact it builds, a cold start for warm or artifacts starts to follow where
    no cold path is asked, and `repeats` of each path."""
    builds = sum(1 for path in ("package", "precompiled") if path in paths)
    seed = 1 if {"warm", "artifacts"} & set(paths) and "cold" not in paths else 0
    processes = 1 + builds + seed + repeats * len(paths)
    compiles = builds + seed + repeats * sum(1 for path in paths if path in COMPILING_PATHS)
    return processes, processes * START_FLOOR_S + compiles * COMPILE_FLOOR_S


def stream_calls(stream: dict) -> int:
    axis = next(a for a in ("batch_size", "seq_len", "image_size") if a in stream)
    values = stream[axis]
    per_pass = stream["calls"] if isinstance(values, dict) else len(values) * stream.get("repeat", 1)
    return per_pass * stream.get("passes", DEFAULT_PASSES)


def experiment_plan(measure: dict, entry: dict, mode: str, settings: dict) -> ExperimentPlan:
    """The share of one experiment: `measure` its settings, `entry` its model entry, `settings` its mode's."""
    if entry.get("stream"):
        calls = stream_calls(entry["stream"])
        return ExperimentPlan(1, 0, calls, 2 * calls * CALL_FLOOR_S)  # eager's passes and the mode's
    processes = measure["processes"]
    starts = 0
    kind = kinds.of(settings)
    if measure["warm_start"] and kind.warm_start == "caches":
        one_cold = processes == 1 or measure.get("cold_processes")
        starts = (1 if one_cold else 0) + (1 if measure["bundle_start"] else 0)
    floor = processes * timed_floor_s(measure, eager=mode == "eager")  # eager has no steady state to time
    paths = paths_asked(measure, mode)
    if paths and kind.starts:
        count, seconds = start_processes(paths, measure.get("start_repeats", DEFAULT_START_REPEATS))
        starts, floor = starts + count, floor + seconds
    return ExperimentPlan(processes, starts, 0, floor)


@dataclass(frozen=True)
class RunPlan:
    experiments: int
    hardware: int
    optional: int  # of the hardware entries, those skipped where their device is absent
    done: int  # experiments whose result is on disk already, not counted below
    processes: int
    starts: int
    stream_calls: int
    lower_bound_s: float

    def describe(self) -> str:
        done = f" ({self.done} done already, not counted)" if self.done else ""
        streams = f", {self.stream_calls} stream calls per side" if self.stream_calls else ""
        optional = f", {self.optional} of them optional" if self.optional else ""
        entries = f"{self.hardware} hardware {'entry' if self.hardware == 1 else 'entries'}{optional}"
        return (
            f"compilebench plans {self.experiments} experiments on {entries}{done}: "
            f"{self.processes} measuring processes and {self.starts} start processes{streams}, timing at least "
            f"{_duration(self.lower_bound_s)} from the settings (start-ups, compiles and warm-up come on top)"
        )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def totals(shares: list[ExperimentPlan], *, experiments: int, hardware: int, optional: int, done: int) -> RunPlan:
    """A run's plan from the shares of the experiments it will measure."""
    return RunPlan(
        experiments=experiments,
        hardware=hardware,
        optional=optional,
        done=done,
        processes=sum(p.processes for p in shares),
        starts=sum(p.starts for p in shares),
        stream_calls=sum(p.stream_calls for p in shares),
        lower_bound_s=sum(p.lower_bound_s for p in shares),
    )


def check_max_hours(planned: RunPlan, max_hours: float | None, source: str = "Config key `max_hours`") -> None:
    if max_hours is not None and planned.lower_bound_s > max_hours * 3600:
        raise ConfigError(
            f"{source} is {max_hours:g} hours, but the config plans at least "
            f"{_duration(planned.lower_bound_s)} of timing ({planned.processes} measuring processes, {planned.starts} "
            "start processes): expected fewer processes, starts (`measure.start_repeats`), models or modes, shorter "
            "measure settings, or a larger max_hours. " + planned.describe() + "."
        )


def check_fits_timeout(key: str, measure: dict, own: dict) -> None:
    """Refuse settings that alone cannot fit one process's `timeout_s`, naming the key (`own`: the keys the model
    sets itself, named under `key`; the rest under `measure`)."""

    def name(setting: str) -> str:
        return f"{key}.{setting}" if setting in own else f"measure.{setting}"

    timeout = measure["timeout_s"]
    alone = ["min_time_s", "steady_state_s"] + ([] if measure.get("interleave_block") else ["interleave_block_s"])
    for setting in alone:
        if measure[setting] >= timeout:
            raise ConfigError(
                f"Config key `{name(setting)}` is {measure[setting]:g} s, which alone does not fit one measuring "
                f"process's `{name('timeout_s')}` ({timeout:g} s): expected less than {timeout:g} s, or a larger "
                "timeout_s."
            )
    floor = timed_floor_s(measure, eager=False)
    if floor >= timeout:
        keys = ["min_time_s", "steady_state_s"] + ([] if measure.get("interleave_block") else ["min_blocks"])
        raise ConfigError(
            f"Config key `{name('timeout_s')}` is {timeout:g} s, but one measuring process times at least "
            f"{floor:g} s from {', '.join(f'`{name(k)}`' for k in keys)} (min_blocks blocks of "
            f"interleave_block_s on each side, the timed phase, the steady state): expected a timeout_s above "
            f"{floor:g} s, or settings that fit it."
        )


def check_stream_fits(key: str, stream: dict, measure: dict) -> None:
    """Refuse a stream whose calls alone cannot fit its process's `timeout_s`, at CALL_FLOOR_S a call."""
    calls = stream_calls(stream)
    floor = 2 * calls * CALL_FLOOR_S
    if floor >= measure["timeout_s"]:
        raise ConfigError(
            f"Config key `{key}` makes {calls} calls on each side (eager's passes and the mode's), which take at "
            f"least {floor:.3g} s at {CALL_FLOOR_S * 1e6:g} µs a call, more than the process's timeout_s "
            f"({measure['timeout_s']:g} s): expected fewer values, repeats or passes, or a larger timeout_s."
        )
