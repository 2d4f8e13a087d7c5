"""Play for a screen reader: `storyloom play --screen-reader`, plain lines on the same play session.

A full-screen app that repaints is noise to a screen reader (streamed words read again, status
rows and the side panel announced on every change). This front end is linear instead: the player
types a line at a plain prompt (readline editing and history where Python has it), and each
committed turn is printed once, as whole paragraphs, when it is committed; a correction is one
short line, a failure says what happened and which command retries. Nothing is coloured, moved or
printed again unless the player asks for it (`/choose`, `/look-state`).

It is not a new reading of the events: the story is opened, saved, resumed and closed by the same
`PlaySession` as the app and headless play, its turns are played through the same `Session`, its
meta-commands are headless play's (`/undo`, `/regenerate`, `/choose N`, `/quit`) plus the ones a
person at a prompt needs (`/retry`, `/versions`, `/look-state`, `/help`), and its text is the
transcript of `EventPrinter` with one line for each correction and failure. This module must
not import Textual.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO

from storyloom.engine.events import (
    AlternativeStarted,
    CorrectionStarted,
    Event,
    NarratorRetrying,
    ProseReplaced,
    TurnCancelled,
    TurnCommitted,
    TurnFailed,
    TurnStarted,
    ValidationFailed,
)
from storyloom.engine.limits import command_too_long
from storyloom.engine.packs import PLAYER, StoryPack
from storyloom.engine.safety import safe_text
from storyloom.saves.errors import SaveError
from storyloom.tui.cli.exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from storyloom.tui.cli.headless import (
    META_COMMANDS,
    STORY_OVER,
    MetaCommand,
    Stop,
    VersionFailed,
    finish,
    open_play,
    play_session,
    play_turn,
)
from storyloom.tui.cli.printer import EventPrinter, print_ending, print_intro
from storyloom.tui.failures import failure
from storyloom.tui.session import PlaySession
from storyloom.tui.settings import SettingsError, load_settings

if TYPE_CHECKING:
    from storyloom.engine.lifecycle import Session

PROMPT = "> "


class ReaderPrinter(EventPrinter):
    """The transcript on one stream, with each correction, failure and cancel as one plain line.

    The committed prose, the ending, undos and chosen versions are printed as the transcript
    prints them; the rejections and corrections a transcript notes one by one become one line
    per correction, and a failure names the command that tries again.
    """

    def __init__(self, out: TextIO):
        super().__init__(out, out)
        self._version = False
        """The turn in flight is another version of the latest turn (a failure cannot be retried)."""
        self._busy_told = False
        self._try = ""
        """Which try of the turn this is, when it is a retry (so no correction line is said twice)."""

    def _transcript(self, event: Event) -> None:
        if isinstance(event, TurnStarted | AlternativeStarted):
            self._version, self._busy_told = isinstance(event, AlternativeStarted), False
            self._try = f", retry {event.retry}" if isinstance(event, TurnStarted) and event.retry else ""
        if isinstance(event, ValidationFailed | ProseReplaced | TurnStarted):
            return
        if isinstance(event, CorrectionStarted):
            again = "" if event.correction == 1 else f" again ({event.correction} of {event.budget})"
            self._line(f"Correcting turn {event.turn}{self._try}{again}…")
        elif isinstance(event, NarratorRetrying):
            if not self._busy_told:
                self._busy_told = True
                self._line(f"The narrator is busy; asking again for turn {event.turn}{self._try}…")
        elif isinstance(event, TurnFailed):
            reasons = "; ".join(safe_text(issue.message).rstrip(" .") for issue in event.issues) or "no reason given"
            what = f"failed {failure(event).outcome}: {reasons}."  # the status row's and the transcript's words
            if self._version:
                self._line(
                    f"Another version of turn {event.turn} {what} The chosen version stands; "
                    "type /regenerate to try again."
                )
            else:
                self._line(
                    f"Turn {event.turn} {what} Nothing changed. Type /retry to play it again, or type another command."
                )
        elif isinstance(event, TurnCancelled):
            self._line(f"Turn {event.turn} cancelled; nothing changed. Type /retry to play it again.")
        else:
            if isinstance(event, TurnCommitted):
                print(file=self.out)
            super()._transcript(event)
        self.out.flush()

    def _line(self, text: str) -> None:
        print(text, file=self.out)

    def say(self, text: str, *, skipped: bool = False) -> None:
        """A command's answer as a sentence of its own (no `storyloom:` before it to be read aloud on
        every line, and no "skipped": a player at the prompt just types again)."""
        text = f"{text[:1].upper()}{text[1:]}"
        self._line(text if text.endswith((".", "?", "!")) else f"{text}.")


def describe_state(pack: StoryPack, state: dict[str, Any]) -> list[str]:
    """The side panel's content as sentences: where the player is, what they carry, stats and flags."""
    room = pack.rooms.get(state.get("location", ""))
    carried = [pack.items[i].name for i, at in state.get("items", {}).items() if at == PLAYER and i in pack.items]
    lines = [
        f"You are at: {safe_text(room.name if room else str(state.get('location', 'an unknown place')))}.",
        f"You carry: {safe_text(', '.join(carried)) if carried else 'nothing'}.",
    ]
    for stat_id, stat in pack.stats.items():
        value = state.get("stats", {}).get(stat_id, stat.initial)
        lines.append(f"{safe_text(stat.label or stat_id.replace('_', ' '))}: {value} of {stat.max}.")
    flags = [
        f"{safe_text(flag_id.replace('_', ' '))} {'yes' if state.get('flags', {}).get(flag_id, False) else 'no'}"
        for flag_id in pack.flags
    ]
    if flags:
        lines.append(f"Flags: {'; '.join(flags)}.")
    return lines


