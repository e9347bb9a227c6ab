"""compilebench's command line: `run` one experiment, `reference` its eager output, `env` a hardware record,
`check` a config file, `compare` two runs, `history` keep runs over time."""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections import Counter
from pathlib import Path

from .analysis import comparison_text, comparisons, run_folders, summaries
from .configuration import config as configuration
from .configuration import plan, schema
from .core import thresholds
from .core.experiment import Experiment
from .core.files import scratch_folder
from .core.joblog import log_to_stderr
from .core.records import Result
from .parent import jobs
from .report.tables import write_csv


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="compilebench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", type=Path, default=Path("config/config.yaml"), help="pipeline config (YAML)")
    common.add_argument("--hardware", default="cpu", help="hardware entry (default: cpu)")
    common.add_argument("--out", type=Path, required=True, help="output file")
    p = sub.add_parser("run", parents=[common], help="measure one model x mode x hardware, write one JSON result")
    p.add_argument("--model", required=True)
    p.add_argument("--mode", required=True)
    p.add_argument("--reference", type=Path, help="eager float32 reference from `compilebench reference`")
    p.add_argument("--env-record", type=Path, help="environment record from `compilebench env`")
    p.add_argument("--timeout-s", type=float, help="override measure.timeout_s for this run")
    p = sub.add_parser("reference", parents=[common], help="save the eager float32 output of one model")
    p.add_argument("--model", required=True)
    p = sub.add_parser("env", parents=[common], help="write the environment record of one hardware entry")
    p.add_argument("--check", action="store_true", help="also check the device and a tiny torch.compile")
    p = sub.add_parser("compare", help="set one run's results against another's: ratio, interval, verdict")
    p.add_argument("base", type=Path, help="the earlier run: a project folder, or its results/ folder")
    p.add_argument("new", type=Path, help="the run to judge, likewise")
    p.add_argument("--threshold", type=float, default=thresholds.DEFAULT_THRESHOLD, help="the ± band of `same`")
    p.add_argument(
        "--compile-threshold",
        type=float,
        default=thresholds.COMPILE_THRESHOLD,
        help="the ± band of `same` for cold and warm compile times",
    )
    p.add_argument("--fail-on-regression", action="store_true", help="exit 1 when anything regressed")
    p.add_argument(
        "--fail-on-unstable",
        action="store_true",
        help="exit 1 when either run measured an experiment unstably (a busy machine), so that CI reruns it",
    )
    p.add_argument("--out", type=Path, help="write the comparison as CSV")
    _history_parser(sub)
    _suite_parser(sub)
    p = sub.add_parser("check", help="validate a config or experiment file, as the workflow does before any job")
    p.add_argument("--config", type=Path, default=Path("config/config.yaml"), help="pipeline config (YAML)")
    p.add_argument(
        "--max-hours",
        type=_positive_hours,
        help="fail when the config plans a longer measurement (overrides max_hours); a positive number",
    )
    return parser


def _history_parser(sub) -> None:
    history = sub.add_parser("history", help="keep finished runs in one store; find changes; draw a dashboard")
    verbs = history.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("add", help="append a finished run to the store (made where missing)")
    p.add_argument("project", type=Path, help="the run: a project folder, or its results/ folder")
    p.add_argument("--store", type=Path, required=True, help="the history store (an SQLite file)")
    p.add_argument("--hardware", help="add this hardware entry's results alone, as a run of their own")
    p.add_argument("--as", dest="filed_as", metavar="NAME", help="with --hardware: file them under this hardware name")
    p.add_argument("--partial", action="store_true", help="file a run that has not finished (replaced when it has)")
    p = verbs.add_parser("regressions", help="the latest change of each series; exit 1 on a regression if asked")
    p.add_argument("--store", type=Path, required=True, help="the history store (an SQLite file)")
    p.add_argument("--since", help="only changes at or after this run (its id, or the start of it)")
    p.add_argument("--fail-on-regression", action="store_true", help="exit 1 when a latest change is a regression")
    p = verbs.add_parser("report", help="write the history's dashboard: a static site, no server needed")
    p.add_argument("--store", type=Path, required=True, help="the history store (an SQLite file)")
    p.add_argument("out", type=Path, help="the folder to write the site into")


