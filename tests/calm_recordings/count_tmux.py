"""Count calm-reading violations, per rule, over tmux captures of a real terminal.

    for i in $(seq 1000); do tmux capture-pane -pt t-24 > /tmp/f24/$(printf %05d $i); sleep 0.04; done
    python -m tests.calm_recordings.count_tmux /tmp/f24 --rows 2:-5 --cols 2:-30

Each capture is one frame (its file's modification time is its time). `--rows` and `--cols` crop
the transcript out of the pane (Python slices: under the header and the transcript's top padding,
above the input line and the footer; right of the messages' border, left of the scrollbar or the
side panel). A frame is idle when nothing in the pane changes for the next second, and a pair is
not compared across a player's scroll (a frame showing the "newer text below" hint starts one) or
where most of the text changed at once (an undo, a new game, other prose swapped in). A toast
(its left edge `▌`) covers the view's right part: while one shows, rows are cut at its edge, and
a pair across a toast coming or going is not compared. Rows are cut at the side panel's left edge
(`▏`, when most rows show it in the same column), and a resize (the pane's size changed) is marked
as the frame harness marks it: rule 7 holds from there, and rules 1-4 skip it and the next two frames.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pytest_frame_geometry.calm import RULES, Sheet, calm_violations, count_by_rule

from tests.calm_recordings import STATUSES as STORY_STATUSES

STATUSES = (*STORY_STATUSES, "↓ newer text below")
SCROLLBAR = " ▁▂▃▄▅▆▇█▔▕▎▏▐│┃"
TOAST = "▌"
PANEL = "▏"
SWAPPING = ("correcting (", "writing version")
"""The statuses a turn shows until other prose is swapped in (a correction's, another version's)."""


def span(text: str) -> slice:
    start, _, stop = text.partition(":")
    return slice(int(start) if start else None, int(stop) if stop else None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--rows", type=span, default=span("2:-5"))
    parser.add_argument("--cols", type=span, default=span("2:-2"))
    parser.add_argument("--show", type=int, default=3, help="violations shown per rule")
    args = parser.parse_args()
    files = sorted(p for p in args.folder.iterdir() if p.is_file())
    panes = [p.read_text(encoding="utf-8", errors="replace").split("\n") for p in files]
    times = [os.stat(p).st_mtime for p in files]
    sheets = []
    sizes = [len(pane) for pane in panes]  # rows: tmux leaves out trailing spaces, so widths vary with the text
    for k, (pane, at) in enumerate(zip(panes, times, strict=True)):
        width = max(map(len, pane))  # tmux leaves out trailing spaces: pad the rows back to the pane's width
        rows = tuple(row.ljust(width)[args.cols] for row in pane[args.rows])
        panel = [row.rindex(PANEL) for row in rows if PANEL in row]
        if len(panel) > len(rows) // 2:
            edge = max(set(panel), key=panel.count)
            rows = tuple(row[:edge] for row in rows)
        toast = min((row.index(TOAST) for row in rows if TOAST in row), default=None)
        rows = tuple(row[:toast].rstrip(SCROLLBAR) for row in rows)
        later = [j for j in range(k + 1, len(panes)) if times[j] - at <= 1.0]
        idle = bool(later) and times[later[-1]] - at >= 0.9 and all(panes[j] == pane for j in later)
        scrolled = any("newer text below" in row for row in pane)
        resized = any(sizes[j] != sizes[j - 1] for j in range(max(1, k - 2), k + 1))
        flags = {"idle": idle, "scrolled": scrolled, "toast": toast, "resized": k and sizes[k] != sizes[k - 1]}
        flags["near_resize"] = resized
        sheets.append(Sheet(k, rows, at, phase=files[k].name, flags=flags))

    def replaced(before: Sheet, after: Sheet) -> bool:
        if before.flags["scrolled"] != after.flags["scrolled"] or before.flags["toast"] != after.flags["toast"]:
            return True
        if after.flags["near_resize"]:
            return True
        kept = set(before.rows) & set(after.rows)
        return len([r for r in kept if r.strip()]) < len([r for r in before.rows if r.strip()]) // 3

    found = calm_violations(
        sheets,
        statuses=STATUSES,
        idle=lambda s: s.flags["idle"] and not s.flags["scrolled"],
        reset=replaced,
        scrolled=lambda s: s.flags["scrolled"],
        resized=lambda s: bool(s.flags["resized"]),
    )
    counts = count_by_rule(found)

    def swapped(index: int) -> bool:
        """A frame that swapped in other prose: its turn's status left "correcting" or "writing version"."""
        before = {row.strip() for row in sheets[index - 1].rows} if index else set()
        after = {row.strip() for row in sheets[index].rows}
        return any(row.startswith(SWAPPING) for row in before - after)

    print(f"{len(sheets)} captures; violations per rule:")
    for rule, count in counts.items():
        at_swaps = sum(swapped(v.index) for v in found if v.rule == rule)
        where = f" ({at_swaps} where other prose was swapped in)" if at_swaps else ""
        print(f"  rule {rule} ({RULES[rule]}): {count}{where}")
        for v in [v for v in found if v.rule == rule][: args.show]:
            print(f"      {v}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
