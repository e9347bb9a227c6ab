"""`compilebench compare` in words: what each run ran on, one line per experiment, and how many processes each
side rests on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .comparisons import COMPILE_STARTS, regressions, said

if TYPE_CHECKING:
    import pandas as pd


def environments_said(base: dict, new: dict) -> list[str]:
    """What each run ran on (torch, device, threads): one line where they agree, else what the comparison is
    about."""

    def seen(results: dict) -> dict[str, str]:
        keys = ("torch", "device_name", "threads")
        environments = [r.get("environment") or {} for r in results.values()]
        values = {k: sorted({str(e[k]) for e in environments if e.get(k) is not None}) for k in keys}
        return {k: ", ".join(v) or "unknown" for k, v in values.items()}

    before, after = seen(base), seen(new)
    if before == after:
        return [f"both runs: torch {after['torch']} on {after['device_name']}, {after['threads']} threads"]
    return [
        "the runs differ in their environment: "
        + "; ".join(f"{key} {before[key]} → {after[key]}" for key in before if before[key] != after[key])
    ]


def describe(table: pd.DataFrame, only_base: list, only_new: list, environments: list[str] = ()) -> str:
    """What `compilebench compare` prints: what the runs ran on, a line per experiment, the geometric means,
    one-sided experiments, how many processes each verdict rests on, and a warning where a side had one."""
    import pandas as pd

    lines = list(environments)
    experiments = table[table["scope"] == "experiment"]
    for row in experiments.to_dict("records"):
        name = f"{row['hardware']}/{row['model']}/{row['mode']}"
        if row.get("comparable") is False:
            lines.append(f"{name}: not comparable, the experiments differ: {row['differs_in']}")
        elif pd.isna(row.get("ratio")):
            lines.append(f"{name}: {row['base_status']} → {row['status']}, not timed on both sides")
        else:
            lines.append(f"{name}: {row['base_median_ms']:.4g} ms → {row['median_ms']:.4g} ms, {_ratio_said(row)}")
            if isinstance(row.get("differs_in"), str):
                lines[-1] += f"; measured with other settings: {row['differs_in']}"
        if isinstance(row["regression"], str):
            lines[-1] += f"  REGRESSION ({row['regression']})"
        lines += _compile_said(row)
    for row in table[table["scope"] == "geomean"].to_dict("records"):
        lines.append(
            f"geometric mean, {row['mode']} on {row['hardware']} ({int(row['experiments'])} experiments): "
            f"{_ratio_said(row)}"
        )
    for side, keys in (("BASE", only_base), ("NEW", only_new)):
        if keys:
            lines.append(f"only in {side}: {', '.join('/'.join(key) for key in keys)}")
    lines += _processes_said(experiments)
    regressed = int(regressions(experiments).sum())
    slower_means = int(regressions(table[table["scope"] == "geomean"]).sum())
    unstable = int((experiments["unstable"] == True).sum())  # noqa: E712
    lines.append(
        (f"{regressed} experiment{'s' if regressed != 1 else ''} regressed" if regressed else "no experiment regressed")
        + (f"; {slower_means} geometric mean{'s' if slower_means != 1 else ''} slower" if slower_means else "")
        + (f"; {unstable} measured unstably (unclear, not a regression)" if unstable else "")
    )
    return "\n".join(lines)


def _compile_said(row: dict) -> list[str]:
    """`  cold compile 16.6 s → 24.9 s, ratio 0.667 (95% CI 0.62–0.71): slower` where a compile time moved or has a
    verdict, and the structure's change."""
    import pandas as pd

    lines = []
    for start in COMPILE_STARTS:
        prefix = f"compile_{start}_"
        ratio = row.get(f"{prefix}ratio")
        if pd.isna(ratio) or (abs(ratio - 1) < 0.01 and row[f"{prefix}verdict"] not in ("faster", "slower")):
            continue
        low, high = row.get(f"{prefix}ratio_ci95_low"), row.get(f"{prefix}ratio_ci95_high")
        interval = "" if pd.isna(low) else f" (95% CI {low:.3f}–{high:.3f})"
        what = (
            f"{start} start to first output"
            if row.get(f"{prefix}from") == "process start to first output"
            else f"{start} compile"
        )
        lines.append(
            f"  {what} {row[f'{prefix}base_s']:.3g} s → {row[f'{prefix}s']:.3g} s, ratio "
            f"{row[f'{prefix}ratio']:.3f}{interval}: {row[f'{prefix}verdict']}"
        )
    if isinstance(row.get("structure_change"), str):
        lines.append(f"  structure changed: {row['structure_change']}")
    return lines


def _ratio_said(row: dict) -> str:
    """`ratio 0.981 (95% CI 0.95–1.01): same; could detect ≥ 8.1 %, saw 1.9 %`."""
    return (
        f"ratio {row['ratio']:.3f} (95% CI {row['ratio_ci95_low']:.3f}–{row['ratio_ci95_high']:.3f}): "
        f"{said(row['verdict'], row['unstable'])}; could detect ≥ {row['detectable_change']:.1f} %, "
        f"saw {abs(row['ratio'] - 1) * 100:.1f} %"
    )


def _processes_said(experiments: pd.DataFrame) -> list[str]:
    timed_rows = experiments.dropna(subset=["processes"])
    if timed_rows.empty:
        return []
    counts = {side: sorted({int(n) for n in timed_rows[column]}) for side, column in
              (("BASE", "base_processes"), ("NEW", "processes"))}  # fmt: skip
    lines = [
        "processes per experiment: "
        + ", ".join(f"{side} {'/'.join(map(str, n))}" for side, n in counts.items())
        + " (intervals over several processes are two-level: Student's t over the processes' values,"
        + " each from its blocks)"
    ]
    for side, n in counts.items():
        if 1 in n:
            lines.append(
                f"warning: {side} measured in one process per experiment, so its interval leaves out the variance "
                "between processes; set measure.processes to 3 or more for a verdict between runs"
            )
    return lines
