"""Every summary a result states, made from its processes' records; torch-free, for one process and for N alike.

A measuring process (`runner`, in the worker) records raw samples and what it saw: latencies, blocks, first calls,
counters, its outputs' checks. Here they become the result: medians and their intervals, the speedup over eager or
the noise floor, the steady state, the warm starts, a stream's ratios, a generator's token rates. The records stay
on disk (`results/processes/…`), so that a fix here rebuilds every result without measuring again.

The first process is the cold start. The others start from the compile caches it wrote, so their first calls are
warm starts (`compile_warm_samples_s`). The result keeps each process's own figures under `processes`, and pools
them in the fields a one-process result has, each interval over processes two-level (Student's t over the
processes' values, each with its own block bootstrap).
Records that disagree on what must agree (torch, device, threads, the experiment) are refused with both values.
"""

from __future__ import annotations

import logging
import statistics
from pathlib import Path

import numpy as np

from ..core import kinds, layout
from ..core.errors import UserError
from ..core.experiment import Experiment
from ..core.files import BadRecord, read_json, read_process_record, write_json
from ..core.records import START_PARTS, ProcessRecord, Result, identity, now, result_header, unexplained_s
from ..core.thresholds import FAULTS_PER_CALL
from . import levels, stats

log = logging.getLogger(__name__)

# What a process record holds that its result states otherwise (pooled, or summarized under another key).
RAW_ONLY = (
    "twin_latency_ms",
    "alone_latency_ms",
    "alone_calls",
    "eager_alone_latency_ms",
    "generations",
    "samples_sha256",
    "record_sha256",
)
# What every process of one experiment must share for its samples to be pooled: the experiment, and the torch,
# device and thread count the process itself ran with (`environment.ran_on`).
MUST_AGREE = ("experiment_sha256",)
RAN_ON_MUST_AGREE = ("torch", "device_name", "threads")


class DisagreeingProcesses(UserError):
    """Process records of one experiment that were not measured alike."""


def result_job(exp: Experiment, process_records: list[str | Path], out: str | Path) -> Result:
    """An experiment's result from the records of its processes, in order: the first one's status where it was not
    ok; else the ok ones together, each later one that failed or ran out of time noted, and the result resting on
    the others."""
    Path(out).unlink(missing_ok=True)
    records = read_process_records(exp, process_records)  # a bad record stops the job: the next run remeasures it
    first, wanted = records[0], len(records)
    notes = None
    finished = [first]
    if first["status"] == "ok" and wanted > 1:
        notes = []
        for k, record in enumerate(records[1:], 2):
            if record["status"] == "ok":
                finished.append(record)
                if "cache_replaced" in record:
                    notes.append(
                        f"process {k} of {wanted} compiled cold, not warm: the caches process 1 left failed it "
                        f"({record['cache_replaced']['reason']}), and were replaced by its own"
                    )
                continue
            notes.append(f"process {k} of {wanted} was {record['status']}: {record['error']['message']}")
            log.error("%s; the result rests on the others", notes[-1])
    try:
        result = combine(exp, finished, notes)
    except DisagreeingProcesses as refused:  # a failed experiment, not a stopped pipeline
        log.error("%s", refused)
        result = {**result_header(exp, "failed", str(refused), started_at=first["started_at"]), "finished_at": now()}
    if result["status"] == "ok":
        result.update(level_fields(process_records, records))
    counted = len(result["processes"]) if result["status"] == "ok" else 0
    log.info("%s: %s, from %d of %d process(es)", exp.name, result["status"], counted, wanted)
    write_json(out, result)
    return result


