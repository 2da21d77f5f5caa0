"""Two versions' `make bench` side by side: the median of each figure over runs of each.

    .venv/bin/python bench/run_all.py --json before1.json      # on the version before
    .venv/bin/python bench/run_all.py --json after1.json       # on this one; repeat, alternating
    .venv/bin/python bench/compare.py --before before*.json --after after*.json

Each row: the figure's first number in each run of the version before and after (rates and
times as run_all.py prints them), the medians, the change of the median in percent ("worse"
past --tolerance in the figure's bad direction: a time up, a rate down), and the median
ratio to the floor measured in the same run (the machine's own speed divided out).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def first_number(text: str) -> float | None:
    found = NUMBER.search(text or "")
    return float(found.group().replace(",", "")) if found else None


def figures(path: str) -> dict[str, tuple[float, bool, float | None]]:
    """{figure: (its first number, whether higher is better, its ratio to its floor)} of one
    run_all.py --json file. A number followed by "/s" is a rate; any other a time or size."""
    rows = json.loads(Path(path).read_text())
    out = {}
    for row in rows:
        found = NUMBER.search(row["value"] or "")
        if found is None:
            continue
        unit = row["value"][found.end() :].split(",")[0]
        value = float(found.group().replace(",", ""))
        out[row["figure"].strip()] = (value, "/s" in unit, first_number(row.get("ratio", "")))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", nargs="+", required=True, help="run_all.py --json files")
    parser.add_argument("--after", nargs="+", required=True, help="run_all.py --json files")
    parser.add_argument("--tolerance", type=float, default=5.0, help="percent (default 5)")
    args = parser.parse_args()
    before = [figures(p) for p in args.before]
    after = [figures(p) for p in args.after]
    names = [name for name in before[0] if all(name in run for run in before + after)]
    width = max(len(name) for name in names)
    print(
        f"{'figure':<{width}}  {'before (median)':>24}  {'after (median)':>24}  change"
        "  ratio to floor before → after"
    )
    for name in names:
        b = statistics.median(run[name][0] for run in before)
        a = statistics.median(run[name][0] for run in after)
        higher_is_better = before[0][name][1]
        change = (a - b) / b * 100 if b else 0.0
        worse = -change if higher_is_better else change
        mark = "  worse" if worse > args.tolerance else ""
        runs_b = "/".join(f"{run[name][0]:g}" for run in before)
        runs_a = "/".join(f"{run[name][0]:g}" for run in after)
        ratios = ""
        if before[0][name][2] is not None:
            rb = statistics.median(run[name][2] or 0.0 for run in before)
            ra = statistics.median(run[name][2] or 0.0 for run in after)
            ratios = f"  {rb:g} → {ra:g}"
        print(
            f"{name:<{width}}  {runs_b:>16} {b:>7g}  {runs_a:>16} {a:>7g}  "
            f"{change:+6.1f}%{mark}{ratios}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
