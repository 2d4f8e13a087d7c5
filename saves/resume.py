"""Continuing a saved story: rebuild its session from the commits, then keep journaling into it.

A resumed session is the same story the player left: the committed state,
the model's history of committed exchanges, the undo stack (undo works across
a resume) and the next turn number. Every commit is re-judged on the way in
(`storyloom.saves.rebuild.rebuild`), so a save that was tampered with is refused rather
than played.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storyloom.engine.builtin import builtin_pack_ids
from storyloom.engine.events import Event
from storyloom.engine.files import open_regular
from storyloom.engine.ledger import StoryLedger
from storyloom.engine.lifecycle import Session
from storyloom.engine.limits import HISTORY_TURNS, UNDO_TURNS
from storyloom.engine.narration import Exchange, Narrator
from storyloom.engine.packs import StoryPack
from storyloom.saves import resume_record
from storyloom.saves.chain import PrefixHashing, last_line, prefix_digest
from storyloom.saves.choices import SessionChoices
from storyloom.saves.errors import SaveWriteError
from storyloom.saves.format import Record, SaveHeader
from storyloom.saves.locations import HEADER_MAX_BYTES, new_save_path, rescue_of, resolve_save
from storyloom.saves.reader import NotStreamable, ReadFrom, gc_paused, open_stream_at
from storyloom.saves.rebuild import Rebuilt, judge_records
from storyloom.saves.resume_record import KeptRecord, ResumePoint
from storyloom.saves.verify import open_pack
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
    versions: tuple[int, int] | None = None
    """(the chosen version, how many) for a turn that got other versions, fixed since by the next
    command played (even one cancelled); None for a turn of one version."""


_ISSUES = {"validation_failed", "turn_failed"}
KEPT_TRIES = 2 * HISTORY_TURNS + UNDO_TURNS
"""Turns whose latest try `_Tries` keeps while a save is read: enough for every turn the session's
history can hold after a resume, and after undos back through the undo stack."""


class _Tries:
    """The records of the latest try of the latest turns, kept as a save is read (`watch`), so the
    standing turns a resumed screen shows can have their details (`past`) without a second reading
    and without keeping every turn's records."""

    def __init__(self, kept: dict[int, list[Record | KeptRecord]] | None = None) -> None:
        self._tries: dict[int, list[Record | KeptRecord]] = {} if kept is None else kept

    def watch(self, records: Iterable[Record]) -> Iterator[Record]:
        for record in records:
            turn = record.turn
            if record.kind == "turn_started" and turn is not None:
                self._tries.pop(turn, None)
                self._tries[turn] = [record]
                if len(self._tries) > KEPT_TRIES:
                    del self._tries[next(iter(self._tries))]
            elif turn is not None and turn in self._tries:
                self._tries[turn].append(record)
            yield record

    @property
    def kept(self) -> dict[int, list[Record | KeptRecord]]:
        """The tries kept, as a resume record holds them (each record's kind, turn and data as written)."""
        return {turn: [KeptRecord.of(r) for r in records] for turn, records in self._tries.items()}

    def past(self, history: Iterable[Exchange], ledger: StoryLedger) -> tuple[PastTurn, ...]:
        """The turns of `history`, each with the events of the try that committed it if it had issues
        (the events live play showed in its details), and its versions as the save's `ledger` (the
        newest `KEPT_TRIES` turns held) says. Only those turns' records are made into events."""
        versions = {t.turn: (t.chosen, len(t.versions)) for t in ledger.turns() if len(t.versions) > 1}
        past: list[PastTurn] = []
        for exchange in history:
            records = self._tries.get(exchange.number, [])
            if any(record.kind in _ISSUES for record in records):
                events = tuple(e for r in records if (e := r.event) is not None)
                past.append(PastTurn(exchange.number, events, versions.get(exchange.number)))
            else:
                past.append(PastTurn(exchange.number, versions=versions.get(exchange.number)))
        return tuple(past)


@dataclass
class Resumed:
    """A session rebuilt from a save, and the journal that continues it.

    Attributes:
        session: ready to `play`; its state, history, undo stack and next turn come from the save,
            and so do the latest turn's versions while it can still change (`session.versions`;
            `session.showing()` is the event that shows the chosen one, `session.choose(n)` browses).
        journal: open for append and locked; feed it the session's events.
        header: the save's header.
        rebuilt: what the save held (counts, the interrupted turn if the save stopped mid-turn).
        past: the turns of the session's history as they were played (numbers, and the details of
            those with issues).
    """

    session: Session
    journal: Journal
    header: SaveHeader
    rebuilt: Rebuilt
    pack: StoryPack
    notes: tuple[str, ...] = ()
    """What the player should know beyond the save's own warnings (it goes on in its rescue)."""
    past: tuple[PastTurn, ...] = ()
    point: ResumePoint | None = None
    """Where judging the save stood at its last record read, after a full check (for its resume
    record at close; None when it was read on from its record, which is read again then)."""

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.notes + self.journal.warnings


def restored(pack: StoryPack, narrator: Narrator, built: Rebuilt, budget: int, **session_options: Any) -> Session:
    """A `Session` in the state a rebuilt save ends in (no journal)."""
    session = Session(pack, narrator, budget=budget, next_turn=built.ledger.next_turn, **session_options)
    session.restore(built.story())
    session.pending = built.pending
    return session


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
    hashed: PrefixHashing | None = None,
    **session_options: Any,
) -> Resumed:
    """`resume`, building the narrator for the save's own story (the UI and headless play use this).

    Args:
        make_narrator: given the save's pack and the player's choices as they carry on into
            this save (`SessionChoices.continuing`: the offline narrator keeps the save's seed
            and fault rate), the narrator to continue with.
        choices: what the player chose now.
        hashed: the save's bytes before its resume record's offset, hashed by a thread since the
            program started (`Journal.read_from`).

    Raises:
        SaveError: see `resume`; also whatever `make_narrator` raises (the save is then left unlocked).
    """
    return _reopen(
        ref,
        lambda pack, header: make_narrator(pack, choices.continuing(header)),
        budget=budget,
        hashed=hashed,
        **session_options,
    )


