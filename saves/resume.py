"""Continuing a saved story: rebuild its session from the commits, then keep journaling into it.

A resumed session is the same story the player left: the committed state,
the model's history of committed exchanges, the undo stack (undo works across
a resume) and the next turn number. Every commit is re-judged on the way in
(`storyloom.saves.verify.rebuild`), so a save that was tampered with is refused rather
than played.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storyloom.engine.builtin import builtin_pack_ids
from storyloom.engine.events import Event
from storyloom.engine.lifecycle import Session
from storyloom.engine.narration import Narrator
from storyloom.engine.packs import StoryPack
from storyloom.saves.choices import SessionChoices
from storyloom.saves.errors import SaveWriteError
from storyloom.saves.format import Record, Save, SaveHeader
from storyloom.saves.locations import new_save_path, rescue_of, resolve_save
from storyloom.saves.verify import Rebuilt, open_pack, rebuild
from storyloom.saves.writer import Journal


@dataclass(frozen=True)
class PastTurn:
    """A turn standing in a resumed story, as it was played: what the screen shows of it besides its
    prose (which is in the session's history, in the same order).

    Attributes:
        turn: its number in the save.
        events: the recorded events of the try that committed it, when it had issues (a rejected
            attempt or a correction), for its details screen; empty for a clean turn.
    """

    turn: int
    events: tuple[Event, ...] = ()


_ISSUES = {"validation_failed", "turn_failed"}


def past_turns(save: Save, built: Rebuilt) -> tuple[PastTurn, ...]:
    """The standing turns of a save, each with the events of the try that committed it if it had
    issues (the events live play showed in its details). Only those turns' records are made into
    events: a clean turn's attempts are left as read."""
    tries: dict[int, list[Record]] = {}
    for record in save.records:
        if record.kind == "turn_started":
            tries[record.turn or 0] = [record]
        elif record.turn is not None and record.turn in tries:
            tries[record.turn].append(record)
    past: list[PastTurn] = []
    for turn in built.turns:
        records = tries.get(turn, [])
        if any(record.kind in _ISSUES for record in records):
            past.append(PastTurn(turn, tuple(event for r in records if (event := r.event) is not None)))
        else:
            past.append(PastTurn(turn))
    return tuple(past)


@dataclass
class Resumed:
    """A session rebuilt from a save, and the journal that continues it.

    Attributes:
        session: ready to `play`; its state, history, undo stack and next turn come from the save,
            and so do the latest turn's versions while it can still change (`session.versions`;
            `session.showing()` is the event that shows the chosen one, `session.choose(n)` browses).
        journal: open for append and locked; feed it the session's events.
        save: the save as loaded (its warnings, e.g. a dropped torn line, are for the player).
        rebuilt: what the save held (counts, the interrupted turn if the save stopped mid-turn).
        past: the standing turns as they were played (numbers, and the details of those with issues).
    """

    session: Session
    journal: Journal
    save: Save
    rebuilt: Rebuilt
    pack: StoryPack
    notes: tuple[str, ...] = ()
    """What the player should know beyond the save's own warnings (it goes on in its rescue)."""
    past: tuple[PastTurn, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.notes + self.save.warnings


def restore_session(
    save: Save, narrator: Narrator, *, pack: StoryPack | None = None, budget: int | None = None, **session_options: Any
) -> tuple[Session, Rebuilt, StoryPack]:
    """A `Session` in the state a loaded save ends in (no journal; used by resume and replay).

    Raises:
        PackMismatch: the story cannot be found or changed since the save was made.
        InvalidCommit: a recorded commit does not pass the rules again.
    """
    pack = open_pack(save.header, save.path, pack)
    built = rebuild(save, pack)
    session = Session(
        pack,
        narrator,
        budget=save.header.budget if budget is None else budget,
        next_turn=built.next_turn,
        **session_options,
    )
    session.restore(built.state, tuple(built.history), list(built.undo_stack), built.versions)
    session.pending = built.pending
    return session, built, pack


def resume(
    ref: str | Path,
    narrator: Narrator,
    *,
    pack: StoryPack | None = None,
    budget: int | None = None,
    **session_options: Any,
) -> Resumed:
    """Reopen a save (a path or `latest`) and rebuild its session, ready to play on with `narrator`.

    The save is locked for writing first, so two processes never continue one
    save, and read once (`Journal.open_for_append`). A turn that was in flight
    when the save stopped (a crash) is closed with a `turn_cancelled` record
    marked `interrupted`, so it can be retried.

    Raises:
        SaveLocked: another storyloom is writing it.
        SaveError: the save is damaged, of an unknown version, or its story changed (file untouched).
    """
    return _reopen(ref, lambda _pack, _header: narrator, pack=pack, budget=budget, **session_options)


def resume_with(
    ref: str | Path,
    make_narrator: Callable[[StoryPack, SessionChoices], Narrator],
    choices: SessionChoices,
    *,
    budget: int | None = None,
    **session_options: Any,
) -> Resumed:
    """`resume`, building the narrator for the save's own story (the UI and headless play use this).

    Args:
        make_narrator: given the save's pack and the player's choices as they carry on into
            this save (`SessionChoices.continuing`: the offline narrator keeps the save's seed
            and fault rate), the narrator to continue with.
        choices: what the player chose now.

    Raises:
        SaveError: see `resume`; also whatever `make_narrator` raises (the save is then left unlocked).
    """
    return _reopen(
        ref, lambda pack, header: make_narrator(pack, choices.continuing(header)), budget=budget, **session_options
    )


def _reopen(
    ref: str | Path,
    make_narrator: Callable[[StoryPack, SaveHeader], Narrator],
    *,
    pack: StoryPack | None = None,
    budget: int | None = None,
    **session_options: Any,
) -> Resumed:
    """Lock and read the save once, then build its narrator and session and note the resume in it.

    A save that a rescue supersedes (it stopped taking writes and was written whole elsewhere)
    is continued in its rescue, which holds all of it and the turns after: playing on in the
    old file would fork the story.
    """
    path = resolve_save(ref)
    notes: tuple[str, ...] = ()
    rescue = rescue_of(path)
    if rescue is not None:
        notes = (
            f"{path} stopped taking writes and its story was rescued to {rescue}, which holds "
            f"all of it and the turns played after; continuing there",
        )
        path = rescue
    journal = Journal.open_for_append(path)
    try:
        save = journal.loaded
        assert save is not None
        pack = open_pack(save.header, save.path, pack)
        narrator = make_narrator(pack, save.header)
        session, built, pack = restore_session(save, narrator, pack=pack, budget=budget, **session_options)
        try:
            journal.note_resumed(narrator)
            if built.interrupted is not None:
                journal.record_interrupted(built.interrupted)
        except SaveWriteError:
            pass  # the records stay in memory; `journal.broken` tells the caller, who can `save_as` elsewhere
    except BaseException:
        journal.close()
        raise
    return Resumed(session, journal, save, built, pack, notes, past_turns(save, built))


def header_for(
    pack: StoryPack, narrator: Narrator, choices: SessionChoices | None = None, *, source: str | None = None
) -> SaveHeader:
    """A save header for a new session: only the player's `choices` are recorded (never a key)."""
    choices = choices or SessionChoices()
    return SaveHeader.for_session(
        pack, narrator, source=source, seed=choices.seed, budget=choices.budget, faults=choices.faults
    )


def start_new(
    pack: StoryPack,
    narrator: Narrator,
    choices: SessionChoices | None = None,
    *,
    source: str | None = None,
    path: str | Path | None = None,
    **session_options: Any,
) -> tuple[Session, Journal]:
    """A new session with its save: at `path`, or a new file in the saves folder (autosave is the default).

    Args:
        choices: what the player chose (seed, fault rate, budget); the defaults when None.
        source: how the player named the story (a built-in id or a file path); a
            file path is stored absolute so the save resumes from any folder.

    Raises:
        SaveExists: `path` already holds a file.
        SaveWriteError: the save cannot be created.
    """
    if source is not None and source not in builtin_pack_ids() and Path(source).is_file():
        source = str(Path(source).resolve())
    header = header_for(pack, narrator, choices, source=source)
    journal = Journal.create(Path(path) if path else new_save_path(pack.id), header)
    session = Session(pack, narrator, budget=header.budget, **session_options)
    return session, journal
