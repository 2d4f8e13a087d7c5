"""`storyloom` / `storyloom play` and `storyloom replay SAVE` in the Textual app: start it, then report.

The app only renders events and sends the player's intents; what it plays comes
from here: a `PlaySession` that opens, records, rescues and closes the save, whose
methods are the app's hooks.
"""

from __future__ import annotations

import argparse
import gc
import io
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from storyloom.engine.safety import safe_text
from storyloom.tui.cli.exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from storyloom.tui.session import PlaySession, SaveNotes
from storyloom.tui.settings import SettingsError, load_settings, save_theme

if TYPE_CHECKING:
    from storyloom.engine.lifecycle import Session
    from storyloom.saves.chain import PrefixHashing
    from storyloom.saves.replay import ReplayPlan
    from storyloom.tui.app import Opening


def run_app(args: argparse.Namespace) -> int:
    """`storyloom` / `storyloom play`: the UI, with the garbage collector off until its first frame.

    Loading Textual and the story makes objects by the hundred thousand and none of them
    garbage; collecting among them cost the first frame about a sixth of its CPU. The app
    turns the collector back on once it has painted (`StoryloomApp(tune_gc=True)`), and
    here whatever way it ends.
    """
    gc.disable()
    try:
        return _run_app(args)
    finally:
        gc.enable()


def _run_app(args: argparse.Namespace) -> int:
    """Load the story, narrator and save, then run the UI.

    Every session is saved (autosave): a new save in the saves folder, or `--save PATH`,
    or the save named by `--resume`.

    A new game of a built-in story on the offline narrator (plain `storyloom`) paints
    the story's intro first and loads the rest behind it (`Opening`); anything else
    (a pack file, a resumed save, a model narrator that may need its key) is loaded
    and checked before the app starts, so its errors are printed before any frame.

    Returns:
        The exit code: 0, 2 when the story, the settings or the save are wrong, 1 when
        some of the session could not be saved anywhere.
    """
    hashed = _hash_before_record(getattr(args, "resume", None))
    from storyloom.engine.builtin import builtin_opening, builtin_pack_ids

    try:
        settings = load_settings(args)
    except SettingsError as exc:
        print(f"storyloom: {safe_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    play = PlaySession(
        settings,
        story=getattr(args, "story", None),
        resume=getattr(args, "resume", None),
        save=getattr(args, "save", None),
        budget=getattr(args, "budget", None),
        interactive=True,
    )
    play.hashed = hashed
    first: Session | Opening
    resumed_story = _resumed_builtin(play) if play.resumed and sys.stdout.isatty() else None
    from storyloom.tui.app import Opening, StoryloomApp

    held = io.StringIO()
    if not play.resumed and settings.narrator == "offline" and play.source in builtin_pack_ids():
        title, intro = builtin_opening(play.source)
        first = Opening(title, intro, play.open)
    elif resumed_story is not None:  # a resumed save paints its newest turns while it is read and checked
        path, source = resumed_story
        from storyloom.saves.preview import newest_turns

        title, intro = builtin_opening(source)
        play.err = held  # its warnings are printed once the screen is gone
        first = Opening(title, intro, play.open, tuple(newest_turns(path, PREVIEW_TURNS)))
    else:
        from storyloom.engine.packs import PackError
        from storyloom.saves.errors import SaveError
        from storyloom.tui.cli.printer import print_problems

        try:
            first = play.open()
        except PackError as exc:  # a pack's and a save's text are untrusted: printed inert
            print_problems(exc, sys.stderr)
            return EXIT_USAGE
        except (SettingsError, SaveError) as exc:
            print(f"storyloom: {safe_text(str(exc))}", file=sys.stderr)
            return EXIT_USAGE
    served = getattr(args, "served", False)
    app = StoryloomApp(
        first,
        play=play,
        new_session=None if served else play.restart,  # served: a new tab is a new game, at its own address
        theme=settings.theme,
        tune_gc=True,
        list_saves=None if served else play.other_saves,  # a tab reaches only its own save
        open_save=play.switch_to,
        remember_theme=None if served else save_theme,  # served: a visitor's theme is not the owner's setting
        quit_on=(signal.SIGTERM, signal.SIGHUP),
        past=lambda: play.past,
    )
    try:
        result = app.run()
    finally:
        play.notes = SaveNotes(sys.stderr)  # the screen is gone: what happens to the save now is printed
        saved = play.close()
        _write_held(held.getvalue())
    if app.failure:
        _say(app.failure)
        return EXIT_USAGE
    if play.journal is None:  # quit before the story had loaded
        return EXIT_OK
    if not saved:
        return EXIT_FAILURE
    if play.kept:
        _say(f"saved to {play.journal.path}")
    else:
        _say("no turn was played, so no save was kept")
    return result if isinstance(result, int) else EXIT_OK


