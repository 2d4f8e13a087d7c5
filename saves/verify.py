"""Rebuilding a session's committed story from its save, re-judging every commit on the way.

`rebuild` is shared by `storyloom verify` and resume: both must agree on what
a save holds, so both run each recorded commit through `storyloom.engine.rules.judge`
against the state before it and compare the resulting `state_hash` with the
recorded one. A save that fails either check is refused, never patched up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from storyloom.engine.events import (
    TurnCancelled,
    TurnCommitted,
    TurnFailed,
    TurnStarted,
    TurnUndone,
)
from storyloom.engine.lifecycle import PendingTurn, StoryEnding, story_ending
from storyloom.engine.narration import Exchange
from storyloom.engine.packs import PackError, StoryPack, load_pack
from storyloom.engine.rules import judge_data
from storyloom.engine.state import WorldState, initial_state, state_hash
from storyloom.saves.errors import InvalidCommit, PackMismatch, SaveError, SaveUnreadable
from storyloom.saves.format import Save, SaveHeader
from storyloom.saves.reader import gc_paused, load_save


@dataclass
class Rebuilt:
    """The committed story a save leads to, ready for `Session.restore`.

    Attributes:
        state: the committed state at the end of the save.
        history: the committed exchanges still standing (undone ones removed).
        undo_stack: what `Session.undo` would restore, oldest first.
        next_turn: the number the next turn gets (numbers are never reused).
        pending: a failed, cancelled or interrupted last turn that can be retried.
        commits, undos, failures, cancels, corrections: counts, for reports and listings.
        interrupted: the turn that was in flight when the save stopped (a crash or a kill), if any.
        turns: the turn number of each standing commit, in the history's order.
    """

    state: WorldState
    history: list[Exchange] = field(default_factory=list)
    undo_stack: list[tuple[WorldState, int]] = field(default_factory=list)
    next_turn: int = 1
    pending: PendingTurn | None = None
    commits: int = 0
    undos: int = 0
    failures: int = 0
    cancels: int = 0
    corrections: int = 0
    interrupted: int | None = None
    turns: list[int] = field(default_factory=list)
    pack: StoryPack | None = field(default=None, repr=False)

    @property
    def ending(self) -> StoryEnding | None:
        """The ending the story stands at, derived from its standing commits as a live session does."""
        assert self.pack is not None
        return story_ending(self.pack, self.undo_stack, self.state)

    @property
    def ending_turn(self) -> int | None:
        """The turn number of the commit that reached the ending, if the story ended."""
        ending = self.ending
        return None if ending is None else self.turns[ending.commit]

    def turns_in_story(self) -> str:
        """How many turns the story holds, and how that count comes about (see `story_turns`)."""
        return story_turns(self.commits, self.undos)


def story_turns(commits: int, undos: int) -> str:
    """The count of a save's turns, said the same way everywhere (`storyloom saves` and `verify`): the
    turns standing in the story, then how many were committed and how many of those were undone."""
    standing = commits - undos
    return f"{standing} turn{'' if standing == 1 else 's'} in the story ({commits} committed, {undos} undone)"


def open_pack(header: SaveHeader, path: Path, pack: StoryPack | None = None) -> StoryPack:
    """The pack a save was played with: the one given, else by its source or id; its digest must match.

    Raises:
        PackMismatch: the pack cannot be found, or it changed since the save was made.
    """
    if pack is None:
        pack = _find_pack(header, path)
    if pack.id != header.story_id:
        raise PackMismatch(path, f"this save is of the story {header.story_id!r}, not {pack.id!r}")
    if pack.digest != header.story_digest:
        raise PackMismatch(
            path,
            f"the story {header.story_id!r} has changed since this save was made (pack digest "
            f"{pack.digest[:12]}… now, {header.story_digest[:12]}… when saved); its turns "
            f"cannot be checked against a different world. Restore the story file the save "
            f"was played with",
        )
    return pack


def _find_pack(header: SaveHeader, path: Path) -> StoryPack:
    tried: list[str] = []
    for ref in dict.fromkeys(r for r in (header.story_source, header.story_id) if r):
        try:
            return load_pack(ref)
        except PackError as exc:
            tried.append(f"{ref}: {exc.problems[0].message if exc.problems else exc}")
    raise PackMismatch(
        path, f"the story {header.story_id!r} this save was played with cannot be found (" + "; ".join(tried) + ")"
    )


@gc_paused()
def rebuild(save: Save, pack: StoryPack) -> Rebuilt:
    """Replay a save's commits and undos over the pack's initial state, re-judging each commit.

    Raises:
        InvalidCommit: the first commit that fails the rules, leads to another state
            hash, or an undo with nothing to undo (the record is named).
    """
    built = Rebuilt(state=initial_state(pack), pack=pack)
    inputs: dict[int, TurnStarted] = {}
    in_flight: TurnStarted | None = None
    last_turn = 0
    for record in save.records:
        if record.kind == "attempt_finished":  # its output plays no part in the committed story
            last_turn = max(last_turn, record.turn or 0)
            continue
        event = record.event
        if event is None:
            continue
        last_turn = max(last_turn, event.turn)
        if isinstance(event, TurnStarted):
            inputs[event.turn] = event
            in_flight = event
        elif isinstance(event, TurnCommitted):
            _commit(save, pack, built, record.seq, record.line, event, inputs)
            in_flight = None
        elif isinstance(event, TurnUndone):
            _undo(save, built, record.seq, record.line, event)
        elif isinstance(event, TurnFailed | TurnCancelled):
            started = inputs.get(event.turn)
            if started is not None:
                built.pending = PendingTurn(event.turn, started.player_input, started.retry)
            built.failures += isinstance(event, TurnFailed)
            built.cancels += isinstance(event, TurnCancelled)
            in_flight = None
        elif event.event == "correction_started":
            built.corrections += 1
    if in_flight is not None:
        built.interrupted = in_flight.turn
        built.pending = PendingTurn(in_flight.turn, in_flight.player_input, in_flight.retry)
    built.next_turn = last_turn + 1
    return built


def _commit(
    save: Save,
    pack: StoryPack,
    built: Rebuilt,
    seq: int,
    line: int,
    event: TurnCommitted,
    inputs: dict[int, TurnStarted],
) -> None:
    started = inputs.get(event.turn)
    if started is None:
        raise InvalidCommit(
            save.path, f"record {seq} commits turn {event.turn}, which was never started", line=line, seq=seq
        )
    turn = {
        "narrative": event.narrative,
        "state_patch": list(event.state_patch),
        "suggestions": list(event.suggestions),
    }
    verdict = judge_data(turn, built.state, pack)
    if not verdict.ok:
        problems = "; ".join(f"{i.rule}: {i.message}" for i in verdict.issues)
        raise InvalidCommit(
            save.path,
            f"record {seq}: the commit of turn {event.turn} does not pass the rules "
            f"against the state before it ({problems})",
            line=line,
            seq=seq,
        )
    assert verdict.after is not None and verdict.turn is not None
    recomputed = state_hash(verdict.after)
    if recomputed != event.state_hash:
        raise InvalidCommit(
            save.path,
            f"record {seq}: the commit of turn {event.turn} leads to state "
            f"{recomputed[:12]}…, not the recorded {event.state_hash[:12]}…",
            line=line,
            seq=seq,
        )
    built.undo_stack.append((built.state, len(built.history)))
    built.state = verdict.after
    built.history.append(Exchange(started.player_input, verdict.turn))
    built.turns.append(event.turn)
    built.pending = None
    built.commits += 1


def _undo(save: Save, built: Rebuilt, seq: int, line: int, event: TurnUndone) -> None:
    if not built.undo_stack:
        raise InvalidCommit(
            save.path, f"record {seq} undoes a turn, but there is no committed turn to undo", line=line, seq=seq
        )
    state, length = built.undo_stack.pop()
    if state_hash(state) != event.state_hash:
        raise InvalidCommit(
            save.path,
            f"record {seq}: undoing leads to state {state_hash(state)[:12]}…, not the "
            f"recorded {event.state_hash[:12]}…",
            line=line,
            seq=seq,
        )
    del built.history[length:]
    del built.turns[length:]
    built.state, built.pending = state, None
    built.undos += 1


@dataclass(frozen=True)
class Report:
    """What `storyloom verify` found."""

    path: Path
    sound: bool
    readable: bool
    lines: tuple[str, ...]


@gc_paused()  # the loaded save is dropped before the collector is back: nothing left for it to scan
def verify_save(path: str | Path, pack: StoryPack | None = None) -> Report:
    """Check a save end to end: chain, version, pack digest, every commit and every state hash."""
    path = Path(path)
    lines: list[str] = [f"save: {path}"]
    try:
        save = load_save(path)
    except SaveError as exc:
        readable = not isinstance(exc, SaveUnreadable)
        lines.append(f"{'NOT SOUND' if readable else 'UNREADABLE'}: {_where(exc)}{exc.reason}")
        return Report(path, False, readable, tuple(lines))
    for warning in save.warnings:
        lines.append(f"warning: {warning}")
    header = save.header
    lines.append(
        f"story: {header.story_id} ({header.story_title}), narrator {header.narrator}"
        f"{' / ' + header.model if header.model else ''}, format version {header.version}"
    )
    lines.append(f"records: {len(save.records) + 1}, hash chain intact")
    try:
        pack = open_pack(header, path, pack)
        lines.append("pack: digest matches")
        built = rebuild(save, pack)
    except SaveError as exc:
        lines.append(f"NOT SOUND: {_where(exc)}{exc.reason}")
        return Report(path, False, True, tuple(lines))
    lines.append(
        f"turns: {built.turns_in_story()}; every commit re-validated ({built.failures} failed, "
        f"{built.cancels} cancelled, {built.corrections} corrections); every state hash matches"
    )
    if built.ending is not None:
        lines.append(f"ending: {built.ending.title} (reached at turn {built.ending_turn})")
    if built.interrupted is not None:
        lines.append(f"note: turn {built.interrupted} was in flight when the save stopped; it was never committed")
    lines.append(f"final state: {state_hash(built.state)}")
    lines.append("sound")
    return Report(path, True, True, tuple(lines))


def _where(exc: SaveError) -> str:
    if exc.seq is not None and exc.line is not None:
        return f"first bad record is {exc.seq} (line {exc.line}): "
    if exc.line is not None:
        return f"first bad record is on line {exc.line}: "
    return ""