def read_process_records(exp: Experiment, paths: list[str | Path]) -> list[ProcessRecord]:
    """The records of `exp`'s processes, each read against its schema, `exp`'s identity and its own digest, and no
    two the same process; else `BadRecord` naming each bad file and what was wrong, each moved aside (to
    `NAME.rejected`). Its result job then fails, leaving no result, so that the next run measures those processes
    again (Snakemake makes a missing record again only for a result that is missing too)."""
    expected = identity(exp)
    records, problems, seen = [], {}, {}
    for path in paths:
        try:
            record = read_process_record(path, expected)
        except BadRecord as bad:
            problems[path] = str(bad)
            continue
        digest = record.get("samples_sha256")
        if digest in seen:
            problems[path] = f"{path} holds the same samples as {seen[digest]}: one process, counted once"
            continue
        if digest:
            seen[digest] = path
        records.append(record)
    if not problems:
        return records
    for path in problems:
        Path(path).replace(f"{path}.rejected")
    raise BadRecord(
        f"Refused {len(problems)} process record(s) of {exp.hardware}/{exp.model}/{exp.mode}: "
        f"{'; '.join(problems.values())}. Each was moved aside to NAME.rejected and is not summarised: run the same "
        "command again to measure those processes again."
    )


def level_fields(paths: list[str | Path], records: list[ProcessRecord]) -> dict:
    """`set_aside`: each record its job set aside for a level shift and measured again, with the shift (the
    result rests on the others); `level_shift`: the shift of a process the result still rests on (the time or the
    `measure.max_extra_processes` ran out), or None."""
    asides = [
        (k, aside, read_json(aside)) for k, path in enumerate(paths, 1) for aside in layout.set_aside_records(path)
    ]
    set_aside = [
        {"process": k, **(levels.level_shift(record) or {}), "record": aside.name} for k, aside, record in asides
    ]
    kept = [
        {"process": k, **shift}
        for k, record in enumerate(records, 1)
        if record["status"] == "ok" and (shift := levels.level_shift(record))
    ]
    every = [record for _, _, record in asides] + list(records)
    return {
        "set_aside": set_aside,
        "level_shift": kept[0] if kept else None,
        "bimodal": levels.bimodal(levels.mode_levels([r for r in every if r.get("status") == "ok"])),
    }


def combine(exp: Experiment, records: list[ProcessRecord], notes: list[str] | None = None) -> Result:
    """One result from an experiment's process records (the ok ones, the cold one first), the first one's fields
    kept where they describe one start (compile, correctness, memory, profile, tokens). `notes`: what became of
    the processes left out (None for an experiment measured in one process)."""
    first = records[0]
    if first["status"] != "ok":
        return _without_raw(first)
    check_agreement(records)
    if first.get("stream"):
        return _stream_result(exp, first)
    measure, seed = first["measure"], exp.seed
    result = _without_raw(first)
    samples = [_samples(record) for record in records]
    latency_ms = [x for p in samples for x in p["latency_ms"]]
    result["latency_ms"] = latency_ms
    result["stats"] = stats.summarize(latency_ms, resamples=measure["bootstrap_resamples"], seed=seed)
    result["throughput"] = {"samples_per_s": first["batch_size"] / (result["stats"]["median_ms"] / 1e3)}
    eager = first["mode"] == "eager"
    result.update(interleaved_fields(samples, measure, seed, eager=eager))
    result["processes"] = [process_entry(record, seed) for record in records]
    faults = page_faults(records, seed)
    if faults is not None:  # records measured before faults were counted have none
        result["page_faults"] = faults
    if notes is not None:
        result["processes_notes"] = notes
    phases = first.get("compile_phases")
    result["compile_unexplained_s"] = unexplained_s(first["compile_s"], phases) if phases else None
    if exp.measure.cold_processes and len(records) > 1:
        result["compile_cold_samples_s"] = [record["compile_s"] for record in records]
        result["compile_s"] = statistics.median(result["compile_cold_samples_s"])
    result.update(warm_start_fields(exp, records))
    if first.get("generations"):
        result["generation"] = summarize_tokens(first["generations"], first["batch_size"])
        result["throughput"]["tokens_per_s"] = result["generation"]["tokens_per_s"]
    if result.get("steady_state", {}).get("flagged"):
        log.warning("interleaving changed the mode's median: %s", result["steady_state"])
    if result.get("eager_alone", {}).get("flagged"):
        log.warning("eager beside the mode is not eager timed alone: %s", result["eager_alone"])
    return result


