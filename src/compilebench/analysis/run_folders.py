"""A finished run read from its folder: every result by experiment, with its starts beside it."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import UserError
from ..core.files import read_result, read_starts_record, run_result_paths


def run_results(folder: str | Path) -> dict[tuple[str, str, str], dict]:
    """The results of one run, by (hardware, model, mode): `folder` is a project folder or its `results/`."""
    paths = run_result_paths(folder)
    if not paths:
        raise UserError(
            f"{folder} holds no results: expected a project folder with results/runs/HARDWARE/MODEL/MODE.json "
            "files, or its results/ folder."
        )
    return by_experiment(_with_start_rows(read_result(path), path) for path in paths)


IDENTITY = ("hardware", "model", "mode", "experiment_sha256")


def _with_start_rows(result: dict, path: Path) -> dict:
    """The result with its experiment's starts (results/starts/…, beside results/runs/…) under `start_rows`, where
    its run timed them, read as the starts tables read them: `compare` gates cold and warm starts on them."""
    hardware, model, mode = path.parts[-3], path.parts[-2], path.stem
    starts = path.parents[3] / "starts" / hardware / model / f"{mode}.json"
    if not starts.is_file():
        return result
    record = read_starts_record(starts, {key: result[key] for key in IDENTITY})
    return {**result, "start_rows": record["rows"]}


def by_experiment(results) -> dict[tuple[str, str, str], dict]:
    return {(r["hardware"], r["model"], r["mode"]): r for r in results}
