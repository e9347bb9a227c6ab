"""The GPU check: a compact ROCm study on one GPU, engine and paper, without Snakemake or a network.

Runs each job as the workflow would (an environment record, one eager reference per model,
one benchmark process per model x mode under a timeout), then the tables, figures and
paper, and prints the measured table with the decode bandwidth as a fraction of the
device's peak. Jobs run in a fixed order within a wall-clock budget; a job the budget
cannot fit becomes a `timeout` result, as in the workflow.

    python benchmarks/gpu/gpu_check.py [--config benchmarks/gpu/gpu-check.yaml] [--out gpu-check] [--budget-s 420]
        [--modes compile-max-autotune]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from compilebench.configuration import config as configuration  # noqa: E402
from compilebench.configuration import schema  # noqa: E402
from compilebench.core import layout  # noqa: E402
from compilebench.report.standalone import write_paper, write_tables  # noqa: E402

PAPER_RESERVE_S = 45


def _cli(*args: str, log: Path) -> int:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as handle:
        return subprocess.run(
            [sys.executable, "-m", "compilebench.cli", *args], env=env, stdout=handle, stderr=subprocess.STDOUT
        ).returncode


def _job_order(config: dict) -> list[tuple[str, str]]:
    """Every model's quick modes first, max-autotune (the slowest to compile) last."""
    jobs = [(m, mode) for m in config["models"] for mode in schema.model_modes(config, m)]
    return sorted(jobs, key=lambda job: job[1] == "compile-max-autotune")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "benchmarks" / "gpu" / "gpu-check.yaml")
    parser.add_argument("--out", type=Path, default=Path("gpu-check"))
    parser.add_argument("--budget-s", type=float, default=420.0, help="wall-clock seconds for all benchmark jobs")
    parser.add_argument(
        "--modes", help="comma-separated modes to run, built-in or under mode_definitions (default: the config's)"
    )
    args = parser.parse_args()
    config_path = args.config.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.modes:  # these modes for every model, defined ones included
        raw = yaml.safe_load(config_path.read_text())
        raw["modes"] = args.modes.split(",")
        for entry in raw["models"].values():
            entry.pop("modes", None)
        config_path = (args.out / "config.yaml").resolve()
        config_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    config = configuration.load(config_path)
    os.chdir(args.out)  # results/ and logs/ land in the folder named
    deadline = time.monotonic() + args.budget_s
    (hardware,) = list(config["hardware"])
    env_record = Path(layout.ENV_RECORD.format(hardware=hardware))
    begin = time.monotonic()
    if _cli(
        "env",
        "--config",
        str(config_path),
        "--hardware",
        hardware,
        "--check",
        "--out",
        str(env_record),
        log=Path(f"logs/env/{hardware}.log"),
    ):
        print(f"environment check failed: see {args.out}/logs/env/{hardware}.log")
        return 1
    print(f"environment record: {time.monotonic() - begin:.0f} s", flush=True)
    results = []
    for model, mode in _job_order(config):
        reference = Path(layout.REFERENCE.format(hardware=hardware, model=model))
        if not reference.exists():
            _cli(
                "reference",
                "--config",
                str(config_path),
                "--hardware",
                hardware,
                "--model",
                model,
                "--out",
                str(reference),
                log=Path(f"logs/reference/{hardware}/{model}.log"),
            )
        out = Path(layout.RUN.format(hardware=hardware, model=model, mode=mode))
        left = max(1.0, deadline - time.monotonic())
        timeout = min(configuration.measure_settings(config, model)["timeout_s"], left)
        started = time.monotonic()
        _cli(
            "run",
            "--config",
            str(config_path),
            "--hardware",
            hardware,
            "--model",
            model,
            "--mode",
            mode,
            "--reference",
            str(reference),
            "--env-record",
            str(env_record),
            "--timeout-s",
            str(timeout),
            "--out",
            str(out),
            log=Path(f"logs/benchmark/{hardware}/{model}/{mode}.log"),
        )
        print(f"{model}/{mode}: {time.monotonic() - started:.0f} s", flush=True)
        results.append(out)
    table_paths = write_tables(results, config, layout.TABLES_DIR)
    try:
        import weasyprint  # noqa: F401

        pdf = True
    except ImportError:
        pdf = False
    write_paper(
        table_paths,
        [env_record],
        config,
        layout.REPORT_OUT,
        f"python benchmarks/gpu/gpu_check.py --config {args.config}",
        ROOT / "report",
        pdf=pdf,
    )
    _print_summary(table_paths, pdf)
    return 0


def _print_summary(table_paths: dict[str, Path], pdf: bool) -> None:
    import pandas as pd

    runs = pd.read_csv(table_paths["runs"])
    limits = pd.read_csv(table_paths["limits"]).set_index(["model", "mode"])
    pd.set_option("display.width", 200)
    rows = []
    for r in runs.itertuples():
        limit = limits.loc[(r.model, r.mode)] if (r.model, r.mode) in limits.index else None
        rows.append(
            {
                "model": r.model,
                "mode": r.mode,
                "status": r.status,
                "median_ms": r.median_ms,
                "cv": r.cv,
                "speedup": r.speedup,
                "compile_s": r.compile_s,
                "tokens_per_s": r.tokens_per_s,
                "correct": r.correct,
                "achieved": None if limit is None else f"{limit['achieved']:.3g} {limit['unit']}",
                "of_peak": None
                if limit is None or pd.isna(limit["fraction_of_peak"])
                else f"{100 * limit['fraction_of_peak']:.1f}%",
            }
        )
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    device = runs["device_name"].dropna().unique()
    print(
        f"device: {', '.join(device)}; paper: results/report/paper.html"
        + (" and paper.pdf" if pdf else " (no WeasyPrint here: no PDF)")
    )
    for r in runs[runs["status"] != "ok"].itertuples():
        print(f"{r.model}/{r.mode}: {r.status}: {r.error}")


if __name__ == "__main__":
    sys.exit(main())