def check_agreement(records: list[ProcessRecord]) -> None:
    """Refuse records of one experiment measured differently (another experiment, torch, device or thread count:
    a cluster job that landed on another node type), naming the key and both values; each keeps its own host."""
    first = records[0]
    for k, record in enumerate(records[1:], 2):
        pairs = [(key, first.get(key), record.get(key)) for key in MUST_AGREE]
        pairs += [
            (f"environment.ran_on.{key}", _ran_on(first).get(key), _ran_on(record).get(key))
            for key in RAN_ON_MUST_AGREE
        ]
        for key, one, other in pairs:
            if one != other:
                name = f"{first['hardware']}/{first['model']}/{first['mode']}"
                raise DisagreeingProcesses(
                    f"The processes of {name} were not measured alike: process 1 has {key} {one!r}, process {k} "
                    f"{other!r}. Their samples cannot be pooled: pin the hardware entry's jobs to one kind of "
                    f"machine (its `resources`), then delete results/processes/{name}/ to measure it again."
                )


def _ran_on(record: ProcessRecord) -> dict:
    return (record.get("environment") or {}).get("ran_on") or {}


def _without_raw(record: ProcessRecord) -> Result:
    return {key: value for key, value in record.items() if key not in RAW_ONLY}


def _samples(record: ProcessRecord) -> dict:
    """A process's interleaved samples in the shape the estimators read: the mode's, eager's or eager's twin's,
    its block lengths, its mode timed alone."""
    samples = {"latency_ms": record["latency_ms"], "interleave": record["interleave"]}
    if "twin_latency_ms" in record:
        samples["twin_latency_ms"] = record["twin_latency_ms"]
    else:
        samples["eager_latency_ms"] = record["eager_latency_ms"]
        samples["steady_state"] = {"latency_ms": record["alone_latency_ms"]}
        if "eager_alone_latency_ms" in record:
            samples["eager_alone"] = {"latency_ms": record["eager_alone_latency_ms"]}
    return samples


def process_entry(record: ProcessRecord, seed: int) -> dict:
    """What a result keeps of one measuring process: its samples and block lengths, its medians, its ratios, its
    first call, its steady state, the machine's load while it measured, where and when it ran."""
    samples = _samples(record)
    own = interleaved_fields([samples], record["measure"], seed, eager="twin_latency_ms" in record)
    entry = {key: samples[key] for key in ("latency_ms", "eager_latency_ms") if key in samples}
    if "noise" in own:
        entry["twin_latency_ms"] = own["noise"]["twin_latency_ms"]
        entry["noise"] = {"ratio": own["noise"]["ratio"], "ci95": own["noise"]["ci95"]}
    else:
        entry["speedup"] = {"value": own["speedup"]["value"], "ci95": own["speedup"]["ci95"]}
        entry["steady_state"] = own["steady_state"]
        if "eager_alone" in own:
            entry["eager_alone"] = own["eager_alone"]
    if record.get("page_faults"):
        entry["page_faults"] = _faults_per_call([record["page_faults"]], ("mode", "eager"))
    return {
        **entry,
        "interleave": record["interleave"],
        "median_ms": statistics.median(record["latency_ms"]),
        "first_call_s": record["preparation"]["first_call_s"],
        "compile_s": record["compile_s"],
        "correct": (record.get("correctness") or {}).get("passed"),
        "machine": record.get("machine"),
        "hostname": (record.get("environment") or {}).get("hostname"),
        "started_at": record["started_at"],
        "finished_at": record["finished_at"],
    }


