"""`storyloom saves | verify | export | replay`: the save commands, each returning its exit code.

`storyloom.tui.cli` parses the arguments and calls these by name; the saves layer does the
work, these only print it. Exit codes (`storyloom.tui.cli.exits`): 0 success, 1 the save is
not sound (or a replay diverged), 2 the file cannot be read (or there is no such save).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from storyloom.engine.events import Event
from storyloom.engine.safety import safe_text
from storyloom.saves.errors import SaveError, SaveUnreadable
from storyloom.saves.format import Save
from storyloom.saves.locations import list_saves, rescue_of, resolve_save, saves_dir
from storyloom.saves.reader import load_save
from storyloom.saves.rebuild import story_turns
from storyloom.saves.summary import summarize_save
from storyloom.saves.verify import verify_save
from storyloom.tui.cli.exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from storyloom.tui.cli.printer import EventPrinter, print_intro
from storyloom.tui.words import plural


def _fail(exc: SaveError) -> int:
    print(f"storyloom: {safe_text(str(exc))}", file=sys.stderr)
    return EXIT_USAGE if isinstance(exc, SaveUnreadable) else EXIT_FAILURE


def _load(ref: str) -> Save:
    save = load_save(resolve_save(ref))
    for warning in save.warnings:
        print(f"storyloom: warning: {safe_text(str(save.path))}: {warning}", file=sys.stderr)
    return save


def saves(args: argparse.Namespace) -> int:
    """List the saves: story, turns, last played, size; damaged ones say what is wrong.

    In a terminal the table fits its width, as `ls -l` does: a story's title is shortened, then
    columns go in order of importance (size, story, last played); piped, rows are whole.
    """
    folder = saves_dir()
    found = list_saves(folder)
    if not found:
        print(f"No saves yet in {folder}. Play a story: storyloom play")
        return EXIT_OK
    print(f"Saves in {folder} (newest first):")
    for line in _fit([_row(path, folder, rescue_of(path, found)) for path in found], _width()):
        print(line)
    return EXIT_OK


@dataclass(frozen=True)
class _Listing:
    """One save's row of `storyloom saves`, with the shorter forms a narrow terminal uses."""

    name: str
    story: str
    title: str = ""
    turns: str = "-"
    turns_short: str = "-"
    when: str = "-"
    size: str = ""
    note: str = ""
    """What is wrong with the save, or what supersedes it: after the columns, cut at the width."""


_HEADINGS = {"name": "SAVE", "story": "STORY", "turns": "TURNS", "when": "LAST PLAYED", "size": "SIZE"}
_LAYOUTS = (
    ("name", "story", "turns", "when", "size"),
    ("name", "story", "turns_short", "when", "size"),
    ("name", "story", "turns_short", "when"),
    ("name", "turns_short", "when"),
    ("name", "turns_short"),
    ("name",),
)
"""The columns of `storyloom saves`, widest first: the turns said short, then size, story, last played dropped."""


