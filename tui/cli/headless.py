"""Headless play: player commands in, story prose out, every event as JSON Lines.

`storyloom play --headless --commands FILE|-` runs each line through the same
`Session` the UI uses, opened and saved by the same `PlaySession`, so a commands
file is a reproducible play-through (CI walk-throughs, bug reports, demos). Prose
goes to stdout, made safe for a terminal; corrections and failures are reported
on stderr so stdout stays a clean transcript (`EventPrinter`). This module must
not import Textual.

Once the story reaches an ending it is over, as in the UI: no later command is played (play
stops there, saying so), but `/undo` still takes the ending turn back and play goes on. A resumed
story that had ended prints its ending after the intro.

Exit codes (`storyloom.tui.cli.exits`): 0 every line played (or the story ended), 3 a turn
failed, its correction budget spent or its narrator failing (play stops there, unless `--on-fail skip` or `retry`
says otherwise; the committed state stays valid), 2 bad arguments or input files, 1
anything else.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import IO, TextIO

from storyloom.engine.events import Event, StoryEnded, TurnFailed
from storyloom.engine.lifecycle import BranchRefused
from storyloom.engine.limits import command_too_long
from storyloom.engine.packs import PackError
from storyloom.engine.safety import safe_text
from storyloom.saves.errors import SaveError
from storyloom.saves.verify import branch_line
from storyloom.tui.cli.exits import EXIT_FAILURE, EXIT_OK, EXIT_TURN_FAILED, EXIT_USAGE
from storyloom.tui.cli.printer import EventPrinter, print_ending, print_intro, print_problems
from storyloom.tui.session import PlaySession
from storyloom.tui.settings import Settings, SettingsError, load_settings
from storyloom.tui.words import plural

STORY_OVER = "the story is over (/undo takes back the ending turn, and play goes on)"


class _Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP: stop where play is, close the save (its lock goes) and say where it is."""


def _terminate(signum: int, frame: object) -> None:
    raise _Terminated(signal.Signals(signum).name)