def _reopen(
    ref: str | Path,
    make_narrator: Callable[[StoryPack, SaveHeader], Narrator],
    *,
    pack: StoryPack | None = None,
    budget: int | None = None,
    hashed: PrefixHashing | None = None,
    **session_options: Any,
) -> Resumed:
    """Lock the save and read it once, a record at a time, rebuilding its story as it is read; then
    build its narrator and session and note the resume in it.

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
        header = journal.header
        assert header is not None
        pack = open_pack(header, path, pack)
        narrator = make_narrator(pack, header)
        point = resume_record.load(journal.first_line, pack, header.rules)
        try:
            built, tries, point = _rebuilt(journal, pack, header.rules, point, hashed)
        except NotStreamable:  # a record in an older shape: read whole, from the start
            built, tries, point = _rebuilt(journal, pack, header.rules, None)
        budget = header.budget if budget is None else budget
        session = restored(pack, narrator, built, budget, rules=header.rules, **session_options)
        try:
            journal.note_resumed(narrator)
            if built.interrupted is not None:
                journal.record_interrupted(built.interrupted)
        except SaveWriteError:
            pass  # the records stay in memory; `journal.broken` tells the caller, who can `save_as` elsewhere
    except BaseException:
        journal.close()
        raise
    past = tries.past(session.history, built.ledger)
    return Resumed(session, journal, header, built, pack, notes, past, point)


def _rebuilt(
    journal: Journal, pack: StoryPack, rules: int, point: ResumePoint | None, hashed: PrefixHashing | None = None
) -> tuple[Rebuilt, _Tries, ResumePoint | None]:
    """Judge the save's records (only those after `point`, when its record still holds for the file),
    and after a full check that ends settled, where judging ends (the save's resume record from now on)."""
    start, tries = None, _Tries()
    if point is not None and journal.read_from(point.at, point.sha256, point.progress.built.ledger, hashed=hashed):
        start, tries = point.progress, _Tries(point.tries)
    with gc_paused():
        progress = judge_records(
            journal.path,
            tries.watch(journal.records()),
            pack,
            rules=rules,
            ledger=StoryLedger(keep=KEPT_TRIES),
            start=start,
        )
    read = journal.read_to  # None when read on from a record: that record is read again at close
    if read is None or not progress.settled:
        return progress.built, tries, None
    ended = ResumePoint(read[0], read[1], progress, tries.kept)
    resume_record.store(journal.first_line, pack, rules, ended)  # now: a crash later still leaves it
    return progress.built, tries, ended


def remember(
    path: Path,
    pack: StoryPack,
    point: ResumePoint | None = None,
    *,
    new: bool = False,
    prefix: tuple[int, hashlib._Hash] | None = None,
) -> None:
    """Write the resume record of a save whose session closed (the app, headless play): where judging
    stands at its last record, judged on from `point` (where its resume left it), else from its resume
    record, else, for a save this session created (`new`), from its start: it costs judging the records
    written since, never the whole of a long save at quit. Nothing is written when the save does not
    end settled, and nothing here is ever an error: the record is only a shortcut (a save that no
    longer reads or judges keeps none; its resume says why). `prefix`: (size, sha256 so far) of the
    file's first bytes as just read (`Journal.prefix_hashed`), so that they are not hashed again."""
    try:
        fd = open_regular(path)
    except OSError:
        return
    try:
        first = last_line(fd, os.pread(fd, HEADER_MAX_BYTES, 0).find(b"\n") + 1)
        rules = open_stream_at(path, fd).header.rules
        point = point or resume_record.load(first, pack, rules)
        hashed, start, tries, at = hashlib.sha256(), None, _Tries(), None
        if point is not None and (held := _hashed_before(fd, point, prefix)) is not None:
            hashed, start, tries, at = held, point.progress, _Tries(point.tries), point.at
        elif not new:
            return
        stream = open_stream_at(path, fd, keep=hashed.update, at=at)
        with gc_paused():
            progress = judge_records(
                path, tries.watch(stream.records()), pack, rules=rules, ledger=StoryLedger(keep=KEPT_TRIES), start=start
            )
        if progress.settled:
            ended = ReadFrom(stream.good_size, stream.last_seq, stream.last_hash)
            resume_record.store(first, pack, rules, ResumePoint(ended, hashed.hexdigest(), progress, tries.kept))
    except Exception:  # noqa: BLE001, S110 - see above
        pass
    finally:
        os.close(fd)


def _hashed_before(fd: int, point: ResumePoint, prefix: tuple[int, hashlib._Hash] | None) -> hashlib._Hash | None:
    """The sha256 so far of the file's bytes before `point`, when they hash as it says, else None; taken
    from `prefix` when that is those bytes, already read."""
    if prefix is not None and prefix[0] == point.at.offset:
        hashed = prefix[1].copy()
    else:
        hashed = hashlib.sha256()
        prefix_digest(fd, point.at.offset, hashed)
    return hashed if hashed.hexdigest() == point.sha256 else None


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