def _write_held(text: str) -> None:
    """The warnings a resumed save gave behind its preview, now the screen is gone (none after a hangup)."""
    if text:
        try:
            sys.stderr.write(text)
        except OSError:
            pass


def _say(text: str) -> None:
    """The last word on stderr; after a hangup there is no terminal to print to, and the save is closed anyway."""
    try:
        print(f"storyloom: {safe_text(text)}", file=sys.stderr, flush=True)
    except OSError:
        pass


PREVIEW_TURNS = 12
"""Newest turns of a resumed save painted while it loads: more than a 40-line screen shows."""


def _resumed_builtin(play: PlaySession) -> tuple[Path, str] | None:
    """The save being resumed and its built-in story, when both are known without reading the save whole.

    A save of a pack file (or one whose first line is not a header), or any save when the
    output is not a terminal, is read and checked before the app starts, as before, so its
    problems are printed before any frame; behind the preview, a save that fails its check
    ends the app with the same message and exit code. A save with a resume record is read and
    checked before the app too.
    """
    from storyloom.engine.builtin import builtin_pack_ids
    from storyloom.saves.preview import story_source

    assert play.resume is not None
    path = Path(play.resume)
    if str(play.resume) == "latest" or not path.is_file():  # a name in the saves folder (loads the save format)
        from storyloom.saves.errors import SaveError
        from storyloom.saves.locations import resolve_save

        try:
            path = resolve_save(play.resume)
        except (SaveError, OSError, ValueError):
            return None
    source = story_source(path) if path.is_file() else None
    return (path, source) if source in builtin_pack_ids() and not _remembered(path) else None


def _hash_before_record(ref: str | Path | None) -> PrefixHashing | None:
    """A resumed save's bytes before its resume record's offset, hashed by a thread from the start, while
    the engine and Textual load (`saves/resume_hint.py`): the resume then need not hash them itself."""
    if ref is None:
        return None
    from storyloom.saves.resume_hint import hash_before_record

    return hash_before_record(ref)


def _remembered(path: Path) -> bool:
    """Whether this machine left the save a resume record this storyloom made (`saves/resume_record.py`):
    then only the turns after it are judged, and the game opens about as fast as a preview of it would
    (before the app, whose first screen is the game's); without one, the preview shows while it is checked."""
    from storyloom.saves.locations import HEADER_MAX_BYTES
    from storyloom.saves.resume_record import remembered_offset

    try:
        with path.open("rb") as save:
            header_line = save.readline(HEADER_MAX_BYTES)
    except OSError:
        return False
    return remembered_offset(header_line) is not None


def run_replay(args: argparse.Namespace, plan: ReplayPlan, only: frozenset[int] | None = None) -> int:
    """`storyloom replay SAVE [--speed X] [--branch K]`: show the replay, then say how it went.

    `only`: the turns on one branch's path (`--branch`): the replay plays every step, and shows those.

    Returns:
        0 when everything replayed matches the record, 1 when the replay diverged.
    """
    from storyloom.saves.replay import Replayer
    from storyloom.tui.app import ReplayApp

    try:
        theme: str | None = load_settings(args).theme
    except SettingsError:
        theme = None  # the replay needs no narrator settings; a bad config only costs the theme
    app = ReplayApp(Replayer(plan), theme=theme, only=only)
    app.run()
    print(f"storyloom: {app.replay.summary()}", file=sys.stderr)
    return app.replay.exit_code
