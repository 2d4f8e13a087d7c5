"""One story being played and the save it is written to: `PlaySession`, and the narrator factory
(`create_narrator`, over the registry in `storyloom.tui.narrators`).

The Textual app and headless play open, resume, record, rescue and close a save
the same way, through one `PlaySession`; they differ only in how they tell the
player what happened to the save (`SaveNotes`: printed lines, or a notification
in the app). Every session is saved as it is played: a new save in the saves
folder (or at a given path), or the save being resumed. The journal sees each
event before anything shows it, so a commit is on disk before it shows as committed.

This module is read before the first frame: the engine and the saves layer are
imported only when a story is opened.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar

from storyloom.engine.safety import safe_text
from storyloom.tui.narrators import NARRATORS
from storyloom.tui.settings import DEFAULT_STORY, Settings, SettingsError

if TYPE_CHECKING:
    from storyloom.engine.events import AlternativeChosen, BranchStarted, BranchSwitched, Event, TurnUndone
    from storyloom.engine.lifecycle import Session
    from storyloom.engine.narration import Narrator
    from storyloom.engine.packs import StoryPack
    from storyloom.saves.chain import PrefixHashing
    from storyloom.saves.choices import SessionChoices
    from storyloom.saves.errors import SaveError
    from storyloom.saves.resume import PastTurn, Resumed
    from storyloom.saves.resume_record import ResumePoint
    from storyloom.saves.writer import Journal

_E = TypeVar("_E", bound="Event")


def create_narrator(settings: Settings, pack: StoryPack, *, interactive: bool) -> Narrator:
    """Build the narrator the settings ask for, by its entry in `storyloom.tui.narrators.NARRATORS`.

    Args:
        interactive: True in the UI, where the offline narrator streams at a reading pace;
            headless play and tests get every chunk at once.

    Raises:
        SettingsError: the narrator cannot be built (no API key, a bad option).
    """
    from storyloom.engine.narration import NarratorError

    entry = NARRATORS.get(settings.narrator)
    if entry is None:
        raise SettingsError(f"unknown narrator {settings.narrator!r}")
    try:
        return entry.build(settings, pack, interactive)
    except NarratorError as exc:
        raise SettingsError(str(exc)) from None


class SaveNotes:
    """What the player is told while a save that stopped taking writes is rescued.

    This base prints each step as a `storyloom:` line on a stream (the command line's
    way, which cannot ask where to save, so it names every place it tries); the app
    overrides it to show one notification instead.
    """

    def __init__(self, err: TextIO):
        self.err = err

    def say(self, text: str) -> None:
        """One line for the player; `text` may hold a save's or the system's words, so it is made inert."""
        print(f"storyloom: {safe_text(text)}", file=self.err)

    def failed(self, reason: SaveError) -> None:
        """The save stopped taking writes (disk full, deleted, read-only)."""
        self.say(str(reason))

    def refused(self, path: Path, reason: SaveError) -> None:
        """A place to rescue the save to did not take it either."""
        self.say(f"cannot save to {path} either ({reason.reason})")

    def moved(self, reason: SaveError | None, path: Path, *, leaving: bool = False) -> None:
        """The story so far is saved at `path`, and play goes on writing there (unless it is being left)."""
        goes_on = "" if leaving else "; play goes on there"
        self.say(f"the story so far is saved to {path} instead{goes_on} (resume it with --resume {path})")

    def not_saved(self, reason: Exception) -> None:
        """An event could not be written (a save no place takes: the rescue already said where it
        tried; or a hook such as the events file failed): play goes on in memory."""
        from storyloom.saves.errors import SaveWriteError

        if not isinstance(reason, SaveWriteError):
            self.say(f"{reason or type(reason).__name__}; play goes on, but this may not be saved")

    def lost(self) -> None:
        """No place took the save: play goes on in memory."""
        self.say("play goes on in memory; nothing more can be saved until there is room")


class PlaySession:
    """The story being played and its save, from opening to closing.

    Create it with what to play, then `open` it (in a thread behind the opening screen,
    or before the app starts). Every front end (the app, headless play, the screen reader)
    then drives the story through it, never through the engine's `Session` directly: `play`,
    `retry`, `regenerate`, `choose`, `undo`, `branch`, `switch` and `cancel` are the player's
    intents, and each event they give is written to the save (and handed to `on_event`) before
    the front end sees it, so a commit is on disk before it shows as committed; the engine
    itself refuses a command after the ending. `export_markdown` is `storyloom export` of the
    save being played. `restart` and `switch_to` replace the story in place (the palette's "New
    game" and "Open save"); `close` once at the end. A session made elsewhere (tests, a replay)
    is wrapped with `around`, with or without a journal.

    Args:
        settings: the effective settings (narrator, budget, pace…).
        story: a built-in story id or a pack file (a new game).
        resume: a save to continue instead (a path, a file name in the saves folder, or `latest`).
        save: where a new game's save goes (default: a new file in the saves folder).
        budget: corrections per turn for a resumed save (default: the save's own).
        interactive: the UI (the offline narrator streams at a reading pace) or not.
        err: where notes outside the UI go (warnings, the save's fate at close).
        on_event: called with every event after the save has it and before any front end shows
            it (headless play's `--events` file; tests).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        story: str | None = None,
        resume: str | Path | None = None,
        save: str | Path | None = None,
        budget: int | None = None,
        interactive: bool = False,
        err: TextIO | None = None,
        on_event: Callable[[Event], object] | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.source = story or DEFAULT_STORY
        """How the story was named (a built-in id or a pack path): a new game starts it again."""
        self.resume = resume
        self.hashed: PrefixHashing | None = None
        """The resumed save's bytes before its resume record's offset, hashed by a thread since the program
        started (`storyloom.saves.chain.PrefixHashing`): `open` takes the digest rather than hash them again."""
        self.save_path = save
        self.budget = budget
        self.interactive = interactive
        self.err = err or sys.stderr
        self.notes = SaveNotes(self.err)
        """How the player hears about a rescued save (the app replaces it while it runs)."""
        self.session: Session | None = None
        self.journal: Journal | None = None
        self.pack: StoryPack | None = None
        self.kept = True
        """False once `close` removed a save the game made and no turn was played in."""
        self.saved = True
        """False once `close` found records that could not be saved anywhere: nothing may say "saved"."""
        self.past: tuple[PastTurn, ...] = ()
        """The turns of the save being continued, as they were played (none for a new game)."""
        self.on_event = on_event
        self._closed = threading.Event()
        self._point: ResumePoint | None = None
        """Where the resume of the save being played left judging it (for its resume record at close)."""

    @classmethod
    def around(
        cls,
        session: Session | None,
        journal: Journal | None = None,
        *,
        err: TextIO | None = None,
        on_event: Callable[[Event], object] | None = None,
    ) -> PlaySession:
        """A play session for a session (and journal) made elsewhere: tests, tools, a replay (no journal)."""
        play = cls(err=err, on_event=on_event)
        play.session, play.journal = session, journal
        play.pack = session.pack if session is not None else None
        return play

    # -- the player's intents: every event is recorded before any front end shows it

    @property
    def story(self) -> Session:
        """The story being played (what the front ends read to draw it; they change it only through here)."""
        assert self.session is not None, "the play session is not open"
        return self.session

    def play(self, command: str) -> AsyncIterator[Event]:
        """Play a player's command as a new turn.

        Raises:
            StoryOver: the story has reached an ending (undo takes it back).
            CommandTooLong: the command is over the limit; nothing is played.
        """
        return self._recorded(self.story.play(command))

    def retry(self) -> AsyncIterator[Event]:
        """Play the failed or cancelled turn again (see `Session.retry`)."""
        return self._recorded(self.story.retry())

    def regenerate(self) -> AsyncIterator[Event]:
        """Another version of the latest committed turn (see `Session.regenerate`)."""
        return self._recorded(self.story.regenerate())

    def cancel(self) -> None:
        """Cancel the turn in flight (its cancellation is recorded by the turn's own events)."""
        if self.session is not None:
            self.session.cancel()

    def choose(self, version: int) -> AlternativeChosen | None:
        """Make version `version` of the latest turn the chosen one; None when there is no such version."""
        return self._recorded_one(self.story.choose(version))

    def undo(self) -> TurnUndone | None:
        """Take back the latest committed turn; None when none can be (`Session.no_undo` says why)."""
        return self._recorded_one(self.story.undo())

    def branch(self, turn: int) -> BranchStarted:
        """Continue from after `turn` on a new branch (raises `BranchRefused`, saying why)."""
        event = self.story.branch(turn)
        self.note(event)
        return event

    def switch(self, branch: int) -> BranchSwitched:
        """Play branch `branch` again where it was left (raises `BranchRefused`, saying why)."""
        event = self.story.switch(branch)
        self.note(event)
        return event

    def export_markdown(self) -> str:
        """The story being played as `storyloom export` writes it: read back from its save, so the
        two are the same text (the branch being played, every turn, the ending).

        Raises:
            SaveError: the story is not saved (or its save cannot be read back): nothing to export.
        """
        from storyloom.saves.errors import SaveError
        from storyloom.saves.export import saved_markdown

        if self.journal is None:
            raise SaveError(Path("-"), "this story is not being saved, so there is nothing to export")
        return saved_markdown(self.journal.path)

    async def _recorded(self, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        try:
            async for event in events:
                self.note(event)
                yield event
        finally:
            await events.aclose()  # type: ignore[attr-defined]

    def _recorded_one(self, event: _E | None) -> _E | None:
        if event is not None:
            self.note(event)
        return event

    def note(self, event: Event) -> None:
        """Hand one event to the save, then to `on_event`. A save that no place takes, or an `on_event`
        that fails, is told to the player once by the notes (`SaveNotes.not_saved`); play goes on in memory."""
        try:
            if self.journal is not None:
                self.record(event)
            if self.on_event is not None:
                self.on_event(event)
        except Exception as exc:  # the player's story goes on, whatever the disk or a hook does
            self.notes.not_saved(exc)

    @property
    def resumed(self) -> bool:
        """True when this play continues a save rather than starting a story."""
        return bool(self.resume)

    def open(self) -> Session:
        """Load the story, narrator and save (a resumed one, or a new one); thread-safe against `close`.

        Raises:
            PackError: the story pack is broken (its `problems` say how).
            SettingsError: the narrator cannot be built.
            SaveError: the save cannot be read, continued or created.
        """
        if self.resume:
            resumed = self._resume(self.resume, budget=self.budget)
            for warning in resumed.warnings:
                print(f"storyloom: warning: {safe_text(warning)}", file=self.err)
            return self._take(resumed)
        from storyloom.engine.packs import load_pack
        from storyloom.saves.errors import SaveError

        pack = load_pack(self.source)
        session, journal = self._start(pack, path=self.save_path)
        if self._closed.is_set():  # the player quit while it loaded: leave no empty save behind
            close_journal(journal)
            raise SaveError(journal.path, "the player quit before the story had loaded")
        self.pack, self.journal, self.session = pack, journal, session
        return session

    def restart(self) -> Session:
        """A fresh session of the same story in a new save; the save being left is closed."""
        assert self.pack is not None and self.journal is not None
        self._leave(self.journal)
        self.session, self.journal = self._start(self.pack)
        self.past, self.save_path = (), None
        return self.session

    def switch_to(self, path: Path) -> Session:
        """Continue another save in place of this one (raises, with a message the player can act on)."""
        assert self.journal is not None
        if path.resolve() == self.journal.path.resolve():
            raise ValueError(f"{path.name} is the story you are playing now")
        resumed = self._resume(path)
        self._leave(self.journal)
        return self._take(resumed)

    def other_saves(self) -> list[Path]:
        """The saves in the saves folder other than the one being written."""
        from storyloom.saves.locations import list_saves

        current = self.journal.path.resolve() if self.journal is not None else None
        return [p for p in list_saves() if p.resolve() != current]

    def record(self, event: Event) -> None:
        """Write one event to the save; when the save stops taking writes, rescue it elsewhere.

        Raises:
            SaveWriteError: no place takes the save (the notes have said so); play may go on in memory.
        """
        from storyloom.saves.errors import SaveWriteError

        assert self.journal is not None
        try:
            self.journal.record(event)
        except SaveWriteError as exc:
            if not self.rescue(exc):
                raise

    def rescue(self, reason: SaveError | None = None, *, leaving: bool = False) -> bool:
        """Write the story so far to the first place that takes it; True when it is saved again.
        `leaving`: the save is being closed (quit, a new game, another save), so play does not go on there."""
        from storyloom.saves.writer import rescue_save

        assert self.journal is not None
        if reason is not None:
            self.notes.failed(reason)
        path = rescue_save(self.journal, self.notes.refused)
        if path is None:
            self.notes.lost()
            return False
        self.notes.moved(reason, path, leaving=leaving)
        return True

    def close(self) -> bool:
        """Close the save; False, after saying so once, when some records could not be saved anywhere."""
        self._closed.set()
        journal = self.journal
        if journal is None:  # never opened (or quit before it loaded)
            return True
        saved = self.saved = self._secure(journal)
        if not saved:
            print(f"storyloom: {safe_text(self._lost(journal))}", file=self.err)
        if self.save_path is None:  # not a file the player named: a new save is kept once a turn is played
            self.kept = close_journal(journal)
        else:
            journal.close()
        if saved and self.kept:
            self._remember(journal)
        return saved

    def _remember(self, journal: Journal) -> None:
        """Leave the save's resume record, so its next resume judges only what this session wrote."""
        from storyloom.saves.resume import remember

        if self.pack is not None and journal.broken is None and not journal.unsaved:
            remember(journal.path, self.pack, self._point, new=not journal.reopened, prefix=journal.prefix_hashed)
        self._point = None

    def _secure(self, journal: Journal) -> bool:
        """Before a save is left (quit, a new game, another save): whether its file holds the session,
        read back; when it does not, the session is written from memory to a rescue and the player told
        where. False when some records could not be saved anywhere."""
        was_broken = journal.broken
        found = journal.check()  # deleted, replaced or overwritten since the last record: not saved
        return found is None or self.rescue(None if was_broken else found, leaving=True)

    @staticmethod
    def _lost(journal: Journal) -> str:
        return (
            f"{journal.unsaved} record(s) of this session could not be saved anywhere "
            f"(the last save written is {journal.path})"
        )

    def _leave(self, journal: Journal) -> None:
        """Close the save being left for another story (a new game, another save), secured first."""
        saved = self._secure(journal)
        if not saved:
            self.notes.say(self._lost(journal))
        if close_journal(journal) and saved:
            self._remember(journal)

    def _start(self, pack: StoryPack, *, path: str | Path | None = None) -> tuple[Session, Journal]:
        from storyloom.saves.resume import start_new

        narrator = create_narrator(self.settings, pack, interactive=self.interactive)
        return start_new(pack, narrator, self.settings.choices(), source=self.source, path=path)

    def _resume(self, ref: str | Path, *, budget: int | None = None) -> Resumed:
        from storyloom.saves.resume import resume_with

        def narrator(pack: StoryPack, kept: SessionChoices) -> Narrator:
            return create_narrator(self.settings.with_choices(kept), pack, interactive=self.interactive)

        hashed, self.hashed = self.hashed, None
        return resume_with(ref, narrator, self.settings.choices(), budget=budget, hashed=hashed)

    def _take(self, resumed: Resumed) -> Session:
        """Play the resumed save from now on; a new game of it starts the story it was made from."""
        self.pack, self.journal, self.session = resumed.pack, resumed.journal, resumed.session
        self.past, self._point = resumed.past, resumed.point
        self.source = resumed.header.story_source or resumed.pack.id
        return resumed.session


def close_journal(journal: Journal) -> bool:
    """Close the save being left; a save started at launch that never got a turn is removed.

    Every launch starts a new save (so a crash in the first turn still leaves the turn's
    record, and the save is locked from the start), so a player who quits, opens another
    save or starts a new game right away would otherwise leave an empty save behind in the
    saves list. Only a new save holding nothing but its header is removed, while still
    locked; anything with a record of a turn (even a cancelled one) stays.

    Returns:
        False when the save was removed.
    """
    kept = True
    path = journal.path
    if not journal.reopened and not journal.closed and not journal.unsaved:
        try:
            lines = [line for line in path.read_bytes().splitlines() if line.strip()]
        except OSError:
            lines = []
        if len(lines) == 1:
            with contextlib.suppress(OSError):
                path.unlink()  # still locked by us: nobody else can have appended to it
                kept = False
    journal.close()
    return kept