def _suite_parser(sub) -> None:
    suite = sub.add_parser("suite", help="a run as a suite: write its expected statuses, or check a run against them")
    verbs = suite.add_subparsers(dest="verb", required=True)
    verb_help = {
        "expect": "write every model x mode's status of a finished run to FILE",
        "check": "exit 1 when any status of a finished run differs from FILE's, either way",
    }
    for verb, said in verb_help.items():
        p = verbs.add_parser(verb, help=said)
        p.add_argument("project", type=Path, help="the finished run's project folder")
        p.add_argument("file", type=Path, help="the expected statuses (CSV: hardware, model, mode, status)")


def suite(args: argparse.Namespace) -> int:
    from .analysis import expectations

    if args.verb == "expect":
        written = expectations.expect(args.project, args.file)
        print(f"wrote {written} expected statuses to {args.file}")
        return 0
    differences = expectations.check(args.project, args.file)
    for difference in differences:
        print(difference.said())
    update = ": update the file where the change is meant (compilebench suite expect)" if differences else ""
    print(f"{len(differences)} status{'es' if len(differences) != 1 else ''} differ from {args.file}{update}")
    return 1 if differences else 0


# A hardware or model name, as the workflow's wildcards take it.
NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"


def history(args: argparse.Namespace) -> int:
    from .history import changes, dashboard, store

    if args.verb == "add":
        for flag, value in (("--hardware", args.hardware), ("--as", args.filed_as)):
            if value is not None and not re.fullmatch(NAME, value):
                raise configuration.UserError(
                    f"{flag} {value!r} is not a hardware name: expected letters, digits, '_', '.' and '-', starting "
                    "with a letter or digit, as config hardware entries are named."
                )
        if args.filed_as and not args.hardware:
            raise configuration.UserError(
                f"--as {args.filed_as!r} needs --hardware: it files one hardware entry's results under another name."
            )
        print(store.add(args.project, args.store, args.hardware, args.filed_as, args.partial).said(args.store))
        return 0
    with store.opened(args.store) as connection:
        series = changes.read_series(connection)
        runs = [row[0] for row in connection.execute("SELECT run_id FROM runs ORDER BY finished_at, run_id")]
        lost = changes.lost_results(connection, runs)
    found = changes.all_changes(series)
    if args.verb == "report":
        written = dashboard.write_site(series, found, len(runs), args.out)
        print(f"wrote {len(written)} pages to {args.out} ({len(series)} series over {len(runs)} runs)")
        return 0
    if args.since is not None and not re.fullmatch(r"[0-9a-f]{4,64}", args.since):
        raise configuration.UserError(
            f"--since {args.since!r} is not a run id: expected at least its first 4 hex digits, one of "
            f"{', '.join(run[:12] for run in runs)}."
        )
    try:
        latest = changes.latest_changes(found, args.since, runs)
    except ValueError:
        raise configuration.UserError(
            f"--since {args.since!r} names no run of {args.store}, or several: expected a run id (or enough of its "
            "start to name one), one of "
            f"{', '.join(run[:12] for run in runs)}."
        ) from None
    for (hardware, model, mode, metric), change in sorted(latest.items()):
        flag = "  REGRESSION" if change.regression else ""
        if change.two_speeds:
            speeds = ", ".join(str(k + 1) for k in change.two_speeds)
            flag = f" (processes at two speeds in run {speeds}: {metric}:best_process gives the verdict)"
        print(
            f"{hardware}/{model}/{mode} {metric}: {change.before:.4g} → {change.after:.4g}, {change.ratio:.3f}× "
            f"(95% CI {change.ci95[0]:.3f}–{change.ci95[1]:.3f}): {change.verdict}{flag}, at run "
            f"{runs.index(change.run_id) + 1} of {len(runs)} ({change.run_id[:12]}, {change.finished_at}"
            f"{', torch ' + change.torch if change.torch else ''})"
        )
    for gone in lost:
        why = f": {' '.join(str(gone.error).split())[:200]}" if gone.error else ""
        print(f"{gone.hardware}/{gone.model}/{gone.mode}: ok → {gone.status} in the newest run{why}  REGRESSION")
    regressed = sum(change.regression for change in latest.values()) + len(lost)
    print(f"{len(series)} series over {len(runs)} runs: {len(latest)} with a change, {len(lost)} lost in the newest "
          f"run, {regressed} regressed ({changes.METHOD})")  # fmt: skip
    return 1 if args.fail_on_regression and regressed else 0


