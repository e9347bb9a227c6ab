"""How long does the paper take to render from existing tables? (target: under 30 s on 2 cores)

Run from a project folder after `snakemake --cores 4` has produced results/tables/ and
results/env/; writes into a temporary folder and prints the seconds each stage took.

    python benchmarks/tools/render_paper.py [--config config/config.yaml]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from compilebench.configuration import config as configuration
from compilebench.core import layout
from compilebench.report import registry
from compilebench.report.figure_catalog import NAMES as FIGURE_NAMES
from compilebench.report.standalone import write_paper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--out", type=Path, help="keep the figures and paper here (default: a temporary folder)")
    args = parser.parse_args()
    config = configuration.load(args.config)
    tables = {name: Path(layout.table(name)) for name in registry.TABLES}
    envs = sorted(Path("results/env").glob("*.json"))
    begin = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        seconds = write_paper(tables, envs, config, out, "snakemake --cores 4", Path(__file__).parents[2] / "report")
    total = time.perf_counter() - begin
    print(f"figures ({len(FIGURE_NAMES)}, SVG + PNG): {seconds['figures']:.1f} s")
    print(f"paper.html: {seconds['html']:.1f} s")
    print(f"paper.pdf: {seconds['pdf']:.1f} s")
    print(f"total, from existing tables: {total:.1f} s (target < 30 s)")


if __name__ == "__main__":
    main()
