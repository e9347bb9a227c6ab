"""A row's verdict against eager, decided once for every table that states one: Table 1, the runtimes table, the
suite, from the speedups table's columns (its interval against the noise floor, whether the machine was steady,
whether a level moved, and whether the speedup as each job timed alone agrees)."""

from __future__ import annotations

from ..analysis.stats import missing

# A verdict in the words page 1 uses.
VERDICT_WORDS = {"faster": "faster", "slower": "slower", "same": "no detectable difference", "unclear": "unclear"}


def verdict_in_words(row: dict) -> tuple[str, str | None]:
    """A mode's verdict against eager as page 1 states it, and why where it is unclear or absent."""
    if row.get("status") != "ok":
        return row.get("status") or "not run", _first_words(row.get("error"))
    if row.get("correct") is False:
        return "wrong output", "failed the correctness check"
    if not missing(row.get("bimodal_slow_ms")):
        return "two speeds", f"{row['bimodal_fast_ms']:.1f} or {row['bimodal_slow_ms']:.1f} ms"
    if isinstance(row.get("level_shift"), str) and row.get("level_shift_side") != "alone":
        return "unclear", "its level moved"
    if row.get("unstable") is True:
        return "unclear", "machine not steady"
    verdict = row.get("against_noise")
    if not isinstance(verdict, str):
        return "unclear", "no interval"
    if verdict in ("faster", "slower") and (doubt := timed_alone_doubt(row, verdict)):
        return "unclear", doubt
    return VERDICT_WORDS[verdict], ("interval too wide" if verdict == "unclear" else None)


def timed_alone_doubt(row: dict, verdict: str) -> str | None:
    """Why a faster or slower verdict is not what a user who runs each alone would see, in words: the eager job's
    check found eager beside the mode unlike eager alone, or the speedup as each job timed alone (`cross_job_speedup`)
    does not lie beyond the threshold on the same side; None where they agree (with one process a side the check
    cannot judge, and that agreement is what stands for it)."""
    cross, threshold = row.get("cross_job_speedup"), row.get("threshold")
    if missing(cross) or missing(threshold):
        return None
    agrees = cross > 1 + threshold if verdict == "faster" else cross < 1 - threshold
    if agrees and row.get("eager_job_flagged") is not True:
        return None
    within = 1 - threshold <= cross <= 1 + threshold
    alone = f"timed alone, no difference ({cross:.2f}×)" if within else f"timed alone, {cross:.2f}×"
    ratio = row.get("eager_job_ratio")
    if missing(ratio) or abs(ratio - 1) < 0.005:
        return alone
    return f"eager ran {abs(ratio - 1) * 100:.0f}% {'slower' if ratio > 1 else 'faster'} beside it than alone; {alone}"


def _first_words(text, words: int = 6) -> str | None:
    return " ".join(str(text).split()[:words]) + "…" if isinstance(text, str) and text else None