def _width() -> int | None:
    """The terminal's width ($COLUMNS first) when stdout is one, else None: a pipe gets whole rows."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def _fit(rows: list[_Listing], width: int | None) -> list[str]:
    """The table in the first layout that fits the width, its titles shortened to fit; lines cut at the width."""
    for columns in _LAYOUTS:
        lines = _table(rows, columns, width)
        if width is None or all(len(line) <= width for line in lines):
            break
    return [_cut(line, width) if width else line for line in _notes(lines, rows, width)]


def _table(rows: list[_Listing], columns: tuple[str, ...], width: int | None) -> list[str]:
    cells = [[_HEADINGS.get(c, "TURNS") for c in columns]]
    cells += [[getattr(row, c) for c in columns] for row in rows]
    if "story" in columns:  # the story's title fills what the other columns leave, shortened to fit
        others = sum(max(len(r[i]) for r in cells) + 2 for i, c in enumerate(columns) if c != "story")
        room = None if width is None else width - others
        index = columns.index("story")
        for cell, row in zip(cells[1:], rows, strict=True):
            cell[index] = _titled(row, room)
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() for r in cells]


def _titled(row: _Listing, room: int | None) -> str:
    if not row.title:
        return row.story
    whole = f"{row.story} ({row.title})"
    if room is None or len(whole) <= room:
        return whole
    if room < len(row.story) + 8:  # less than four letters of the title says nothing
        return row.story
    return f"{row.story} ({row.title[: room - len(row.story) - 4]}…)"


def _notes(lines: list[str], rows: list[_Listing], width: int | None) -> list[str]:
    return [lines[0]] + [f"{line}  {row.note}" if row.note else line for line, row in zip(lines[1:], rows, strict=True)]


def _cut(line: str, width: int) -> str:
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"


def _row(path: Path, folder: Path, rescue: Path | None) -> _Listing:
    """One save's row, from its header and last records only (`summarize_save`): a listing takes about
    the same time for a save of any size (damage further in shows when the save is opened or
    verified). A save that a rescue continues says so (resuming it goes on in the rescue)."""
    name = safe_text(path.name if path.parent == folder else str(path))
    size = _size(path.stat().st_size)
    note = ""
    if rescue is not None:
        where = rescue.name if rescue.parent == folder else str(rescue)
        note = f"superseded: it stopped taking writes and goes on in {safe_text(where)}"
    try:
        summary = summarize_save(path)
    except SaveError as exc:
        return _Listing(name, "(damaged)", size=size, note=" ".join(filter(None, (safe_text(exc.reason), note))))
    tally = summary.tally
    turns = story_turns(tally.committed, tally.undone) if tally is not None else "?"
    short = turns.split(" in the story", 1)[0]
    if tally is not None and tally.branches > 1:
        turns, short = f"{turns}, {tally.branches} branches", f"{short}, {tally.branches} branches"
    when = summary.last_time.replace("T", " ")[:16] + " UTC" if summary.last_time else "-"
    story = safe_text(summary.header.story_id)
    return _Listing(name, story, safe_text(summary.header.story_title), turns, short, when, size, note)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} kB"
    return f"{n / 1024 / 1024:.1f} MB"


def verify(args: argparse.Namespace) -> int:
    """Re-validate every commit, recompute every state hash, check the chain; name the first bad record."""
    try:
        path = resolve_save(args.save)
    except SaveError as exc:
        return _fail(exc)
    report = verify_save(path)
    for line in report.lines:
        print(safe_text(line))  # a save's text is untrusted: the model wrote some of it
    if report.sound:
        return EXIT_OK
    return EXIT_FAILURE if report.readable else EXIT_USAGE


def export(args: argparse.Namespace) -> int:
    """Print a Markdown transcript or a JSON export of a save to stdout."""
    from storyloom.saves.export import export_json, export_markdown, saved_story

    try:
        path = resolve_save(args.save)
        story, warnings = saved_story(path, getattr(args, "branch", None))
        for warning in warnings:
            print(f"storyloom: warning: {safe_text(str(path))}: {warning}", file=sys.stderr)
        if getattr(args, "format", "md") == "json":
            text = json.dumps(export_json(story), indent=2, ensure_ascii=False) + "\n"
        else:
            text = export_markdown(story)
    except SaveError as exc:
        return _fail(exc)
    sys.stdout.write(text)
    sys.stdout.flush()
    return EXIT_OK


def _path_of(path: Path, branch: int) -> frozenset[int]:
    """The turn numbers on the path of `branch`, for a replay in the UI that shows that path only."""
    from storyloom.saves.export import path_turns
    from storyloom.saves.reader import read_through

    (_, _, turns), _ = read_through(path, lambda _header, records, _time: path_turns(path, records, branch))
    return turns


def _on_path(
    path: Path, branch: int | None, show: Callable[[Event], None], branches: int | None = None
) -> Callable[[Event], None]:
    """What a text replay shows: a story of one path, all of it; of several, only the events of the
    turns on the path of `branch` (default: the one played last), which it names first. `branches`:
    how many the judged reading counted (a story of one path is shown whole, its path never read)."""
    from storyloom.saves.export import path_turns
    from storyloom.saves.reader import read_through

    if branches == 1 and branch in (None, 1):
        return show
    (shown, count, turns), _ = read_through(path, lambda _header, records, _time: path_turns(path, records, branch))
    if count == 1:
        return show
    print(f"storyloom: replaying branch {shown} of {count}: the turns on its path", file=sys.stderr)

    from storyloom.saves.export import OFF_PATH

    def on_path(event: Event) -> None:
        if event.turn in turns and event.event not in OFF_PATH:
            show(event)

    return on_path


def replay(args: argparse.Namespace) -> int:
    """Play a save back through a fresh engine; exit 1 on any divergence from the record."""
    from storyloom.saves.replay import Replayer, replay_plan, stream_plan

    headless = bool(getattr(args, "headless", False))
    speed = getattr(args, "speed", None) or (math.inf if headless else 1.0)
    branch = getattr(args, "branch", None)
    if not headless:
        try:
            path = resolve_save(args.save)
            plan = replay_plan(_load(args.save), speed=speed)
            only = None if branch is None else _path_of(path, branch)
        except SaveError as exc:
            return _fail(exc)
        from storyloom.tui.cli.ui import run_replay

        return run_replay(args, plan, only)
    try:  # as text, the save is read as it is replayed: a save of any size in bounded memory
        path = resolve_save(args.save)
        streamed = stream_plan(path, speed=speed)
        for warning in streamed.warnings:
            print(f"storyloom: warning: {safe_text(str(path))}: {warning}", file=sys.stderr)
        drafts = bool(getattr(args, "drafts", False))
        printer = EventPrinter(sys.stdout, sys.stderr, live=True, streaming=math.isfinite(speed), drafts=drafts)
        print_intro(streamed.pack, sys.stdout)  # the story as headless play printed it: its opening first
        replayer = Replayer(streamed, keep_events=False)
        result = asyncio.run(replayer.run(_on_path(path, branch, printer, getattr(streamed, "branches", None))))
    except SaveError as exc:
        return _fail(exc)
    printer.end()
    for turn in result.went_on_after:
        print(
            f"storyloom: note: turn {turn} was in flight when the game stopped (never committed); "
            f"the save goes on after it",
            file=sys.stderr,
        )
    if result.interrupted is not None:
        print(
            f"storyloom: note: the save stops while turn {result.interrupted} was in flight (never committed)",
            file=sys.stderr,
        )
    if result.divergence is not None:
        print(f"storyloom: replay DIVERGED from the record at {safe_text(str(result.divergence))}", file=sys.stderr)
        return EXIT_FAILURE
    if result.final_hash != result.expected_final_hash:
        print(
            f"storyloom: replay DIVERGED: it ends in state {result.final_hash[:12]}…, the record in "
            f"{result.expected_final_hash[:12]}…",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    turns = result.commits
    print(
        f"storyloom: replayed {plural(turns, 'commit')}; every decision and state hash matches the record "
        f"(final state {result.final_hash[:12]}…)",
        file=sys.stderr,
    )
    return EXIT_OK
