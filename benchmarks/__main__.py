"""`python -m benchmarks`: run the nine figures, print one table, write the results as JSON.

    python -m benchmarks                 # all nine, full size (about 13 minutes on 2 cores)
    python -m benchmarks --quick         # tiny sizes: checks that every benchmark runs
    python -m benchmarks --only 1 3      # some of them
    python -m benchmarks --json out.json # where the JSON goes (default benchmarks/results.json)
    python -m benchmarks --markdown t.md # also write the table, with date and machine, for the README

ratio = storyloom / baseline: below 1 is better for times, bytes and memory; above 1 is
better for frames/s and turns/s.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import FIGURES, figure_module
from benchmarks._common import Figure, fmt

DEFAULT_JSON = Path(__file__).with_name("results.json")


def machine() -> dict[str, Any]:
    """Where the figures were measured: they mean little without it."""
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        pass
    import os

    import textual

    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": platform.machine(),
        "cpu": cpu or platform.processor(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "textual": textual.__version__,
        "load": round(os.getloadavg()[0], 2),
    }


def table(figures: list[Figure]) -> str:
    """The results as one Markdown table, a row per measured quantity."""
    lines = [
        "| # | figure | metric | storyloom | baseline | ratio | target | met |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    for figure in figures:
        for row in figure.rows:
            met = {True: "yes", False: "**no**", None: ""}[row.met]
            lines.append(
                f"| {figure.number} | {figure.name} | {row.metric} | {fmt(row.storyloom)} | "
                f"{fmt(row.baseline)} | {fmt(row.ratio) + 'x' if row.ratio is not None else '–'} | "
                f"{row.target} | {met} |"
            )
    return "\n".join(lines)


def notes(figures: list[Figure]) -> str:
    """Each figure's baseline and notes, under the table."""
    out = []
    for figure in figures:
        out.append(f"{figure.number}. **{figure.name}** (baseline: {figure.baseline}; {figure.seconds:.0f} s)")
        out += [f"   - {note}" for note in figure.notes]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check that everything runs")
    parser.add_argument("--only", type=int, nargs="+", choices=sorted(FIGURES), help="figure numbers to run")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write the results")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table and notes as Markdown")
    args = parser.parse_args(argv)
    about = machine()
    heading = (
        f"storyloom benchmarks, {about['date']}, {about['machine']}, {about['cpu']} ({about['cores']} cores), "
        f"Python {about['python']}, Textual {about['textual']}, load average {about['load']} at the start"
        f"{', quick sizes' if args.quick else ''}"
    )
    print(heading, flush=True)
    figures: list[Figure] = []
    failed: dict[str, str] = {}
    for number in args.only or sorted(FIGURES):
        print(f"  running {number}. {FIGURES[number]} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        try:
            figure = figure_module(number).run(quick=args.quick)
        except Exception:  # one broken benchmark must not hide the others
            failed[FIGURES[number]] = traceback.format_exc()
            print(failed[FIGURES[number]], file=sys.stderr)
            continue
        figure.seconds = time.perf_counter() - started
        figures.append(figure)
    print()
    print(table(figures))
    print()
    print(notes(figures))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {"machine": about, "quick": args.quick, "figures": [f.to_json() for f in figures], "failed": failed},
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    if args.markdown is not None:
        args.markdown.write_text(f"{heading}\n\n{table(figures)}\n\n{notes(figures)}\n", encoding="utf-8")
    print(f"\nwritten: {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