# Each timed stretch's name in a result, and its key in a process record (an eager result's "eager" is its twin).
FAULT_STRETCHES = {"mode": "mode_blocks", "eager": "eager_blocks", "mode_alone": "mode_alone",
                   "eager_alone": "eager_alone"}  # fmt: skip


def _faults_per_call(raw: list[dict], names) -> dict:
    """`{name}_per_call` of each named stretch, over the process records' raw page-fault counts."""
    return {
        f"{name}_per_call": stats.per_call([pair for faults in raw for pair in faults.get(FAULT_STRETCHES[name], [])])
        for name in names
    }


def page_faults(records: list[ProcessRecord], seed: int) -> dict | None:
    """The page faults each timed stretch took per call, over all processes; what a thousand of them a call cost the
    mode, from its blocks (the slope of a block's latency on its faults per call, where the blocks differ in them);
    `flagged` where the mode's interleaved calls took `FAULTS_PER_CALL` or more each. None for records without."""
    raw = [record.get("page_faults") for record in records]
    if not raw or None in raw:
        return None
    fields = _faults_per_call(raw, FAULT_STRETCHES)
    flagged = fields["mode_per_call"] >= FAULTS_PER_CALL
    return {
        **fields,
        "ms_per_1000": _fault_cost(records, raw, seed) if flagged else None,
        "flagged": flagged,
        "rule": f"the mode's interleaved calls took {FAULTS_PER_CALL} page faults or more each",
    }


def _fault_cost(records: list[ProcessRecord], raw: list[dict], seed: int) -> dict:
    """The slope of the mode's block latencies on their page faults per call (in thousands), over every block."""
    xs, samples = [], []
    for record, faults in zip(records, raw):
        block = record["interleave"]["mode_block"]
        for k, (count, calls) in enumerate(faults["mode_blocks"]):
            xs.append(count / calls / 1000)
            samples.append(record["latency_ms"][k * block : (k + 1) * block])
    cost = stats.slope(xs, samples, resamples=records[0]["measure"]["bootstrap_resamples"], seed=seed)
    return {key: cost[key] for key in ("slope", "ci95", "method")}


def interleaved_fields(processes: list[dict], measure: dict, seed: int, *, eager: bool) -> dict:
    """What a result states of its processes' interleaved samples: an eager result's noise floor (eager against its
    twin), or a mode's speedup over eager and its steady state; pooled samples beside them, each ratio over all the
    processes (two-level where there are several)."""
    pooled = {"processes": processes, "measure": measure}
    resamples = measure["bootstrap_resamples"]
    if eager:
        twin = [x for p in processes for x in p["twin_latency_ms"]]
        fields = stats.noise_floor(pooled, seed=seed).record()
        return {"noise": {"ratio": fields.pop("value"), **fields, "n": len(twin), "twin_latency_ms": twin}}
    eager_ms = [x for p in processes for x in p["eager_latency_ms"]]
    alone = [p["steady_state"]["latency_ms"] for p in processes]
    steady = stats.steady_state([p["latency_ms"] for p in processes], alone, resamples=resamples, seed=seed)
    fields = {
        "eager_latency_ms": eager_ms,
        "speedup": {
            **stats.speedup(pooled, seed=seed).record(),
            "eager_median_ms": statistics.median(eager_ms),
            "mode_ms": stats.process_center_ms(stats.timed(pooled)),
            "eager_ms": stats.process_center_ms(stats.timed(pooled, "eager_latency_ms")),
            "n": sum(len(p["latency_ms"]) for p in processes),
        },
        "steady_state": {**steady, "latency_ms": [x for a in alone for x in a]},
    }
    if all("eager_alone" in p for p in processes):  # records measured before eager was timed alone have none
        eager_alone = [p["eager_alone"]["latency_ms"] for p in processes]
        beside = stats.timed(pooled, "eager_latency_ms")
        fields["eager_alone"] = {
            **stats.eager_alone(beside, eager_alone, resamples=resamples, seed=seed + 1),
            "latency_ms": [x for a in eager_alone for x in a],
        }
    return fields