class Stop(Exception):
    """A meta-command ended play with this exit code."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class VersionFailed(Exception):
    """Another version of a turn failed (`/regenerate`): play goes on or stops as `--on-fail` says."""

    def __init__(self, turn: int):
        super().__init__(turn)
        self.turn = turn


def run_headless(args: argparse.Namespace) -> int:
    """`storyloom play --headless`: see the module docstring for what it prints and returns."""
    err = sys.stderr
    if not args.commands:
        print("storyloom: headless play needs --commands FILE (one command a line) or --commands - for stdin", file=err)
        return EXIT_USAGE
    settings = _headless_settings(args, err)
    if settings is None:
        return EXIT_USAGE
    commands = _open_commands(args.commands, err)
    if commands is None:
        return EXIT_USAGE
    play = play_session(settings, args, err)
    if not open_play(play, err):
        return EXIT_USAGE
    assert play.session is not None and play.journal is not None and play.pack is not None
    events_file: IO[str] | None = None
    if args.events:
        events_file = _open_events(args.events, err)
        if events_file is None:
            play.journal.close()
            return EXIT_USAGE
    if play.journal.broken is not None:  # a resumed save that no longer takes writes
        play.rescue(play.journal.broken)
    return _play_through(play, args, commands, events_file, err)


def _headless_settings(args: argparse.Namespace, err: TextIO) -> Settings | None:
    """The settings headless play runs with; None (after saying why) when they are not valid."""
    try:
        settings = load_settings(args)
    except SettingsError as exc:
        print(f"storyloom: {safe_text(str(exc))}", file=err)
        return None
    if getattr(args, "pace", None) is None:  # the config file's pace is for reading in the UI: headless play is instant
        settings = replace(settings, pace=None)
    return settings


def _open_events(path: str, err: TextIO) -> IO[str] | None:
    """The `--events` file, opened for writing; None (after saying why) when it cannot be."""
    try:
        return open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by `_play_through`
    except OSError as exc:
        print(f"storyloom: cannot write the events file {path}: {exc.strerror or exc}", file=err)
        return None


def _play_through(
    play: PlaySession, args: argparse.Namespace, commands: Iterable[str], events_file: IO[str] | None, err: TextIO
) -> int:
    """Play the commands of an opened session to their end, a signal or a fault; close what was opened."""
    assert play.session is not None and play.journal is not None and play.pack is not None
    before = {signum: signal.signal(signum, _terminate) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        print_intro(play.pack, sys.stdout)
        ending = play.session.ending
        if ending is not None:  # a resumed story that had ended: its ending is part of it
            print_ending(ending.title, ending.text, sys.stdout)
            print(f"storyloom: {STORY_OVER}", file=err)
        if events_file is not None:
            play.on_event = _event_writer(events_file)
        code = asyncio.run(
            play_commands(play, commands, out=sys.stdout, err=err, on_fail=getattr(args, "on_fail", "stop"))
        )
        return finish(play, code)
    except BrokenPipeError:
        raise  # the reader of stdout left (`| head`): the command line stops quietly
    except (OSError, SaveError) as exc:
        print(f"storyloom: {safe_text(str(exc))}", file=err)
        return EXIT_FAILURE
    except _Terminated as stopped:
        saved = play.close()
        where = f"the story so far is saved to {safe_text(str(play.journal.path))}" if saved else "see above"
        print(f"storyloom: stopped by {stopped}; {where}", file=err)
        return EXIT_FAILURE
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
        play.journal.close()
        if events_file is not None:
            events_file.close()
        if hasattr(commands, "close") and commands is not sys.stdin:
            commands.close()


def play_session(settings: Settings, args: argparse.Namespace, err: TextIO) -> PlaySession:
    """The play session `storyloom play`'s options ask for, outside the app (its notes on `err`)."""
    return PlaySession(
        settings,
        story=getattr(args, "story", None),
        resume=getattr(args, "resume", None),
        save=getattr(args, "save", None),
        budget=getattr(args, "budget", None),
        err=err,
    )


def open_play(play: PlaySession, err: TextIO) -> bool:
    """Open the session and its save, saying which save it is; False (after saying why) when it cannot be."""
    try:
        session = play.open()
    except PackError as exc:
        print_problems(exc, err)
        print(
            f"storyloom: the story {play.source!r} cannot be played ({plural(len(exc.problems), 'problem')})", file=err
        )
        return False
    except (SaveError, SettingsError) as exc:  # a save's text is untrusted (a model wrote some of it)
        print(f"storyloom: {safe_text(str(exc))}", file=err)
        return False
    assert play.journal is not None
    if play.resumed:
        print(f"storyloom: resuming {play.journal.path} at turn {session.next_turn}", file=err)
    else:
        print(f"storyloom: saving to {play.journal.path}", file=err)
    return True


def finish(play: PlaySession, code: int) -> int:
    """The exit code, once every record is on disk; 1 (loudly, see `PlaySession.close`) if some never could be."""
    if not play.close():
        return EXIT_FAILURE
    if not play.kept:
        print("storyloom: no turn was played, so no save was kept", file=play.err)
    return code


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


def _event_writer(handle: IO[str]) -> Callable[[Event], None]:
    def write(event: Event) -> None:
        handle.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
        handle.flush()

    return write


ON_FAIL = ("stop", "skip", "retry")
"""What headless play does with a turn that failed, however it failed (`--on-fail`); `stop` is the default."""
RETRIES = 3
"""How many times `--on-fail retry` plays a failed turn again (each with a fresh budget) before it stops."""


