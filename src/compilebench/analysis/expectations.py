"""Expected statuses of a suite, gated both ways: each model × mode's status (pass, fail_accuracy, fail_to_run,
timeout, unchecked) written from a finished run, and a later run checked against the file, where any change, a
regression or an improvement, fails until the file is updated."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..core.errors import UserError
from ..core.files import atomic_write
from ..core.layout import TABLES_DIR

STATUS_OF_CAUSE = {None: "pass", "accuracy": "fail_accuracy", "build": "fail_to_run", "compile": "fail_to_run",
                   "timeout": "timeout", "unchecked": "unchecked"}  # fmt: skip
STATUSES = tuple(dict.fromkeys(STATUS_OF_CAUSE.values()))
COLUMNS = ("hardware", "model", "mode", "status")


def statuses(project: str | Path) -> dict[tuple[str, str, str], str]:
    """Each model × mode's status in the finished run of `project` (its `suite_models.csv`)."""
    path = Path(project) / TABLES_DIR / "suite_models.csv"
    if not path.is_file():
        raise UserError(
            f"{path} does not exist: expected a finished run (`snakemake --cores 4` writes its suite_models.csv) "
            f"in the project folder {project}."
        )
    models = pd.read_csv(path)
    return {
        (row["hardware"], row["model"], row["mode"]): STATUS_OF_CAUSE[None if pd.isna(row["cause"]) else row["cause"]]
        for row in models.to_dict("records")
    }


def expect(project: str | Path, out: str | Path) -> int:
    """Write every status of `project`'s run to `out` (CSV, sorted); the number written."""
    found = statuses(project)

    lines = [",".join(COLUMNS), *(",".join([*key, status]) for key, status in sorted(found.items()))]
    atomic_write(out, lambda handle: handle.write(("\n".join(lines) + "\n").encode()))
    return len(found)


@dataclass(frozen=True)
class Difference:
    hardware: str
    model: str
    mode: str
    expected: str | None  # None: not in the file
    found: str | None  # None: not in the run

    def said(self) -> str:
        kind = "improvement" if self.found == "pass" else "regression" if self.expected == "pass" else "change"
        return (f"{self.hardware}/{self.model}/{self.mode}: expected {self.expected or 'nothing (not in the file)'}, "
                f"found {self.found or 'nothing (not in the run)'} ({kind})")  # fmt: skip


def read_expected(path: str | Path) -> dict[tuple[str, str, str], str]:
    """The statuses a file written by `expect` holds, refused in one paragraph where it is not one."""
    try:
        rows = list(csv.DictReader(Path(path).read_text(encoding="utf-8").splitlines()))
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path} cannot be read ({type(exc).__name__}: {exc}): expected the CSV `compilebench suite "
                        "expect` writes.") from None  # fmt: skip
    expected = {}
    for number, row in enumerate(rows, 2):
        if set(row) != set(COLUMNS) or row["status"] not in STATUSES:
            raise UserError(
                f"{path} line {number} is not an expected status: expected the columns {', '.join(COLUMNS)} and a "
                f"status among {', '.join(STATUSES)}; found {dict(row)}."
            )
        expected[(row["hardware"], row["model"], row["mode"])] = row["status"]
    return expected


def check(project: str | Path, path: str | Path) -> list[Difference]:
    """Every model × mode whose status in `project`'s run differs from `path`'s, either way."""
    found, expected = statuses(project), read_expected(path)
    return [
        Difference(*key, expected.get(key), found.get(key))
        for key in sorted(set(found) | set(expected))
        if found.get(key) != expected.get(key)
    ]
