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
import sys
from pathlib import Path

from storyloom.engine.events import TurnCommitted
from storyloom.engine.safety import safe_text
from storyloom.saves.errors import SaveError, SaveUnreadable
from storyloom.saves.format import Save
from storyloom.saves.locations import list_saves, rescue_of, resolve_save, saves_dir
from storyloom.saves.reader import load_save, summarize_save
from storyloom.saves.verify import open_pack, story_turns, verify_save
from storyloom.tui.cli.exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from storyloom.tui.cli.printer import EventPrinter


def _fail(exc: SaveError) -> int:
    print(f"storyloom: {safe_text(str(exc))}", file=sys.stderr)
    return EXIT_USAGE if isinstance(exc, SaveUnreadable) else EXIT_FAILURE


def _load(ref: str) -> Save:
    save = load_save(resolve_save(ref))
    for warning in save.warnings:
        print(f"storyloom: warning: {safe_text(str(save.path))}: {warning}", file=sys.stderr)
    return save


def saves(args: argparse.Namespace) -> int:
    """List the saves: story, turns, last played, size; damaged ones say what is wrong."""
    folder = saves_dir()
    found = list_saves(folder)
    if not found:
        print(f"No saves yet in {folder}. Play a story: storyloom play")
        return EXIT_OK
    print(f"Saves in {folder} (newest first):")
    rows = [("SAVE", "STORY", "TURNS", "LAST PLAYED", "SIZE")]
    for path in found:
        rows.append(_row(path, folder, rescue_of(path, found)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) if i < 4 else cell for i, cell in enumerate(row)).rstrip())
    return EXIT_OK


def _row(path: Path, folder: Path, rescue: Path | None) -> tuple[str, str, str, str, str]:
    """One save's row, from its header and last records only (`summarize_save`): a listing takes about
    the same time for a save of any size (damage further in shows when the save is opened or
    verified). A save that a rescue continues says so (resuming it goes on in the rescue)."""
    name = safe_text(path.name if path.parent == folder else str(path))
    size = _size(path.stat().st_size)
    if rescue is not None:
        where = rescue.name if rescue.parent == folder else str(rescue)
        size += f"  superseded: it stopped taking writes and goes on in {safe_text(where)}"
    try:
        summary = summarize_save(path)
    except SaveError as exc:
        return (name, "(damaged)", "-", "-", f"{size}  {safe_text(exc.reason)}")
    tally = summary.tally
    turns = story_turns(tally.committed, tally.undone) if tally is not None else "?"
    when = summary.last_time.replace("T", " ")[:16] + " UTC" if summary.last_time else "-"
    title = safe_text(summary.header.story_title)
    story = safe_text(summary.header.story_id) + (f" ({title})" if title else "")
    return (name, story, turns, when, size)


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
    from storyloom.saves.export import export_json, export_markdown, read_story
    from storyloom.saves.reader import read_through

    try:
        path = resolve_save(args.save)
        story, warnings = read_through(
            path,
            lambda header, records, time: read_story(path, header, records, open_pack(header, path), header_time=time),
        )
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


def replay(args: argparse.Namespace) -> int:
    """Play a save back through a fresh engine; exit 1 on any divergence from the record."""
    from storyloom.saves.replay import Replayer, replay_plan

    headless = bool(getattr(args, "headless", False))
    speed = getattr(args, "speed", None) or (math.inf if headless else 1.0)
    try:
        save = _load(args.save)
        plan = replay_plan(save, speed=speed)
    except SaveError as exc:
        return _fail(exc)
    if not headless:
        from storyloom.tui.cli.ui import run_replay

        return run_replay(args, plan)
    printer = EventPrinter(sys.stdout, sys.stderr, live=True, streaming=math.isfinite(speed))
    result = asyncio.run(Replayer(plan).run(printer))
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
    turns = sum(isinstance(e, TurnCommitted) for e in result.events)
    print(
        f"storyloom: replayed {turns} commit(s); every decision and state hash matches the record "
        f"(final state {result.final_hash[:12]}…)",
        file=sys.stderr,
    )
    return EXIT_OK