def _positive_hours(text: str) -> float:
    """`--max-hours`: a finite number of hours above zero, or argparse's error naming the option."""
    try:
        hours = float(text)
    except ValueError:
        hours = math.nan
    if not (math.isfinite(hours) and hours > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of hours, got {text!r}")
    return hours


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    log_to_stderr()
    try:
        if args.command == "compare":
            return compare(args)
        if args.command == "history":
            return history(args)
        if args.command == "suite":
            return suite(args)
        config = configuration.load(args.config)
        if args.command == "check":
            per_entry = sum(len(schema.model_modes(config, m)) for m in config["models"])
            planned = configuration.planned(config)
            print(
                f"{args.config} is valid: {len(config['models'])} models, {per_entry} experiments on each of "
                f"{len(config['hardware'])} hardware entries\n{planned.describe()}"
            )
            if args.max_hours is not None:
                plan.check_max_hours(planned, args.max_hours, "--max-hours")
            else:
                plan.check_max_hours(planned, config["max_hours"])
        elif args.command == "env":
            entry = configuration.hardware_entry(config, args.hardware)
            error = jobs.environment_job(args.hardware, entry, args.out, check=args.check)["error"]
            return _report_failure(error)
        elif args.command == "reference":
            exp = configuration.reference_experiment(config, args.model, args.hardware)
            return _report_failure(jobs.reference_job(exp, args.out))
        else:
            exp = configuration.experiment(config, args.model, args.mode, args.hardware)
            if args.timeout_s:
                exp = exp.replace(measure=exp.measure.replace(timeout_s=args.timeout_s))
            result = benchmark_job(exp, args.out, args.reference, args.env_record)
            error = f": {result['error']['message']}" if result["error"] else ""
            print(f"{args.hardware}/{args.model}/{args.mode}: {result['status']}{error}")
    except configuration.UserError as exc:
        print(f"compilebench: {exc}", file=sys.stderr)
        return 2
    return 0


def benchmark_job(
    exp: Experiment, out: str | Path, reference: str | Path | None = None, env_record: str | Path | None = None
) -> Result:
    """Measure one experiment in its `measure.processes` processes, one after another, and write its result: the
    command line's way. The workflow runs each process as a job of its own (`jobs.process_job`), so that the rounds
    of all experiments interleave, and makes the result from their records afterwards (`summaries.result_job`)."""
    with scratch_folder("compilebench-processes-") as folder:
        paths = [Path(folder) / f"{k}.json" for k in range(1, exp.measure.processes + 1)]
        caches = Path(folder) / "caches"
        for k, path in enumerate(paths, 1):
            jobs.process_job(exp, path, k, caches, reference=reference, env_record=env_record, first=paths[0])
        return summaries.result_job(exp, paths, out)


def compare(args: argparse.Namespace) -> int:
    """Print the verdict of every experiment both runs hold; 1 under --fail-on-regression when any regressed."""
    for flag, value in (("--threshold", args.threshold), ("--compile-threshold", args.compile_threshold)):
        if not 0 < value < 1:
            raise configuration.UserError(f"{flag} is {value}: expected a fraction between 0 and 1, such as 0.05.")
    if args.out and (Path(args.out).is_dir() or not Path(args.out).resolve().parent.is_dir()):
        raise configuration.UserError(
            f"--out {args.out}: expected a CSV file to write in an existing folder, not "
            f"{'a folder' if Path(args.out).is_dir() else 'a path whose folder does not exist'}."
        )
    base, new = run_folders.run_results(args.base), run_folders.run_results(args.new)
    if not set(base) & set(new):
        raise configuration.UserError(
            f"{args.base} and {args.new} share no experiment (hardware/model/mode): expected two runs of one "
            f"config, or of configs with experiments in common. BASE holds {_holds(base)}; NEW holds {_holds(new)}."
        )
    table = comparisons.between_runs(
        base, new, args.threshold, lost_is_regression=True, compile_threshold=args.compile_threshold
    )
    only_base, only_new = sorted(set(base) - set(new)), sorted(set(new) - set(base))
    print(comparison_text.describe(table, only_base, only_new, comparison_text.environments_said(base, new)))
    if args.out:
        write_csv(table, args.out)
    experiments = table[table["scope"] == "experiment"]
    if args.fail_on_unstable and (experiments["unstable"] == True).any():  # noqa: E712
        return 1
    return 1 if args.fail_on_regression and comparisons.regressions(table).any() else 0


def _holds(run: dict) -> str:
    """A run's experiments, counted per hardware entry."""
    counts = Counter(hardware for hardware, _, _ in run)
    return ", ".join(f"{n} on hardware `{hardware}`" for hardware, n in counts.items())


def _report_failure(error: dict | None) -> int:
    """A failed step wrote its record; say why, and exit non-zero."""
    if error:
        print(f"compilebench: {error['message']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