async def play_commands(
    play: PlaySession,
    commands: Iterable[str],
    *,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    on_fail: str = "stop",
) -> int:
    """Play each command line through the play session; return the exit code.

    Blank lines and lines starting with `#` are skipped; a line starting with `/`
    is a meta-command (see `META_COMMANDS`); a line over the command limit is refused
    with a note and play goes on. Play stops at the first command after the story reached
    an ending (exit 0; meta-commands still run, so `/undo` takes the ending back and play goes on).
    A turn that fails (its budget spent, or its narrator failing) stops play (exit 3) unless `on_fail` says
    `skip` (go on with the next line) or `retry` (play it again, up to `RETRIES` times,
    then stop); skipped turns are counted on `err` at the end.

    Args:
        play: the story being played, opened (its events are recorded before they are printed).
        commands: one player command a line.
        out: where prose goes.
        err: where corrections, failures and notes go.
        on_fail: one of `ON_FAIL`.
    """
    lines = _Lines(play, EventPrinter(out, err), out, err, on_fail)
    try:
        for number, line in enumerate(commands, 1):
            command = line.strip()
            if not command or command.startswith("#"):
                continue
            code = await (lines.meta(command) if command.startswith("/") else lines.command(number, command))
            if code is not None:
                return code
    except Stop as stop:
        return stop.code
    finally:
        lines.say_skipped()
    return EXIT_OK


@dataclass
class _Lines:
    """Headless play of a commands file, a line at a time: each step returns an exit code to stop
    play with, or None to go on with the next line."""

    play: PlaySession
    printer: EventPrinter
    out: TextIO
    err: TextIO
    on_fail: str
    skipped: list[int] = field(default_factory=list)

    async def meta(self, command: str) -> int | None:
        """A meta-command; another version that failed stops play unless `on_fail` says go on."""
        try:
            await _meta(self.play, command, self.printer)
        except VersionFailed as lost:
            if self.on_fail == "stop":
                return EXIT_TURN_FAILED
            print(
                f"storyloom: another version of turn {lost.turn} failed; the chosen one stands, "
                f"play goes on (--on-fail {self.on_fail})",
                file=self.err,
            )
        return None

    async def command(self, number: int, command: str) -> int | None:
        """A player's command, played as a turn (and again, as `on_fail` says, while it fails)."""
        problem = command_too_long(command)
        if problem is not None:
            print(f"storyloom: line {number}: {problem}; it is not played, play goes on", file=self.err)
            return None
        if self.play.story.ending is not None:  # the story is over: nothing more is played (as in the UI)
            print(f"storyloom: {STORY_OVER}; {safe_text(command)!r} and what follows were not played", file=self.err)
            return EXIT_OK
        print(f"\n> {safe_text(command)}\n", file=self.out)
        failed, _ = await play_turn(self.play.play(command), self.printer)
        retries = 0
        while failed and self.on_fail == "retry" and retries < RETRIES:
            retries += 1
            print(f"storyloom: retrying turn {failed} ({retries} of {RETRIES})", file=self.err)
            failed, _ = await play_turn(self.play.retry(), self.printer)
        if failed and self.on_fail == "skip":
            self.skipped.append(failed)
            print(f"storyloom: turn {failed} failed; going on with the next command (--on-fail skip)", file=self.err)
        elif failed:
            if self.on_fail == "retry":
                print(f"storyloom: turn {failed} still failed after {RETRIES} retries; play stops", file=self.err)
            return EXIT_TURN_FAILED
        return None

    def say_skipped(self) -> None:
        """Count the turns `--on-fail skip` went past, on `err`."""
        if self.skipped:
            skips = plural(len(self.skipped), "turn") + (
                " failed and was skipped" if len(self.skipped) == 1 else " failed and were skipped"
            )
            print(f"storyloom: {skips}: {_turns(self.skipped)}", file=self.err)


async def play_turn(events: AsyncIterator[Event], printer: EventPrinter) -> tuple[int | None, bool]:
    """Print one turn's (recorded) events; return the turn number if it failed, and whether the story ended."""
    failed: int | None = None
    ended = False
    async for event in events:
        printer(event)
        if isinstance(event, TurnFailed):
            failed = event.turn
        ended = ended or isinstance(event, StoryEnded)
    return failed, ended


