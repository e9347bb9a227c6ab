"""Does each paper fit its pages? Prints, per PDF, its pages, the body's (before Appendix A; at most 8 for the
default run), and every word that runs past the printable width.

python benchmarks/tools/paper_fit.py results/report/paper.pdf [OTHER.pdf ...]
"""

from __future__ import annotations

import subprocess
import sys

from compilebench.report.pagefit import outside_margins, page_of


def main() -> None:
    for pdf in sys.argv[1:]:
        info = subprocess.run(["pdfinfo", pdf], capture_output=True, text=True, check=True).stdout
        pages = next(line.split()[-1] for line in info.splitlines() if line.startswith("Pages:"))
        outside = outside_margins(pdf)
        body = page_of(pdf, "Appendix", "A.") - 1
        print(f"{pdf}: {pages} pages, the body {body}, {len(outside)} words outside the printable width")
        for word in outside[:20]:
            print(f"  page {word.page}: {word.text!r} at x {word.x_min:.0f}–{word.x_max:.0f} pt")


if __name__ == "__main__":
    main()
