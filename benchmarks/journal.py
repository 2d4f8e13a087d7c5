"""Figure 3: the save journal: durable commit cost as a session grows, and load plus verify.

storyloom appends one hash-chained JSON line per event and fsyncs each outcome
(`storyloom.saves.writer.Journal.record`). The naive baseline keeps the whole session as
one JSON document and rewrites it (temporary file, fsync, rename) on every
commit, so its cost grows with the session. Both are timed on the same disk, at
the start of a session and after thousands of turns.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import Figure, Row, percentile, play_session, scratch_dir

LONG = 10_000
WINDOW = 200
"""Commits timed at each end of the session."""
BASELINE_SAMPLES = 12


def _commit_ends(records: list[dict[str, Any]]) -> list[int]:
    """Index (exclusive) of the end of each committed turn in the record list."""
    return [index + 1 for index, record in enumerate(records) if record["kind"] == "turn_committed"]


def _rewrite_whole(path: Path, records: list[dict[str, Any]]) -> float:
    """The naive commit: the whole session as one JSON document, rewritten durably; returns seconds."""
    started = time.perf_counter()
    temporary = path.with_suffix(".tmp")
    with open(temporary, "w", encoding="utf-8") as out:
        json.dump({"format": "naive", "records": records}, out, ensure_ascii=False, separators=(",", ":"))
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
    return time.perf_counter() - started


LOAD_CHILD = """
import json, sys, time
from storyloom.saves.reader import load_save
from storyloom.saves.verify import verify_save
times = {"load": [], "verify": [], "naive_load": []}
for _ in range(3):
    started = time.perf_counter(); load_save(sys.argv[1]); times["load"].append(time.perf_counter() - started)
    started = time.perf_counter(); report = verify_save(sys.argv[1])
    times["verify"].append(time.perf_counter() - started)
    assert report.sound, report.lines
    started = time.perf_counter()
    with open(sys.argv[2], "rb") as document:
        json.loads(document.read())
    times["naive_load"].append(time.perf_counter() - started)
print(json.dumps({k: min(v) for k, v in times.items()}))
"""


def _load_times(save: Path, naive_doc: Path) -> dict[str, float]:
    """Seconds to load, to load + verify, and to json.loads the naive document, in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", LOAD_CHILD, str(save), str(naive_doc)], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise RuntimeError(f"loading the save failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> Figure:
    """Play a long session into a journal, timing each commit; then time the naive rewrite and a verify."""
    turns, window, samples = (60, 20, 5) if quick else (LONG, WINDOW, BASELINE_SAMPLES)
    folder = scratch_dir("journal")
    figure = Figure(3, "journal", "the whole session as one JSON document, rewritten + fsynced per commit")
    try:
        save = folder / "long.jsonl"
        commits = play_session(turns, save_path=save).commit_seconds  # the session itself is dropped here
        short, long = commits[:window], commits[-window:]
        records = [json.loads(line) for line in save.read_bytes().splitlines()]
        ends = _commit_ends(records)
        naive_doc = folder / "naive.json"
        naive_short = [_rewrite_whole(naive_doc, records[: ends[i]]) for i in range(samples)]
        naive_long = [_rewrite_whole(naive_doc, records[: ends[i]]) for i in range(len(ends) - samples, len(ends))]
        for label, ours, naive in (
            (f"turns 1-{window}", short, naive_short),
            (f"turns {turns - window + 1}-{turns}", long, naive_long),
        ):
            figure.add(
                Row(f"ms per durable commit p50, {label}", percentile(ours, 50) * 1000, percentile(naive, 50) * 1000)
            )
            figure.add(
                Row(f"ms per durable commit p99, {label}", percentile(ours, 99) * 1000, percentile(naive, 99) * 1000)
            )
        growth = percentile(long, 50) / percentile(short, 50)
        naive_growth = percentile(naive_long, 50) / percentile(naive_short, 50)
        figure.add(
            Row(
                "commit p50 growth, long / short session (x)",
                growth,
                naive_growth,
                target="flat (<= 1.5)",
                met=growth <= 1.5,
            )
        )

        timed = _load_times(save, naive_doc)
        figure.add(
            Row(
                f"s to load + verify a {turns:,}-turn save",
                timed["verify"],
                timed["naive_load"],
                target="ratio <= 1.2",
                met=timed["verify"] <= 1.2 * timed["naive_load"],
            )
        )
        figure.add(Row(f"s to load (chain checked) a {turns:,}-turn save", timed["load"], timed["naive_load"]))
        figure.notes += [
            f"save: {save.stat().st_size / 1e6:.1f} MB, {len(records):,} records; naive document "
            f"{naive_doc.stat().st_size / 1e6:.1f} MB",
            f"baseline commits timed: {samples} at each end; its load is a bare json.loads (no chain, no re-judging)",
            "loads timed in a fresh interpreter (as `storyloom verify` runs), the best of 3",
        ]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return figure