async def _retry(play: PlaySession, argument: str, printer: EventPrinter) -> None:
    if play.story.pending is None:
        print("Nothing to retry: only a failed or cancelled turn can be played again.", file=printer.out)
        return
    await play_turn(play.retry(), printer)


async def _versions(play: PlaySession, argument: str, printer: EventPrinter) -> None:
    versions = play.story.versions
    if versions is None:
        print(
            "The latest turn has one version and it is fixed (or no turn is played yet): "
            "/regenerate works on the latest turn until the next command.",
            file=printer.out,
        )
        return
    count = len(versions.alternatives)
    print(
        f"Turn {versions.turn} has {count} version{'s' if count > 1 else ''}; version {versions.chosen} is chosen. "
        f"Type /choose and a number from 1 to {count} to hear one, or /regenerate for another.",
        file=printer.out,
    )


async def _look_state(play: PlaySession, argument: str, printer: EventPrinter) -> None:
    for line in describe_state(play.story.pack, play.story.state):
        print(line, file=printer.out)


async def _help(play: PlaySession, argument: str, printer: EventPrinter) -> None:
    print(HELP, file=printer.out)


def _telling_where(handler: MetaCommand) -> MetaCommand:
    """/branch and /switch, then where the story now stands: the app draws the other path, so a
    listener hears its latest turn (an ended branch's ending is printed by the command itself)."""

    async def run(play: PlaySession, argument: str, printer: EventPrinter) -> None:
        session = play.story
        before = (session.ledger.branch, session.ledger.branch_count)
        await handler(play, argument, printer)
        if (session.ledger.branch, session.ledger.branch_count) != before and session.ending is None:
            print(file=printer.out)
            _where(session, printer.out)

    return run


def _where(session: Session, out: TextIO, resumed: str = "") -> None:
    """The turn the story stands at, whole (or the intro, when no turn stands)."""
    if not session.history:
        print_intro(session.pack, out)
        return
    latest = session.history[-1]
    print(f"{resumed}The story so far ends, at turn {latest.number}:\n", file=out)
    print(safe_text(latest.turn.narrative), file=out)


HELP = """Type what you do, then Enter. Commands:
/look-state: where you are, what you carry, and the story's stats.
/undo: take back the last turn.
/retry: play a failed or cancelled turn again.
/regenerate: another version of the latest turn.
/versions: how many versions the latest turn has.
/choose 2: hear version 2 of the latest turn, and keep it.
/branch 2: go on from after turn 2 on a new branch; the story so far is kept as a branch too.
/branches: the story's branches. /switch 1: play branch 1 again where it was left.
/help: this list.
/quit: save and leave (so does Control-D). Control-C cancels a turn being written."""

READER_COMMANDS: dict[str, MetaCommand] = {
    **META_COMMANDS,
    "/retry": _retry,
    "/versions": _versions,
    "/look-state": _look_state,
    "/help": _help,
    "/branch": _telling_where(META_COMMANDS["/branch"]),
    "/switch": _telling_where(META_COMMANDS["/switch"]),
}
"""Headless play's meta-commands and the ones a player at a prompt needs."""