def _turns(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:20])
    return shown + (f" and {len(numbers) - 20} more" if len(numbers) > 20 else "")


async def _undo(play: PlaySession, argument: str, printer: EventPrinter) -> None:
    why = play.story.no_undo
    event = play.undo()
    if event is None:
        printer.say(why)
        return
    printer(event)


async def _regenerate(play: PlaySession, argument: str, printer: EventPrinter) -> None:
    """Another version of the latest committed turn; a failed one is handled like a failed turn
    (`--on-fail`), and the version chosen before stays committed."""
    if not play.story.can_regenerate:
        printer.say(
            "nothing to regenerate: only the latest committed turn can get another version, before the next command",
            skipped=True,
        )
        return
    failed, _ = await play_turn(play.regenerate(), printer)
    if failed is not None:
        raise VersionFailed(failed)


async def _choose(play: PlaySession, argument: str, printer: EventPrinter) -> None:
    versions = play.story.versions
    count = len(versions.alternatives) if versions is not None else 0
    number = int(argument) if argument.isdigit() else 0
    event = play.choose(number) if number else None
    if event is None:
        known = f"1 to {count}" if count else "none: the latest turn is fixed or there is none"
        printer.say(f"/choose needs the number of a version of the latest turn ({known})", skipped=True)
        return
    printer(event)


async def _branch(play: PlaySession, argument: str, printer: EventPrinter) -> None:
    """`/branch N`: continue from after turn N on a new branch (the branch played until now is kept)."""
    if not argument.isdigit():
        printer.say("/branch needs the number of a committed turn on this path (0: the start)", skipped=True)
        return
    try:
        event: Event = play.branch(int(argument))
    except BranchRefused as refused:
        printer.say(f"cannot branch: {refused}", skipped=True)
        return
    printer(event)


async def _switch(play: PlaySession, argument: str, printer: EventPrinter) -> None:
    """`/switch K`: play branch K again, where it was left."""
    try:
        event: Event = play.switch(int(argument) if argument.isdigit() else 0)
    except BranchRefused as refused:
        printer.say(f"cannot switch: {refused}", skipped=True)
        return
    printer(event)
    ending = play.story.ending
    if ending is not None:
        print_ending(ending.title, ending.text, printer.out)


async def _branches(play: PlaySession, argument: str, printer: EventPrinter) -> None:
    """`/branches`: every branch, where it forks, how many turns, whether it ended, which is played."""
    session = play.story
    endings = session.branch_endings()
    for view in session.ledger.branches():
        ending = endings.get(view.number)
        ended = f"; ended: {safe_text(ending.title)}" if ending is not None else ""
        printer.say(f"{branch_line(view, 'being played')}{ended}")


async def _quit(play: PlaySession, argument: str, printer: EventPrinter) -> None:
    raise Stop(EXIT_OK)


MetaCommand = Callable[[PlaySession, str, EventPrinter], Awaitable[None]]
"""A meta-command's handler: the play session, the text after the command's name, the printer."""

META_COMMANDS: dict[str, MetaCommand] = {
    "/undo": _undo,
    "/regenerate": _regenerate,
    "/choose": _choose,
    "/branch": _branch,
    "/branches": _branches,
    "/switch": _switch,
    "/quit": _quit,
}
"""Meta-commands a commands file may use; the saves layer may add its own."""


async def _meta(play: PlaySession, command: str, printer: EventPrinter) -> None:
    name, _, argument = command.partition(" ")
    handler = META_COMMANDS.get(name.casefold())
    if handler is None:
        known = ", ".join(META_COMMANDS)
        printer.say(f"unknown meta-command {safe_text(command)!r} (known: {known})", skipped=True)
        return
    await handler(play, argument.strip(), printer)
