"""How long does the paper take to render from existing tables? (target: under 30 s on 2 cores)

Run from a project folder after `snakemake --cores 4` has produced results/tables/ and
results/env/; writes into a temporary folder and prints the seconds each stage took.

    python benchmarks/render_paper.py [--config config/config.yaml]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from compilebench import config as configuration
from compilebench import figures, paper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/config.yaml")
    args = parser.parse_args()
    config = configuration.load(args.config)
    tables_dir = Path("results/tables")
    begin = time.perf_counter()
    prices = {h: e["price_per_hour"] for h, e in config["hardware"].items() if e.get("price_per_hour") is not None}
    t = figures.load_tables(tables_dir / "runs.csv", tables_dir / "latency_samples.csv", tables_dir / "speedups.csv", prices)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for name in figures.FIGURES:
            figures.render(name, t, [out / f"{name}.svg", out / f"{name}.png"])
        drawn = time.perf_counter()
        tables = {name: tables_dir / f"{name}.csv" for name in ("runs", "speedups", "summary")}
        envs = sorted(Path("results/env").glob("*.json"))
        paper.write_html(paper.context(tables, sorted(out.glob("*.svg")), envs, config, "snakemake --cores 4"), out / "paper.html")
        html = time.perf_counter()
        paper.write_pdf(paper.context(tables, sorted(out.glob("*.png")), envs, config, "snakemake --cores 4"), out / "paper.pdf")
        pdf = time.perf_counter()
    print(f"figures (7, SVG + PNG): {drawn - begin:.1f} s")
    print(f"paper.html: {html - drawn:.1f} s")
    print(f"paper.pdf: {pdf - html:.1f} s")
    print(f"total, from existing tables: {pdf - begin:.1f} s (target < 30 s)")


if __name__ == "__main__":
    main()
