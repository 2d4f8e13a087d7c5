"""Headless play: player commands in, story prose out, every event as JSON Lines.

`storyloom play --headless --commands FILE|-` runs each line through the same
`Session` the UI uses, so a commands file is a reproducible play-through (CI
walk-throughs, bug reports, demos). Prose goes to stdout, made safe for a
terminal; corrections and failures are reported on stderr so stdout stays a
clean transcript. This module must not import Textual.

Exit codes: 0 every turn committed (or the story ended), 3 a turn failed after
its correction budget (play stops there; the committed state stays valid),
2 bad arguments or input files, 1 anything else.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, TextIO

from engine.events import (
    CorrectionStarted,
    Event,
    ProseReplaced,
    StoryEnded,
    TurnCommitted,
    TurnFailed,
    ValidationFailed,
)
from engine.lifecycle import Session
from engine.packs import PackError, StoryPack, load_pack
from engine.safety import safe_text
from saves.errors import SaveError, SaveWriteError
from saves.resume import resume_with, start_new
from saves.writer import Journal, rescue_save
from tui.cli import EXIT_ERROR, EXIT_OK, EXIT_TURN_FAILED, EXIT_USAGE
from tui.settings import DEFAULT_STORY, Settings, SettingsError, create_narrator, load_settings

EventHook = Callable[[Event], None]
"""Called with every event before it is shown (the events file, the save journal)."""


class _Stop(Exception):
    """A meta-command ended play with this exit code."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def run_headless(args: argparse.Namespace) -> int:
    """`storyloom play --headless`: see the module docstring for what it prints and returns."""
    err = sys.stderr
    if not args.commands:
        print("storyloom: headless play needs --commands FILE (one command a line) or --commands - for stdin",
              file=err)
        return EXIT_USAGE
    try:
        settings = load_settings(args)
    except SettingsError as exc:
        print(f"storyloom: {safe_text(str(exc))}", file=err)
        return EXIT_USAGE
    commands = _open_commands(args.commands, err)
    if commands is None:
        return EXIT_USAGE
    opened = _open_save(args, settings, err)
    if opened is None:
        return EXIT_USAGE
    pack, session, journal = opened
    events_file: IO[str] | None = None
    if args.events:
        try:
            events_file = open(args.events, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            print(f"storyloom: cannot write the events file {args.events}: {exc.strerror or exc}", file=err)
            journal.close()
            return EXIT_USAGE
    keeper = SaveKeeper(journal, err)
    if journal.broken is not None:  # a resumed save that no longer takes writes
        print(f"storyloom: {safe_text(str(journal.broken))}", file=err)
        keeper.rescue()
    try:
        print_intro(pack, sys.stdout)
        hook = _both(keeper.record, _event_writer(events_file) if events_file else None)
        code = asyncio.run(play_commands(session, commands, on_event=hook, out=sys.stdout, err=err))
        return keeper.finish(code)
    except BrokenPipeError:
        raise  # the reader of stdout left (`| head`): the command line stops quietly
    except (OSError, SaveError) as exc:
        print(f"storyloom: {safe_text(str(exc))}", file=err)
        return EXIT_ERROR
    finally:
        journal.close()
        if events_file is not None:
            events_file.close()
        if hasattr(commands, "close") and commands is not sys.stdin:
            commands.close()  # type: ignore[union-attr]


def _open_save(args: argparse.Namespace, settings: Settings,
               err: TextIO) -> tuple[StoryPack, Session, Journal] | None:
    """The session and its save: resumed from `--resume`, else new (at `--save`, or in the saves folder)."""
    try:
        if getattr(args, "resume", None):
            resumed = resume_with(args.resume, lambda p, kept: create_narrator(
                settings.with_choices(kept), p, interactive=False), settings.choices(),
                budget=getattr(args, "budget", None))
            for warning in resumed.warnings:
                print(f"storyloom: warning: {safe_text(warning)}", file=err)
            print(f"storyloom: resuming {resumed.journal.path} at turn {resumed.session.next_turn}", file=err)
            return resumed.pack, resumed.session, resumed.journal
        pack = _load_story(args.story or DEFAULT_STORY, err)
        if pack is None:
            return None
        narrator = create_narrator(settings, pack, interactive=False)
        session, journal = start_new(pack, narrator, settings.choices(), source=args.story or DEFAULT_STORY,
                                   path=getattr(args, "save", None))
        print(f"storyloom: saving to {journal.path}", file=err)
        return pack, session, journal
    except (SaveError, SettingsError) as exc:  # a save's text is untrusted (a model wrote some of it)
        print(f"storyloom: {safe_text(str(exc))}", file=err)
        return None


class SaveKeeper:
    """Feeds the journal; when the save cannot be written (disk full, deleted, read-only), says so
    once, writes the whole story so far to another place, and lets play go on.

    Headless play cannot ask where to save, so it offers the places it tries itself
    (`saves.locations.rescue_paths`), names the one that worked, and never exits 0 with turns unsaved.
    """

    def __init__(self, journal: Journal, err: TextIO):
        self.journal = journal
        self.err = err

    def record(self, event: Event) -> None:
        try:
            self.journal.record(event)
        except SaveWriteError as exc:
            print(f"storyloom: {safe_text(str(exc))}", file=self.err)
            self.rescue()

    def rescue(self) -> bool:
        """Write the story so far to the first place that takes it; True when it is saved again."""
        def refused(path: Path, exc: SaveError) -> None:
            print(f"storyloom: cannot save to {safe_text(str(path))} either ({safe_text(exc.reason)})", file=self.err)

        path = rescue_save(self.journal, refused)
        if path is None:
            print("storyloom: play goes on in memory; nothing more can be saved until there is room", file=self.err)
            return False
        print(f"storyloom: the story so far is saved to {safe_text(str(path))} instead; play goes on "
              f"there (resume it with --resume {safe_text(str(path))})", file=self.err)
        return True

    def finish(self, code: int) -> int:
        """The exit code, once every record is on disk; 1 (loudly) if some never could be."""
        if self.journal.broken is None or self.rescue():
            return code
        print(f"storyloom: {self.journal.unsaved} record(s) of this session could not be saved anywhere "
              f"(the last save written is {safe_text(str(self.journal.path))})", file=self.err)
        return EXIT_ERROR


def _both(first: EventHook, second: EventHook | None) -> EventHook:
    """The journal records each event before anything else sees it (a commit is on disk before it is shown)."""
    if second is None:
        return first

    def hook(event: Event) -> None:
        first(event)
        second(event)
    return hook


def _load_story(ref: str, err: TextIO) -> StoryPack | None:
    try:
        return load_pack(ref)
    except PackError as exc:
        for problem in exc.problems:
            print(safe_text(str(problem)), file=err)
        print(f"storyloom: the story {ref!r} cannot be played ({len(exc.problems)} problem(s))", file=err)
        return None


def _open_commands(ref: str, err: TextIO) -> Iterable[str] | None:
    """The command lines: stdin read lazily for `-`, a file read whole (so errors show up front)."""
    if ref == "-":
        return sys.stdin
    try:
        with open(ref, encoding="utf-8") as handle:
            return handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(f"storyloom: cannot read the commands file {ref}: {reason}", file=err)
        return None


def _event_writer(handle: IO[str]) -> EventHook:
    def write(event: Event) -> None:
        handle.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
        handle.flush()
    return write


def print_intro(pack: StoryPack, out: TextIO) -> None:
    """The story's title and opening prose, before the first command."""
    print(safe_text(pack.title), file=out)
    print(file=out)
    print(safe_text(pack.intro.strip()), file=out)


async def play_commands(session: Session, commands: Iterable[str], *, on_event: EventHook | None = None,
                        out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Play each command line through the session; return the exit code.

    Blank lines and lines starting with `#` are skipped; a line starting with `/`
    is a meta-command (see `META_COMMANDS`). Play stops at the first turn that
    fails after its budget (exit 3) or when the story reaches an ending (exit 0).

    Args:
        session: the story being played.
        commands: one player command a line.
        on_event: called with every event, before it is printed.
        out: where prose goes.
        err: where corrections, failures and notes go.
    """
    for line in commands:
        command = line.strip()
        if not command or command.startswith("#"):
            continue
        if command.startswith("/"):
            try:
                _meta(session, command, on_event, out, err)
            except _Stop as stop:
                return stop.code
            continue
        print(f"\n> {safe_text(command)}\n", file=out)
        failed = ended = False
        async for event in session.play(command):
            if on_event is not None:
                on_event(event)
            show_event(event, out, err)
            failed = failed or isinstance(event, TurnFailed)
            ended = ended or isinstance(event, StoryEnded)
        if failed:
            return EXIT_TURN_FAILED
        if ended:
            return EXIT_OK
    return EXIT_OK


def show_event(event: Event, out: TextIO, err: TextIO) -> None:
    """Print what a reader of the transcript needs from one event (model text made safe)."""
    if isinstance(event, TurnCommitted):
        print(safe_text(event.narrative), file=out)
    elif isinstance(event, StoryEnded):
        print(f"\n{safe_text(event.title)}\n\n{safe_text(event.text)}", file=out)
    elif isinstance(event, ValidationFailed):
        rules = ", ".join(sorted({issue.rule for issue in event.issues}))
        print(f"storyloom: turn {event.turn}, attempt {event.attempt} rejected ({rules})", file=err)
    elif isinstance(event, CorrectionStarted):
        print(f"storyloom: turn {event.turn}: correction {event.correction} of {event.budget}", file=err)
    elif isinstance(event, ProseReplaced) and (event.text or not event.changed):  # not a transient-retry clear
        what = "rewrites the prose" if event.changed else "keeps the prose"
        print(f"storyloom: turn {event.turn}: the correction {what}", file=err)
    elif isinstance(event, TurnFailed):
        print(f"storyloom: turn {event.turn} failed after its correction budget:", file=err)
        for issue in event.issues:
            print(f"  [{issue.rule}] {issue.path or '/'}: {safe_text(issue.message)}", file=err)


def _undo(session: Session, on_event: EventHook | None, out: TextIO, err: TextIO) -> None:
    event = session.undo()
    if event is None:
        print("storyloom: nothing to undo", file=err)
        return
    if on_event is not None:
        on_event(event)
    print("\n(undone: the last committed turn is taken back)", file=out)


def _quit(session: Session, on_event: EventHook | None, out: TextIO, err: TextIO) -> None:
    raise _Stop(EXIT_OK)


META_COMMANDS: dict[str, Callable[[Session, EventHook | None, TextIO, TextIO], None]] = {
    "/undo": _undo,
    "/quit": _quit,
}
"""Meta-commands a commands file may use; the saves layer may add its own."""


def _meta(session: Session, command: str, on_event: EventHook | None, out: TextIO, err: TextIO) -> None:
    handler = META_COMMANDS.get(command.split()[0].casefold())
    if handler is None:
        known = ", ".join(META_COMMANDS)
        print(f"storyloom: unknown meta-command {safe_text(command)!r} (known: {known}); skipped", file=err)
        return
    handler(session, on_event, out, err)
