"""`storyloom saves | verify | export | replay`: the save commands, each returning its exit code.

`storyloom.tui.cli` parses the arguments and calls these by name; the saves layer does the
work, these only print it. Exit codes (`storyloom.tui.cli.exits`): 0 success, 1 the save is
not sound (or a replay diverged), 2 the file cannot be read (or there is no such save).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from storyloom.engine.events import TurnCommitted, TurnUndone
from storyloom.engine.safety import safe_text
from storyloom.saves.errors import SaveError, SaveUnreadable
from storyloom.saves.format import Save
from storyloom.saves.locations import list_saves, resolve_save, saves_dir
from storyloom.saves.reader import load_save
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
        rows.append(_row(path))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) if i < 4 else cell for i, cell in enumerate(row)).rstrip())
    return EXIT_OK


def _row(path: Path) -> tuple[str, str, str, str, str]:
    size = _size(path.stat().st_size)
    try:
        save = load_save(path)
    except SaveError as exc:
        return (safe_text(path.name), "(damaged)", "-", "-", f"{size}  {safe_text(exc.reason)}")
    commits = undos = 0
    for _, event in save.events:
        commits += isinstance(event, TurnCommitted)
        undos += isinstance(event, TurnUndone)
    when = save.last_time.replace("T", " ")[:16] + " UTC" if save.last_time else "-"
    title = safe_text(save.header.story_title)
    story = safe_text(save.header.story_id) + (f" ({title})" if title else "")
    return (safe_text(path.name), story, story_turns(commits, undos), when, size)


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
    from storyloom.saves.export import export_json, export_markdown

    try:
        save = _load(args.save)
        pack = open_pack(save.header, save.path)
        if getattr(args, "format", "md") == "json":
            text = json.dumps(export_json(save, pack), indent=2, ensure_ascii=False) + "\n"
        else:
            text = export_markdown(save, pack)
    except SaveError as exc:
        return _fail(exc)
    sys.stdout.write(text)
    sys.stdout.flush()
    return EXIT_OK


def replay(args: argparse.Namespace) -> int:
    """Play a save back through a fresh engine; exit 1 on any divergence from the record."""
    from storyloom.saves.replay import Replayer, replay_plan

    speed = float(getattr(args, "speed", 1.0) or 1.0)
    try:
        save = _load(args.save)
        plan = replay_plan(save, speed=speed)
    except SaveError as exc:
        return _fail(exc)
    if not getattr(args, "headless", False):
        from storyloom.tui.cli.ui import run_replay

        return run_replay(args, plan)
    printer = EventPrinter(sys.stdout, sys.stderr, live=True)
    result = asyncio.run(Replayer(plan).run(printer))
    printer.end()
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
