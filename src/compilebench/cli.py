"""compilebench's command line: `run` one experiment, `reference` its eager output, `env` a hardware record,
`check` a config file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import config as configuration
from . import jobs
from .joblog import log_to_stderr


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
    p = sub.add_parser("check", help="validate a config or experiment file, as the workflow does before any job")
    p.add_argument("--config", type=Path, default=Path("config/config.yaml"), help="pipeline config (YAML)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    log_to_stderr()
    try:
        config = configuration.load(args.config)
        if args.command == "check":
            per_entry = sum(len(configuration.model_modes(config, m)) for m in config["models"])
            print(
                f"{args.config} is valid: {len(config['models'])} models, {per_entry} experiments on each of "
                f"{len(config['hardware'])} hardware entries"
            )
        elif args.command == "env":
            jobs.environment_job(
                args.hardware, configuration.hardware_entry(config, args.hardware), args.out, check=args.check
            )
        elif args.command == "reference":
            jobs.reference_job(configuration.reference_experiment(config, args.model, args.hardware), args.out)
        else:
            exp = configuration.experiment(config, args.model, args.mode, args.hardware)
            if args.timeout_s:
                exp["measure"]["timeout_s"] = args.timeout_s
            result = jobs.benchmark_job(exp, args.out, args.reference, args.env_record)
            error = f": {result['error']['message']}" if result["error"] else ""
            print(f"{args.hardware}/{args.model}/{args.mode}: {result['status']}{error}")
    except configuration.UserError as exc:
        print(f"compilebench: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