def run_screen_reader(args: argparse.Namespace) -> int:
    """`storyloom play --screen-reader`: open the story, then read commands until the player quits."""
    out = sys.stdout
    try:
        settings = load_settings(args)
    except SettingsError as exc:
        print(f"storyloom: {safe_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "pace", None) is None:  # nothing is streamed: the whole turn is printed at once
        settings = replace(settings, pace=None)
    play = play_session(settings, args, out)
    if not open_play(play, out):
        return EXIT_USAGE
    assert play.session is not None and play.journal is not None and play.pack is not None
    if play.journal.broken is not None:
        play.rescue(play.journal.broken)
    _history()
    hangup = {signum: signal.signal(signum, _hang_up) for signum in (signal.SIGTERM, signal.SIGHUP)}
    code = EXIT_OK
    try:
        _opening(play, out)
        with asyncio.Runner() as runner:
            code = _read_commands(play, ReaderPrinter(out), runner)
    except _HungUp:
        code = EXIT_FAILURE
    except (OSError, SaveError) as exc:
        with contextlib.suppress(OSError):
            print(f"storyloom: {safe_text(str(exc))}", file=sys.stderr)
        code = EXIT_FAILURE
    finally:
        for signum, handler in hangup.items():
            signal.signal(signum, handler)
    code = finish(play, code)
    if play.kept and play.saved and code != EXIT_USAGE:
        with contextlib.suppress(OSError):
            print(f"Saved to {safe_text(str(play.journal.path))}.", file=out)
    return code


class _HungUp(Exception):
    """SIGTERM or SIGHUP: stop reading, close the save."""


def _hang_up(signum: int, frame: object) -> None:
    raise _HungUp(signal.Signals(signum).name)


def _history() -> None:
    """Line editing and history at the prompt, where Python has readline (not on every platform)."""
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401  # input() uses it once it is imported


def _opening(play: PlaySession, out: TextIO) -> None:
    """A new story's title and intro; a resumed one's title and the turn it stands at."""
    session = play.session
    assert session is not None and play.pack is not None
    _where(session, out, f"{safe_text(play.pack.title)}, resumed. " if session.history else "")
    if session.ending is not None:
        print_ending(session.ending.title, session.ending.text, out)
        print(f"\n{STORY_OVER[0].upper()}{STORY_OVER[1:]}.", file=out)
    print("\nType /help for the commands.", file=out, flush=True)


def _read_commands(play: PlaySession, printer: ReaderPrinter, runner: asyncio.Runner) -> int:
    """Read and play lines until /quit or the end of input; each turn's events are played on one loop."""
    out = printer.out
    while True:
        try:
            line = input(PROMPT)
        except EOFError:
            print(file=out)
            return EXIT_OK
        except KeyboardInterrupt:
            print("\nType /quit to leave.", file=out, flush=True)
            continue
        command = line.strip()
        if not command:
            continue
        try:
            if command.startswith("/"):
                name, _, argument = command.partition(" ")
                handler = READER_COMMANDS.get(name.casefold())
                if handler is None:
                    print(f"Unknown command {safe_text(name)!r}. Type /help for the commands.", file=out)
                else:
                    _cancellable(play, runner, handler(play, argument.strip(), printer))
                continue
            problem = command_too_long(command)
            if problem is not None:
                print(f"That is too long: {problem}. Nothing was played.", file=out)
            elif play.story.ending is not None:
                print(f"{STORY_OVER[0].upper()}{STORY_OVER[1:]}.", file=out)
            else:
                _cancellable(play, runner, play_turn(play.play(command), printer))
        except Stop as stop:
            return stop.code
        except VersionFailed:
            pass  # the printer said so, and the chosen version stands
        out.flush()


def _cancellable(play: PlaySession, runner: asyncio.Runner, work: Awaitable[Any]) -> None:
    """Run one command's work; Control-C meanwhile cancels the turn in flight (the session says so)."""
    loop = runner.get_loop()

    def cancel(signum: int, frame: object) -> None:
        loop.call_soon_threadsafe(play.cancel)

    before = signal.signal(signal.SIGINT, cancel)
    try:
        runner.run(_awaited(work))
    finally:
        signal.signal(signal.SIGINT, before)


async def _awaited(work: Awaitable[Any]) -> Any:
    """A command's work as the coroutine the runner runs (a handler may return any awaitable)."""
    return await work


def offer_screen_reader(out: TextIO) -> bool:
    """On a `dumb` terminal (no cursor movement: the app cannot draw), offer the plain front end."""
    print("This terminal cannot draw the full-screen game (TERM=dumb).", file=out)
    try:
        answer = input("Play with plain lines, for a screen reader? [Y/n] ")
    except (EOFError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("", "y", "yes")
