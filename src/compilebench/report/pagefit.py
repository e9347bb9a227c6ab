"""Does a PDF paper fit its pages? Every word inside the printable width, read from poppler's word boxes.

`pdftotext -bbox-layout` gives each word's box in points; a word whose box runs past the left or right margin
was cut off, or printed where a reader cannot see it, by a table wider than the page.
"""

from __future__ import annotations

import html
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

MM = 72 / 25.4
# The paper's @page margins (report/paper.css): 18 mm top, 16 mm right, 20 mm bottom, 16 mm left.
MARGIN_X_PT = 16 * MM
TOLERANCE_PT = 1.0


@dataclass(frozen=True)
class Word:
    page: int
    x_min: float
    y_min: float
    x_max: float
    y_max: float
    text: str


def words(pdf: str | Path) -> tuple[list[Word], list[float]]:
    """Every word of the PDF with its page (from 1) and box, and each page's width."""
    done = subprocess.run(["pdftotext", "-bbox-layout", str(pdf), "-"], capture_output=True, text=True, check=True)
    found, widths = [], []
    for number, page in enumerate(re.split(r"<page ", done.stdout)[1:], 1):
        widths.append(float(re.search(r'width="([\d.]+)"', page).group(1)))
        for box in re.finditer(
            r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>', page
        ):
            *edges, text = box.groups()
            found.append(Word(number, *map(float, edges), html.unescape(text)))
    return found, widths


def outside_margins(pdf: str | Path) -> list[Word]:
    """The words that run past the printable width of their page."""
    found, widths = words(pdf)
    return [
        w
        for w in found
        if w.x_min < MARGIN_X_PT - TOLERANCE_PT or w.x_max > widths[w.page - 1] - MARGIN_X_PT + TOLERANCE_PT
    ]


def pages_between(pdf: str | Path, first: str, last: str) -> list[int]:
    """The pages from the first occurrence of word `first` to the next occurrence of word `last` after it."""
    found, _ = words(pdf)
    start = next(i for i, w in enumerate(found) if w.text == first)
    end = next(i for i in range(start, len(found)) if found[i].text == last)
    return sorted({w.page for w in found[start : end + 1]})


def page_of(pdf: str | Path, *phrase: str) -> int:
    """The page (from 1) on which the words of `phrase` first follow one another."""
    found, _ = words(pdf)
    texts = [w.text for w in found]
    return next(
        found[i].page for i in range(len(found) - len(phrase) + 1) if tuple(texts[i : i + len(phrase)]) == phrase
    )
