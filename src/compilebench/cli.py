"""compilebench's command line: `run` one experiment, `reference` its eager output, `env` a hardware record.

torch is imported only after the hardware entry's env vars are set, because
oneDNN and OpenMP read them when torch loads.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from . import config as configuration
from .results import write_json

log = logging.getLogger("compilebench")


def prepare_hardware(config: dict, hardware: str) -> dict:
    """Apply a hardware entry's env vars and threads; call before torch is imported."""
    if hardware not in config["hardware"]:
        raise configuration.ConfigError(
            f"Hardware {hardware!r} is not under config key `hardware`: expected one of {', '.join(config['hardware'])}."
        )
    entry = config["hardware"][hardware]
    os.environ.update({k: str(v) for k, v in entry.get("env", {}).items()})
    if entry.get("threads"):
        os.environ["OMP_NUM_THREADS"] = str(entry["threads"])
    return entry


def _set_threads(entry: dict) -> None:
    import torch

    if entry.get("threads"):
        torch.set_num_threads(entry["threads"])


def environment(config: dict, hardware: str, out: Path, check: bool) -> dict:
    entry = prepare_hardware(config, hardware)
    from . import env

    _set_threads(entry)
    if check:
        env.validate(hardware, entry["device"])
    record = env.record(hardware, entry)
    write_json(out, record)
    return record


def reference(config: dict, model: str, hardware: str, out: Path) -> None:
    entry = prepare_hardware(config, hardware)
    import torch

    from .results import atomic_write
    from .runner import reference_outputs

    _set_threads(entry)
    exp = configuration.experiment(config, model, "eager", hardware, any_mode=True)
    outputs = reference_outputs(exp)
    atomic_write(out, lambda handle: torch.save(outputs, handle))


def run(config: dict, model: str, mode: str, hardware: str, out: Path, reference_path: Path | None, env_path: Path | None) -> dict:
    exp = configuration.experiment(config, model, mode, hardware)
    entry = prepare_hardware(config, hardware)
    import torch

    from . import env
    from .results import read_json
    from .runner import run as run_experiment

    _set_threads(entry)
    full_env = read_json(env_path) if env_path else env.record(hardware, entry)
    environment_ref = {**env.summary(full_env), "record": str(env_path) if env_path else None}
    ref = torch.load(reference_path, weights_only=True) if reference_path else None
    result = run_experiment(exp, reference=ref, environment=environment_ref)
    write_json(out, result)
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="compilebench", description=__doc__.splitlines()[0])
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
    p = sub.add_parser("reference", parents=[common], help="save the eager float32 output of one model")
    p.add_argument("--model", required=True)
    p = sub.add_parser("env", parents=[common], help="write the environment record of one hardware entry")
    p.add_argument("--check", action="store_true", help="also check the device and a tiny torch.compile")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr)
    try:
        config = configuration.load(args.config)
        if args.command == "env":
            environment(config, args.hardware, args.out, args.check)
        elif args.command == "reference":
            reference(config, args.model, args.hardware, args.out)
        else:
            result = run(config, args.model, args.mode, args.hardware, args.out, args.reference, args.env_record)
            error = f": {result['error']['message']}" if result["error"] else ""
            print(f"{args.hardware}/{args.model}/{args.mode}: {result['status']}{error}")
    except configuration.UserError as exc:
        print(f"compilebench: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
