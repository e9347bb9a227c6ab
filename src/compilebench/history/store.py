"""A history of finished runs in one SQLite file a user can query with standard tools: each run's identity, every
result's summary and per-process values (so intervals can be recomputed), starts and compile times.

Appending the same run twice adds nothing (a run is its results: their experiments and when each was measured);
two appends at once wait for each other (SQLite's write lock, taken before anything is read); a store written by
a newer compilebench is refused with both versions named.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..analysis.run_folders import run_results
from ..analysis.stats import population_geomean
from ..core.errors import UserError
from ..core.files import read_environment_record
from ..core.thresholds import SUITE_MIN_MODELS

SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 120  # how long an append waits for another one to finish

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,      -- sha256 of the run's experiments and when each was measured
    finished_at TEXT NOT NULL,    -- when the run's last result was measured (ISO 8601)
    added_at TEXT NOT NULL,
    project TEXT NOT NULL,        -- the folder it was added from
    code_commit TEXT,
    code_dirty INTEGER,
    config_sha256 TEXT NOT NULL,  -- sha256 of the run's experiment fingerprints
    torch TEXT,                   -- the torch versions of its hardware entries, joined by ', '
    environments TEXT NOT NULL    -- JSON: each hardware entry's environment record
);
CREATE TABLE IF NOT EXISTS results (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    hardware TEXT NOT NULL, model TEXT NOT NULL, mode TEXT NOT NULL,
    status TEXT NOT NULL,
    experiment_sha256 TEXT NOT NULL,
    torch TEXT,
    error TEXT,
    PRIMARY KEY (run_id, hardware, model, mode)
);
CREATE TABLE IF NOT EXISTS measurements (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    hardware TEXT NOT NULL, model TEXT NOT NULL, mode TEXT NOT NULL,
    metric TEXT NOT NULL,         -- latency_ms, speedup, compile_s, compile_warm_s, peak_bytes, start_s:PATH
    value REAL NOT NULL,
    ci_low REAL, ci_high REAL,
    PRIMARY KEY (run_id, hardware, model, mode, metric)
);
CREATE TABLE IF NOT EXISTS process_values (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    hardware TEXT NOT NULL, model TEXT NOT NULL, mode TEXT NOT NULL,
    metric TEXT NOT NULL,
    replicate INTEGER NOT NULL,   -- a measuring process, or a fresh start
    value REAL NOT NULL,
    PRIMARY KEY (run_id, hardware, model, mode, metric, replicate)
);
"""

# Each metric: which way is worse, and the share of change beyond which a change is a regression (as PyTorch's
# compiler dashboard judges speedups and compile times).
METRICS = {
    "latency_ms": ("higher", 0.05),
    "speedup": ("lower", 0.05),
    "compile_s": ("higher", 0.15),
    "compile_warm_s": ("higher", 0.15),
    "start_s": ("higher", 0.15),
    "peak_bytes": ("higher", 0.15),
    "suite_geomean": ("lower", 0.05),  # a suite's geometric-mean speedup over its passing models
    "suite_pass_rate": ("lower", 0.01),  # the share of its models that passed
}
SUITE = "(suite)"  # the model name a suite's own series are kept under: no model's name has parentheses


def metric_kind(metric: str) -> str:
    """`start_s:cold` is a start_s metric."""
    return metric.split(":", 1)[0]


@contextmanager
def opened(path: str | Path, *, create: bool = False) -> Iterator[sqlite3.Connection]:
    """The store at `path`, its schema checked (and made, where `create` and the file is new or empty)."""
    path = Path(path)
    if not create and not path.is_file():
        raise UserError(f"The history store {path} does not exist: expected a file made by `compilebench history add`.")
    try:
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise UserError(f"The history store {path} cannot be read as SQLite ({exc}): expected a store made by "
                        "`compilebench history add`.") from None  # fmt: skip
    try:
        if version > SCHEMA_VERSION:
            raise UserError(
                f"The history store {path} has schema version {version}, written by a newer compilebench; this one "
                f"reads version {SCHEMA_VERSION}: upgrade compilebench, or start a new store."
            )
        if not tables:
            if not create:
                raise UserError(
                    f"The history store {path} is empty: expected runs added by `compilebench history add`."
                )
            _create(connection)
        elif version < 1 or "runs" not in tables:
            raise UserError(f"The history store {path} is an SQLite file of something else: expected a compilebench "
                            "history store (its own tables, schema version 1).")  # fmt: skip
        yield connection
    finally:
        connection.close()