def warm_start_fields(exp: Experiment, records: list[ProcessRecord]) -> dict:
    """The warm starts: with one process, the fresh processes its job started after it (from the caches it left,
    and from torch's cache artifacts alone); with several, the later processes' first calls, which read the caches
    the first wrote. An export mode's warm start is its package load and first call, in every process."""
    warm_from, first = kinds.of(exp.mode_settings).warm_start, records[0]
    starts = first.get("warm_starts")
    fields: dict = {}
    if starts is not None:
        fields["warm_starts"] = starts
        fields["compile_bundle_s"] = (starts["bundle"] or {}).get("first_call_s")
        if exp.measure.warm_start_by_job:
            fields["compile_warm_s"] = (starts["warm"] or {}).get("first_call_s")
    from_caches = warm_from == "caches"
    warm = warm_start_samples(records, warm_from) if not (from_caches and exp.measure.cold_processes) else []
    if exp.measure.processes > 1 and warm:
        fields["compile_warm_samples_s"] = warm
        fields["compile_warm_s"] = statistics.median(warm)
    if from_caches and len(records) > 1 and not exp.measure.cold_processes:
        earlier = starts or {}
        later = [(k, r) for k, r in enumerate(records[1:], 2) if "cache_replaced" not in r]
        shown = f"process {later[0][0]}" if later else "none"
        fields["warm_starts"] = {
            "warm": {
                "first_call_s": later[0][1]["preparation"]["first_call_s"],
                "compile_phases": later[0][1].get("compile_phases"),
                "settings_effect": later[0][1].get("settings_effect"),
                "cache_hits": None,
            }
            if later
            else None,
            "bundle": earlier.get("bundle"),
            "notes": [
                *earlier.get("notes", []),
                f"the warm start shown is {shown} of {len(records)}; compile_warm_s is the median of all "
                f"{len(warm)} later processes' first calls that started warm",
            ],
        }
    return fields


def warm_start_samples(records: list[ProcessRecord], warm_from: str | None) -> list[float]:
    """The warm starts among an experiment's processes (`Kind.warm_start`): from caches, the later processes' first
    calls, which read the caches the first wrote; from a package, its load and first call, in every process."""
    if warm_from == "caches":
        return [record["preparation"]["first_call_s"] for record in records[1:] if "cache_replaced" not in record]
    if warm_from == "package":
        return [record["compile_warm_s"] for record in records if record.get("compile_warm_s") is not None]
    return []


def summarize_tokens(generations: dict, batch_size: int) -> dict:
    """Time to first token and decode rate, medians over the timed generations (`token_ms`: each generation's
    milliseconds per token, the prefill's first)."""
    token_ms, new_tokens = generations["token_ms"], generations["new_tokens"]
    median = statistics.median
    decode_ms = median(sum(ms[1:]) for ms in token_ms)
    return {
        "new_tokens": new_tokens,
        "ttft_ms": median(ms[0] for ms in token_ms),
        "decode_tokens_per_s": batch_size * (new_tokens - 1) / (decode_ms / 1e3) if decode_ms > 0 else None,
        "tokens_per_s": batch_size * new_tokens / (median(sum(ms) for ms in token_ms) / 1e3),
        "per_token_ms": [median(ms) for ms in zip(*token_ms)],
    }