def _create(connection: sqlite3.Connection) -> None:
    """The tables, in one transaction under the write lock: a second store made at once finds them there."""
    connection.executescript(f"BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;")


@dataclass(frozen=True)
class Added:
    run_id: str
    new: bool
    results: int
    finished_at: str
    replaced: str | None = None  # the run of the same project it held, every result of which this one holds

    def said(self, store: str | Path) -> str:
        if not self.new:
            return f"{store} already holds this run ({self.run_id[:12]}, finished {self.finished_at}): nothing added"
        instead = f", in place of run {self.replaced[:12]} whose results it holds" if self.replaced else ""
        return f"added run {self.run_id[:12]} (finished {self.finished_at}, {self.results} results{instead}) to {store}"


def add(
    project: str | Path,
    store: str | Path,
    hardware: str | None = None,
    filed_as: str | None = None,
    partial: bool = False,
) -> Added:
    """Append the finished run in `project` (a project folder or its results/) to the store, made where missing.
    With `hardware`, that entry's results alone, as a run of their own; with `filed_as` too, under that hardware
    name, so that entries one run measured side by side (torch versions, say) become points of one series. An
    unfinished run is refused unless `partial`; a run of the same project the store holds, every result of which
    this one holds unchanged (the same run, added before it finished), is replaced, not repeated."""
    results = run_results(project)  # refuses a run whose results fail to read, naming the file
    folder = Path(project)
    folder = folder if (folder / "runs").is_dir() else folder / "results"
    why = None if partial else unfinished(folder, results)
    environments = {path.stem: read_environment_record(path) for path in sorted((folder / "env").glob("*.json"))}
    if hardware is not None:
        results, environments = _one_entry(results, environments, hardware, filed_as or hardware, folder)
    for key, result in results.items():
        _refuse_bad_values(key, result, project, store)
    if why:
        raise UserError(
            f"`history add {project}`: the run looks unfinished ({why}), and its points would stand in every series "
            f"as a run of their own. Finish it (`snakemake` in the project makes its tables), or pass --partial to "
            f"file what it holds: adding the finished run later replaces it."
        )
    run = _run_row(results, environments, Path(project).resolve())
    with opened(store, create=True) as connection:
        connection.execute("BEGIN IMMEDIATE")  # the write lock first: a second append waits, then finds the run
        try:
            if connection.execute("SELECT 1 FROM runs WHERE run_id = ?", (run["run_id"],)).fetchone():
                connection.execute("ROLLBACK")
                return Added(run["run_id"], False, len(results), run["finished_at"])
            replaced = _earlier_part(connection, run["project"], results)
            if replaced:
                for table in ("process_values", "measurements", "results", "runs"):
                    connection.execute(f"DELETE FROM {table} WHERE run_id = ?", (replaced,))
            connection.execute(f"INSERT INTO runs ({', '.join(run)}) VALUES ({', '.join('?' * len(run))})",
                               tuple(run.values()))  # fmt: skip
            for key, result in sorted(results.items()):
                _insert_result(connection, run["run_id"], key, result, environments)
            for hardware, mode, metric, value in suite_values(results):
                connection.execute("INSERT INTO measurements VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                   (run["run_id"], hardware, SUITE, mode, metric, *value))  # fmt: skip
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    return Added(run["run_id"], True, len(results), run["finished_at"], replaced)


def unfinished(folder: Path, results: dict) -> str | None:
    """Why the run in results folder `folder` is not finished, or None: a finished run's runs table lists exactly
    its results and was made after the newest of them."""
    table = folder / "tables" / "runs.csv"
    if not table.is_file():
        return f"{table} does not exist: its tables were never made"
    import pandas as pd

    listed = {tuple(row) for row in pd.read_csv(table, usecols=["hardware", "model", "mode"]).astype(str).values}
    if extra := sorted(set(results) - listed):
        return f"{table} does not list {_named(extra)}: results of an earlier config, or of a run not finished"
    if missing := sorted(listed - set(results)):
        return f"{table} lists {_named(missing)} with no result in {folder / 'runs'}"
    paths = [folder / "runs" / h / m / f"{mode}.json" for h, m, mode in results]
    newest = max((p for p in paths if p.is_file()), key=lambda path: path.stat().st_mtime, default=None)
    if newest is not None and newest.stat().st_mtime > table.stat().st_mtime:
        return f"{newest} is newer than {table}: a run still going, or stopped before its tables"
    return None


def _named(keys: list[tuple]) -> str:
    return ", ".join("/".join(key) for key in keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")


def _earlier_part(connection, project: str, results: dict) -> str | None:
    """The run of `project` the store holds whose every result this run holds unchanged (the same experiment,
    status and median): the same run, added before it finished. None where there is none."""
    for (run_id,) in connection.execute("SELECT run_id FROM runs WHERE project = ?", (project,)).fetchall():
        held = connection.execute(
            "SELECT r.hardware, r.model, r.mode, r.status, r.experiment_sha256, m.value FROM results r LEFT JOIN "
            "measurements m ON m.run_id = r.run_id AND m.hardware = r.hardware AND m.model = r.model AND "
            "m.mode = r.mode AND m.metric = 'latency_ms' WHERE r.run_id = ?",
            (run_id,),
        ).fetchall()
        if held and all(
            _unchanged(results.get((h, m, mode)), status, sha, value) for h, m, mode, status, sha, value in held
        ):
            return run_id
    return None


def _unchanged(result: dict | None, status: str, experiment_sha256: str, median_ms: float | None) -> bool:
    if result is None or result["status"] != status or result["experiment_sha256"] != experiment_sha256:
        return False
    return ((result.get("stats") or {}).get("median_ms") if status == "ok" else None) == median_ms  # as stored


def _one_entry(results: dict, environments: dict, hardware: str, name: str, folder: Path) -> tuple[dict, dict]:
    """The results and environment record of hardware entry `hardware` alone, filed under `name`."""
    entries = sorted({h for h, _, _ in results})
    if hardware not in entries:
        raise UserError(
            f"--hardware {hardware!r}: the run in {folder} has no results of that hardware entry; expected one of "
            f"{', '.join(entries)}."
        )
    mine = {(name, m, mode): {**r, "hardware": name} for (h, m, mode), r in results.items() if h == hardware}
    return mine, ({name: environments[hardware]} if hardware in environments else {})


def _run_row(results: dict, environments: dict, project: Path) -> dict:
    identity = sorted(
        (f"{h}/{m}/{mode}", r["experiment_sha256"], r.get("finished_at") or r.get("started_at") or "")
        for (h, m, mode), r in results.items()
    )
    finished = max((r.get("finished_at") or r.get("started_at") or "" for r in results.values()), default="")
    code = next((e.get("code") for e in environments.values() if e.get("code")), None) or {}
    torch_versions = sorted({e.get("torch") for e in environments.values() if e.get("torch")})
    return {
        "run_id": hashlib.sha256(json.dumps(identity).encode()).hexdigest(),
        "finished_at": finished,
        "added_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "project": str(project),
        "code_commit": code.get("commit"),
        "code_dirty": None if code.get("dirty") is None else int(bool(code["dirty"])),
        "config_sha256": hashlib.sha256(json.dumps(sorted(x[1] for x in identity)).encode()).hexdigest(),
        "torch": ", ".join(torch_versions) or None,
        "environments": json.dumps(environments, sort_keys=True, default=str),
    }


def _insert_result(connection, run_id: str, key: tuple, result: dict, environments: dict) -> None:
    hardware, model, mode = key
    error = (result.get("error") or {}).get("message")
    torch = (result.get("environment") or {}).get("torch") or (environments.get(hardware) or {}).get("torch")
    connection.execute(
        "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (run_id, hardware, model, mode, result["status"], result["experiment_sha256"], torch, error),
    )
    if result["status"] != "ok":
        return
    for metric, (value, low, high), replicates in measured_values(result):
        connection.execute("INSERT INTO measurements VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (run_id, hardware, model, mode, metric, value, low, high))  # fmt: skip
        connection.executemany(
            "INSERT INTO process_values VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(run_id, hardware, model, mode, metric, k, v) for k, v in enumerate(replicates, 1)],
        )


# Metrics a result may give as zero (a compile that read everything from a cache); every other is above zero.
MAY_BE_ZERO = ("compile_s", "compile_warm_s")


def _refuse_bad_values(key: tuple, result: dict, project, store) -> None:
    """Refuse, before anything is written, an ok result whose figures are not finite numbers above zero (zero
    allowed for compile times), naming the experiment and the figure: one such value would break every later
    report of the store."""
    where = f"The result {'/'.join(key)} in {project}"
    if result["status"] != "ok":
        return
    try:
        values = measured_values(result)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UserError(f"{where} lacks a figure history keeps ({type(exc).__name__}: {exc}); nothing was added "
                        f"to {store}.") from None  # fmt: skip
    for metric, (value, low, high), replicates in values:
        for name, number in (("value", value), ("interval low", low), ("interval high", high),
                             *((f"process {k}", v) for k, v in enumerate(replicates, 1))):  # fmt: skip
            if number is None and name.startswith("interval"):
                continue
            plain = isinstance(number, (int, float)) and not isinstance(number, bool) and math.isfinite(number)
            if not plain or number < 0 or (number == 0 and metric not in MAY_BE_ZERO):
                raise UserError(
                    f"{where} gives {metric} {name} {number!r}: expected a finite number above zero. Nothing was "
                    f"added to {store}; measure the experiment again, or remove the edited result."
                )


def suite_values(results: dict) -> list[tuple[str, str, str, tuple]]:
    """A suite's own figures (a run of SUITE_MIN_MODELS models or more), per hardware × compiling mode, from its
    inference results, each as (hardware, mode, metric, (value, ci_low, ci_high)): the pass rate (a model passes
    when it ran and passed the accuracy rule) and the geometric-mean speedup over the passing models with its
    interval (`stats.population_geomean`). No per-process values: a change in either is confirmed over runs. A mode
    no model passed has neither (the gate's lost results name each model)."""
    inference = {key: r for key, r in results.items() if not (r.get("spec") or {}).get("train_of")}
    if len({model for _, model, _ in inference}) < SUITE_MIN_MODELS:
        return []
    out = []
    for hardware, mode in sorted({(h, mode) for h, _, mode in inference if mode != "eager"}):
        rows = [r for (h, _, m), r in inference.items() if (h, m) == (hardware, mode)]
        passed = [r for r in rows if _passed(r)]
        if passed:
            speedups = [r["speedup"]["value"] for r in passed]
            lows, highs = ([(r["speedup"].get("ci95") or (None, None))[i] for r in passed] for i in (0, 1))
            out.append((hardware, mode, "suite_pass_rate", (len(passed) / len(rows), None, None)))
            out.append((hardware, mode, "suite_geomean", population_geomean(speedups, lows, highs)))
    return out


def _passed(result: dict) -> bool:
    return (
        result["status"] == "ok"
        and (result.get("correctness") or {}).get("passed") is True
        and bool((result.get("speedup") or {}).get("value"))
    )


def measured_values(result: dict) -> list[tuple[str, tuple, list[float]]]:
    """Each metric an ok result gives: (metric, (value, ci_low, ci_high), one value per process or start)."""
    processes = result.get("processes") or []
    stats = result.get("stats") or {}
    low, high = stats.get("ci95_ms") or (None, None)
    out = [("latency_ms", (stats["median_ms"], low, high), [p["median_ms"] for p in processes if "median_ms" in p])]
    speedup = result.get("speedup") if result["mode"] != "eager" else None
    if speedup and speedup.get("value") is not None:
        per = [p["speedup"]["value"] for p in processes if (p.get("speedup") or {}).get("value") is not None]
        out.append(("speedup", (speedup["value"], *speedup["ci95"]), per))
    if result["mode"] != "eager" and result.get("compile_s") is not None:
        cold = result.get("compile_cold_samples_s") or [result["compile_s"]]
        out.append(("compile_s", (result["compile_s"], None, None), cold))
    if result.get("compile_warm_s") is not None:
        warm = result.get("compile_warm_samples_s") or [result["compile_warm_s"]]
        out.append(("compile_warm_s", (result["compile_warm_s"], None, None), warm))
    peak = (result.get("memory") or {}).get("peak_bytes")
    if peak:
        out.append(("peak_bytes", (float(peak), None, None), [float(peak)]))
    by_path: dict[str, list[float]] = {}
    for row in result.get("start_rows") or []:
        if row.get("status") == "ok" and row.get("total_s") is not None:
            by_path.setdefault(row["path"], []).append(row["total_s"])
    for path, totals in by_path.items():
        out.append((f"start_s:{path}", (statistics.median(totals), None, None), totals))
    return out