def _stream_result(exp: Experiment, record: ProcessRecord) -> Result:
    """A shape stream's result: each distinct value's speedup once compiled (eager's median over the mode's, with
    a bootstrap interval over the calls at that value), and the stream's calls as served, compiles included."""
    result = _without_raw(record)
    measure, seed = record["measure"], exp.seed
    per_value = []
    for n, row in enumerate(record["stream"]["per_value"]):
        ratio = stats.unpaired(
            [stats.Timed(np.asarray(row["eager_ms"], dtype=float))],
            [stats.Timed(np.asarray(row["mode_ms"], dtype=float))],
            resamples=measure["bootstrap_resamples"],
            seed=seed + n,
        )
        fields = {k: v for k, v in row.items() if k not in ("eager_ms", "mode_ms")}
        per_value.append({**fields, "speedup": ratio.value, "ci95": ratio.ci95})
    result["stream"] = {**record["stream"], "per_value": per_value}
    result["latency_ms"] = [call["latency_ms"] for call in record["stream"]["calls"]]
    result["stats"] = stats.summarize(result["latency_ms"], resamples=measure["bootstrap_resamples"], seed=seed)
    result["processes"] = []  # one process, its calls a sequence of shapes rather than interleaved samples
    return result


def path_summaries(record: dict, result: dict | None = None, *, resamples: int = 2000, seed: int = 0) -> list[dict]:
    """Each path of a starts record (`starts.starts_job`): its fresh starts' median from process start to first
    output with a bootstrap 95% interval over them, each part's median, the artifact's bytes, whether every output
    was correct, the overhead over eager's start (with its interval) and, with the experiment's `result`, the calls
    after which starting this way and calling the mode has caught up with starting and calling eager."""
    rows = record["rows"]
    eager = _ok_totals(rows, "eager")
    timed = result and result.get("status") == "ok" and result.get("eager_latency_ms")
    saving = stats.saving_ms(result) if timed else None
    summary = []
    for path in record["paths"]:
        mine = [r for r in rows if r["path"] == path]
        ok = [r for r in mine if r["status"] == "ok"]
        entry = {
            **{k: record[k] for k in ("hardware", "model", "mode")},
            "path": path,
            "starts": len(mine),
            "n": len(ok),
            "status": "ok" if ok else (mine[0]["status"] if mine else "failed"),
            "reason": next((r["reason"] for r in mine if r.get("reason")), None),
            "artifact_build_s": (record.get("builds", {}).get(path) or {}).get("build_s"),
        }
        if ok:
            totals = [r["total_s"] for r in ok]
            entry["total_s"], (entry["total_ci95_low"], entry["total_ci95_high"]) = stats.median_interval(
                totals, resamples=resamples, seed=seed
            )
            for part in START_PARTS:
                entry[part] = statistics.median(r["parts"][part] for r in ok)
            for key in ("peak_bytes", "artifact_bytes"):
                sizes = [r[key] for r in ok if r.get(key) is not None]
                entry[key] = int(statistics.median(sizes)) if sizes else None
            checked = [r["correct"] for r in ok if r.get("correct") is not None]
            entry["correct"] = all(checked) if checked else None
            if eager and path != "eager":
                value, ci = stats.median_difference(totals, eager, resamples=resamples, seed=seed)
                entry.update(overhead_over_eager_s=value, overhead_ci95_low=ci[0], overhead_ci95_high=ci[1])
                if saving is not None:
                    calls, (low, high) = stats.break_even(value, *saving)
                    entry.update(break_even_calls=calls, break_even_calls_ci95_low=low, break_even_calls_ci95_high=high)
        summary.append(entry)
    return summary


def start_rows(record: dict) -> list[dict]:
    """A starts record's rows, each ok start beside eager's with its overhead over eager's median start."""
    eager = _ok_totals(record["rows"], "eager")
    floor = statistics.median(eager) if eager else None
    return [
        {**r, "overhead_over_eager_s": r["total_s"] - floor}
        if r["status"] == "ok" and floor is not None and r["path"] != "eager"
        else {**r, "overhead_over_eager_s": None}
        for r in record["rows"]
    ]


def _ok_totals(rows: list[dict], path: str) -> list[float]:
    return [r["total_s"] for r in rows if r["path"] == path and r["status"] == "ok"]
