"""Rebuilding a session's committed story from its save, re-judging every commit on the way.

`rebuild` is the one judging reader of a save, shared by `storyloom verify`, replay, export and
resume: all must agree on what a save holds, so each recorded commit goes through
`storyloom.engine.rules.judge` against the state before it, its resulting `state_hash` is
compared with the recorded one, and the commit is compared with what the model's recorded answer
for its turn gives (`saves/answers.py`). A save that fails any check is refused, with the same
words by every command, never patched up.

Other versions of a turn are re-judged the same way, each against the state before
that turn (never the state after an earlier version), and each recorded choice
must name a committed version and lead to its state hash. A branch is judged from its fork.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from storyloom.engine.events import (
    AlternativeChosen,
    AlternativeStarted,
    BranchStarted,
    BranchSwitched,
    Event,
    TurnCancelled,
    TurnCommitted,
    TurnFailed,
    TurnStarted,
    TurnUndone,
)
from storyloom.engine.ledger import StoryLedger, apply
from storyloom.engine.lifecycle import (
    Alternative,
    CommittedStory,
    PendingTurn,
    StoryEnding,
    Versions,
    ending_of,
    remembered,
)
from storyloom.engine.limits import UNDO_TURNS, command_too_long
from storyloom.engine.narration import Exchange
from storyloom.engine.packs import StoryPack
from storyloom.engine.rules import RULE_SET, commit_rules, judge_data
from storyloom.engine.state import WorldState, initial_state, state_hash
from storyloom.engine.words import plural
from storyloom.saves.answers import check_answer
from storyloom.saves.errors import InvalidCommit
from storyloom.saves.format import TALLIED, TALLY, Record, Save, Tally
from storyloom.saves.reader import gc_paused


@dataclass
class Rebuilt:
    """The committed story a save leads to, followed record by record as a live session follows it.

    It holds what a session holds, bounded the same way (the model's history, `UNDO_TURNS` states,
    the latest turn's versions), never the whole story: any save is rebuilt in the same memory.

    Attributes:
        state: the committed state at the end of the save.
        history: the model's history of standing exchanges, as the session had it (`remembered`).
        undo_stack: what `Session.undo` would restore, oldest first: (state before, history before).
        ledger: the story as the one reducer of the event log folds it (counts, the turn in flight).
        versions: the latest turn's committed versions and the chosen one, while it can still
            change (the next command was not played yet); None once it is fixed.
        ending: the ending the story stands at, followed as a live session follows it.
        refused_today, refused_notes: for verify of a save played under older rules, how many commits
            today's rules would refuse, and the first few (turn and rule ids).
    """

    state: WorldState
    history: tuple[Exchange, ...] = ()
    undo_stack: deque[tuple[WorldState, tuple[Exchange, ...]]] = field(default_factory=lambda: deque(maxlen=UNDO_TURNS))
    ledger: StoryLedger = StoryLedger(keep=UNDO_TURNS)
    versions: Versions | None = None
    ending: StoryEnding | None = None
    refused_today: int = 0
    refused_notes: list[str] = field(default_factory=list)
    fixed_versions: deque[Versions | None] = field(default_factory=lambda: deque(maxlen=UNDO_TURNS))
    """Beside `undo_stack`: the versions each commit fixed, which an undo opens again (as `Session` does)."""
    fixing: Versions | None = None
    """The versions the command in flight fixed, until it commits."""
    parked: dict[int, CommittedStory] = field(default_factory=dict)
    """The branches not being played, each where it was left (as `Session` parks them)."""
    digest: str | None = None
    """The state hash of `state` once a record has proven it (a commit, a choice or an undo), so a turn
    that changes nothing is not hashed again."""

    @property
    def standing(self) -> int:
        """How many commits stand in the story (committed, less those undone)."""
        return self.ledger.standing

    @property
    def pending(self) -> PendingTurn | None:
        """A failed, cancelled or interrupted last turn that can be retried."""
        turn = self.ledger.retryable
        return None if turn is None else PendingTurn(turn.turn, turn.player_input, turn.retry)

    @property
    def interrupted(self) -> int | None:
        """The turn that was in flight when the save stopped (a crash or a kill), if any."""
        return None if (flight := self.ledger.in_flight) is None else flight.turn

    @property
    def ending_turn(self) -> int | None:
        """The turn number of the commit that reached the ending, if the story ended."""
        return None if self.ending is None else self.ending.turn

    def story(self) -> CommittedStory:
        """What a session continues from (`Session.restore`)."""
        return CommittedStory(
            self.state,
            self.history,
            tuple(self.undo_stack),
            self.standing,
            self.versions,
            self.ending,
            tuple(self.fixed_versions),
            ledger=self.ledger,
            parked=tuple(self.parked.items()),
        )

    def end_of(self, branch: int) -> tuple[WorldState, StoryEnding | None]:
        """The world and the ending branch `branch` stands at (the one played last, or one parked)."""
        if branch == self.ledger.branch:
            return self.state, self.ending
        story = self.parked[branch]
        return story.state, story.ending

    def here(self) -> CommittedStory:
        """The branch being played, where it stands (to park it while another is played)."""
        return CommittedStory(
            self.state,
            self.history,
            tuple(self.undo_stack),
            self.standing,
            self.versions,
            self.ending,
            tuple(self.fixed_versions),
            self.pending,
        )

    def turns_in_story(self) -> str:
        """How many turns the story holds, and how that count comes about (see `story_turns`)."""
        return story_turns(self.ledger.committed, self.ledger.undone)


def story_turns(commits: int, undos: int) -> str:
    """The count of a save's turns, said the same way everywhere (`storyloom saves` and `verify`): the
    turns standing in the story, then how many were committed and how many of those were undone."""
    standing = commits - undos
    return f"{standing} turn{'' if standing == 1 else 's'} in the story ({commits} committed, {undos} undone)"


@gc_paused()
def rebuild(save: Save, pack: StoryPack) -> Rebuilt:
    """Replay a save's commits and undos over the pack's initial state, re-judging each commit.

    Every reader of a save (verify, replay, export, resume) holds it to these rules, here: each commit
    passes the rules against the state before it, leads to its recorded state hash, and is what the
    model's recorded answer for its turn gives (a commit whose prose was edited passes every other check).

    Raises:
        InvalidCommit: the first commit that fails the rules, leads to another state hash, is not what
            its recorded answer gives, or an undo with nothing to undo (the record is named).
    """
    return rebuild_records(save.path, save.records, pack, rules=save.header.rules)


def rebuild_records(
    path: Path,
    records: Iterable[Record],
    pack: StoryPack,
    *,
    rules: int,
    note_today: bool = False,
    ledger: StoryLedger | None = None,
) -> Rebuilt:
    """`rebuild` over records as they are read (verify, export and resume stream them): memory holds
    what a session holds (see `Rebuilt`) and what re-judging needs, whatever the save's length
    (the arguments: see `judge_records`)."""
    return judge_records(path, records, pack, rules=rules, note_today=note_today, ledger=ledger).built


def judge_records(
    path: Path,
    records: Iterable[Record],
    pack: StoryPack,
    *,
    rules: int,
    note_today: bool = False,
    ledger: StoryLedger | None = None,
    start: Progress | None = None,
) -> Progress:
    """`rebuild_records`, and where judging stands after the last record (`Progress`).

    Args:
        rules: the rule set the save was played under (its header's), which every commit is judged by.
        note_today: (verify) a save played under older rules also notes the first commits today's
            rules would refuse (`Rebuilt.refused_today`).
        ledger: the ledger to fold the save into (default: holding what undo and branching reach;
            resume's holds the newest turns whose versions it shows; `StoryLedger()` holds every
            branch's whole path, for a diff).
        start: where judging stood after the records before these (a resume record keeps it), carried
            on in place; None: from the start.
    """
    if start is None:
        start = Progress(Rebuilt(state=initial_state(pack)))
        if ledger is not None:
            start.built.ledger = ledger
    older = note_today and commit_rules(rules) != commit_rules(RULE_SET)
    following = _Following(_Where(path, rules, older), pack, start)
    for record in records:
        following.read(record)
    if start.tallied is not None:
        _check_tally(following.save, start.built, start.tallied)
    return start


@dataclass
class Progress:
    """Where a rebuild stands after some records: the story so far, what judging the next one needs."""

    built: Rebuilt
    started: TurnStarted | None = None
    """The latest turn started: a commit, failure or cancel is of it (never of an older one)."""
    answers: dict[int, Record] = field(default_factory=dict)
    """The latest model answer recorded for each turn in flight, which its commit must be."""
    rejected: dict[int, list[Record]] = field(default_factory=dict)
    """The answers before it: a correction that leaves the narrative out keeps one of theirs."""
    tallied: Record | None = None
    """The latest record carrying a tally, checked against the story at the end."""

    @property
    def settled(self) -> bool:
        """No turn in flight and no answer waiting for its commit: a place to keep (a resume record)."""
        return self.built.ledger.in_flight is None and not self.answers and not self.rejected


@dataclass
class _Following:
    """A rebuild under way: the save, its pack, and where judging stands."""

    save: _Where
    pack: StoryPack
    now: Progress

    def read(self, record: Record) -> None:
        """Judge one record against the story so far, then fold it into the ledger."""
        now = self.now
        kind = record.kind
        if kind == "attempt_finished":  # its output plays no part in the committed story
            turn = record.turn
            if turn is not None:
                if (previous := now.answers.get(turn)) is not None:
                    now.rejected.setdefault(turn, []).append(previous)
                now.answers[turn] = record
            return
        if kind in TALLIED:
            now.tallied = record
        event = record.event
        if event is None:
            return
        self._judge(record, event)
        now.built.ledger = apply(now.built.ledger, event)

    def _judge(self, record: Record, event: Event) -> None:
        save, built, seq, line = self.save, self.now.built, record.seq, record.line
        if isinstance(event, TurnStarted):
            _check_command(save, seq, line, event)
            self.now.started = event
            if built.versions is not None:  # the next command fixes the latest turn
                built.fixing, built.versions = built.versions, None
        elif isinstance(event, AlternativeStarted):
            _open_versions(save, built, seq, line, event)
        elif isinstance(event, TurnCommitted):
            self._commit(record, event)
        elif isinstance(event, AlternativeChosen):
            _choose(save, self.pack, built, seq, line, event)
        elif isinstance(event, TurnUndone):
            _undo(save, built, seq, line, event)
        elif isinstance(event, TurnFailed | TurnCancelled):
            self.now.answers.pop(event.turn, None)
            self.now.rejected.pop(event.turn, None)
        elif isinstance(event, BranchStarted):
            _branch(save, built, seq, line, event)
        elif isinstance(event, BranchSwitched):
            _switch(save, built, seq, line, event)

    def _commit(self, record: Record, event: TurnCommitted) -> None:
        """A commit (of a turn, or of another version of the latest turn) judged, then its answer checked."""
        now = self.now
        built, in_flight = now.built, now.built.ledger.in_flight
        if in_flight is not None and in_flight.alternative:
            _commit_version(self.save, self.pack, built, record.seq, record.line, event)
            before = built.undo_stack[-1][0]  # a version is judged from the state before its turn
        else:
            before = built.state
            _commit(self.save, self.pack, built, record.seq, record.line, event, now.started)
        rejected = now.rejected.pop(event.turn, [])
        if event.turn in now.answers:
            answer = now.answers.pop(event.turn)
            check_answer(self.save.path, self.save.rules, self.pack, before, record, event, answer, rejected)


@dataclass(frozen=True)
class _Where:
    """The save being rebuilt, as its errors name it, and the rules its commits are judged by."""

    path: Path
    rules: int
    note_today: bool = False
    """Also judge each commit by today's rules, to note what they would refuse."""


def _check_tally(save: _Where, built: Rebuilt, record: Record) -> None:
    """The last tally written (what `storyloom saves` shows) counts what the save holds."""
    written = record.data.get(TALLY)
    if written is None:
        return  # a save from before tallies
    counted = Tally.of(built.ledger)
    if Tally.from_json(written) != counted:
        raise InvalidCommit(
            save.path,
            f"record {record.seq} counts {written!r} turns, but the save holds {counted.to_json()!r}",
            line=record.line,
            seq=record.seq,
        )


def _check_command(save: _Where, seq: int, line: int, event: TurnStarted) -> None:
    """A command over today's limit (an older storyloom let headless play take any line) is refused
    here, once, rather than sent with every later request of a resumed story."""
    problem = command_too_long(event.player_input)
    if problem is not None:
        raise InvalidCommit(
            save.path,
            f"record {seq}: the command of turn {event.turn} is too long ({problem}); an older storyloom "
            f"let it through, this one does not read the save past it",
            line=line,
            seq=seq,
        )


def _commit(
    save: _Where,
    pack: StoryPack,
    built: Rebuilt,
    seq: int,
    line: int,
    event: TurnCommitted,
    started: TurnStarted | None,
) -> None:
    if started is None or started.turn != event.turn:
        why = "which was never started" if started is None else f"but the turn in flight is {started.turn}"
        raise InvalidCommit(save.path, f"record {seq} commits turn {event.turn}, {why}", line=line, seq=seq)
    exchange, after = _rejudged(save, pack, built.state, seq, line, event, started.player_input, built.digest)
    before = built.state
    if save.note_today:
        _note_today(pack, built, before, exchange, event.turn)
    built.undo_stack.append((before, built.history))
    built.fixed_versions.append(built.fixing)
    built.fixing = None
    built.state, built.digest = after, event.state_hash
    built.history = remembered(built.history, exchange)
    built.versions = Versions(event.turn, (Alternative(exchange, built.state),), 1)
    if built.ending is None:  # the ledger counts this commit once it is judged: it stands at `standing`
        built.ending = ending_of(pack, built.standing, event.turn, before, built.state)


def _rejudged(
    save: _Where,
    pack: StoryPack,
    before: WorldState,
    seq: int,
    line: int,
    event: TurnCommitted,
    player_input: str,
    before_hash: str | None = None,
) -> tuple[Exchange, WorldState]:
    """A recorded commit judged again against the state before its turn: its exchange and the state
    after it, which must have the recorded hash (`before_hash`, when known, is the state before's:
    a turn with no patch leaves the state as it was)."""
    turn = {
        "narrative": event.narrative,
        "state_patch": list(event.state_patch),
        "suggestions": list(event.suggestions),
    }
    verdict = judge_data(turn, before, pack, rules=save.rules)
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
    recomputed = before_hash if before_hash is not None and not verdict.turn.state_patch else state_hash(verdict.after)
    if recomputed != event.state_hash:
        raise InvalidCommit(
            save.path,
            f"record {seq}: the commit of turn {event.turn} leads to state "
            f"{recomputed[:12]}…, not the recorded {event.state_hash[:12]}…",
            line=line,
            seq=seq,
        )
    return Exchange(player_input, verdict.turn, event.turn), verdict.after


NOTED_TODAY = 3
"""How many commits today's rules would refuse a verify report names (it counts them all)."""


def _note_today(pack: StoryPack, built: Rebuilt, before: WorldState, exchange: Exchange, turn: int) -> None:
    """Judge a commit of a save played under older rules by today's too, and note a refusal."""
    verdict = judge_data(exchange.turn.to_json(), before, pack)
    if not verdict.ok:
        built.refused_today += 1
        if len(built.refused_notes) < NOTED_TODAY:
            built.refused_notes.append(f"turn {turn} ({', '.join(sorted({i.rule for i in verdict.issues}))})")


def _open_versions(save: _Where, built: Rebuilt, seq: int, line: int, event: AlternativeStarted) -> Versions:
    """The versions another version of a turn is asked for: those of the latest turn, still open."""
    versions = built.versions
    if versions is None or versions.turn != event.turn:
        raise InvalidCommit(
            save.path,
            f"record {seq} asks for another version of turn {event.turn}, which is not the latest "
            f"committed turn or was already fixed by the next command",
            line=line,
            seq=seq,
        )
    if event.alternative != len(versions.alternatives) + 1 or event.player_input != versions.player_input:
        raise InvalidCommit(
            save.path,
            f"record {seq}: version {event.alternative} of turn {event.turn} does not follow its "
            f"{plural(len(versions.alternatives), 'committed version')} of the same command",
            line=line,
            seq=seq,
        )
    return versions


def _commit_version(save: _Where, pack: StoryPack, built: Rebuilt, seq: int, line: int, event: TurnCommitted) -> None:
    """Another version committed: judged against the state before the turn, then the chosen one."""
    versions = built.versions
    assert versions is not None  # `_open_versions` let its start through
    before, history = built.undo_stack[-1]
    exchange, after = _rejudged(save, pack, before, seq, line, event, versions.player_input)
    alternatives = (*versions.alternatives, Alternative(exchange, after))
    built.versions = Versions(versions.turn, alternatives, len(alternatives))
    built.state, built.digest = after, event.state_hash
    built.history = remembered(history, exchange)
    built.ending = ending_of(pack, built.standing - 1, event.turn, before, after)


def _choose(save: _Where, pack: StoryPack, built: Rebuilt, seq: int, line: int, event: AlternativeChosen) -> None:
    versions = built.versions
    if (
        versions is None
        or versions.turn != event.turn
        or event.alternatives != len(versions.alternatives)
        or not 1 <= event.alternative <= len(versions.alternatives)
    ):
        raise InvalidCommit(
            save.path,
            f"record {seq} chooses version {event.alternative} of turn {event.turn}, which has no such "
            f"committed version to choose",
            line=line,
            seq=seq,
        )
    chosen = versions.alternatives[event.alternative - 1]
    if state_hash(chosen.state) != event.state_hash:
        raise InvalidCommit(
            save.path,
            f"record {seq}: version {event.alternative} of turn {event.turn} leads to state "
            f"{state_hash(chosen.state)[:12]}…, not the recorded {event.state_hash[:12]}…",
            line=line,
            seq=seq,
        )
    shown = chosen.exchange.turn
    if event.narrative != shown.narrative or tuple(event.suggestions) != tuple(shown.suggestions):
        raise InvalidCommit(
            save.path,
            f"record {seq}: version {event.alternative} of turn {event.turn} is not what was chosen: the "
            f"choice records other prose or suggestions than the version's commit; the file was edited",
            line=line,
            seq=seq,
        )
    before, history = built.undo_stack[-1]
    built.versions = Versions(versions.turn, versions.alternatives, event.alternative)
    built.state, built.digest = chosen.state, event.state_hash
    built.history = remembered(history, chosen.exchange)
    built.ending = ending_of(pack, built.standing - 1, event.turn, before, chosen.state)


def _undo(save: _Where, built: Rebuilt, seq: int, line: int, event: TurnUndone) -> None:
    if not built.undo_stack:
        why = (
            f"only the latest {UNDO_TURNS} committed turns can be taken back"
            if built.standing
            else "there is no committed turn to undo"
        )
        raise InvalidCommit(save.path, f"record {seq} undoes a turn, but {why}", line=line, seq=seq)
    if event.turn != built.ledger.last_turn:  # as `Session.undo` records it: the last turn played
        raise InvalidCommit(
            save.path,
            f"record {seq} is an undo after turn {event.turn}, but the last turn played is {built.ledger.last_turn}",
            line=line,
            seq=seq,
        )
    state, history = built.undo_stack.pop()
    if state_hash(state) != event.state_hash:
        raise InvalidCommit(
            save.path,
            f"record {seq}: undoing leads to state {state_hash(state)[:12]}…, not the "
            f"recorded {event.state_hash[:12]}…",
            line=line,
            seq=seq,
        )
    built.state, built.history, built.digest = state, history, event.state_hash
    built.versions, built.fixing = built.fixed_versions.pop(), None  # the turn before is the latest again
    if built.ending is not None and built.ending.commit >= built.standing - 1:  # the ledger pops it next
        built.ending = None


def _branch(save: _Where, built: Rebuilt, seq: int, line: int, event: BranchStarted) -> None:
    """A new branch, judged from its fork: the turn is on the path of the branch being played, within
    what undo reaches, and the branch starts from exactly the world after it (as `Session.branch`)."""
    ledger = built.ledger
    later = ledger.turns_after(event.turn)
    why = ""
    if event.branch != ledger.branch_count + 1 or event.parent != ledger.branch:
        why = f"branch {ledger.branch} of {ledger.branch_count} was being played"
    elif ledger.in_flight is not None:
        why = f"turn {ledger.in_flight.turn} was in flight"
    elif later is None:
        why = f"turn {event.turn} is not on the path of branch {ledger.branch}"
    elif later > len(built.undo_stack):
        why = f"only the latest {UNDO_TURNS} turns of a branch can be continued from"
    if why:
        raise InvalidCommit(
            save.path,
            f"record {seq} starts branch {event.branch} from turn {event.turn} of branch {event.parent}, but {why}",
            line=line,
            seq=seq,
        )
    assert later is not None
    built.parked[ledger.branch] = built.here()
    for _ in range(later):
        built.state, built.history = built.undo_stack.pop()
        built.versions = built.fixed_versions.pop()
    built.fixing = None
    if built.ending is not None and built.ending.commit >= ledger.standing - later:
        built.ending = None
    _check_branch_state(save, built, seq, line, event.branch, event.state_hash)


def _switch(save: _Where, built: Rebuilt, seq: int, line: int, event: BranchSwitched) -> None:
    """Back to a branch where it was left: it must exist, stand at the recorded turn (as
    `Session.switch` records it), and its world be the recorded one."""
    flight = built.ledger.in_flight
    story = built.parked.pop(event.branch, None) if flight is None else None
    if story is None:
        why = "there is no such other branch" if flight is None else f"turn {flight.turn} was in flight"
        raise InvalidCommit(save.path, f"record {seq} switches to branch {event.branch}, but {why}", line=line, seq=seq)
    latest = next(b.latest for b in built.ledger.branches() if b.number == event.branch)
    if event.turn != latest:
        raise InvalidCommit(
            save.path,
            f"record {seq} switches to branch {event.branch} at turn {event.turn}, but its latest turn is {latest}",
            line=line,
            seq=seq,
        )
    built.parked[built.ledger.branch] = built.here()
    built.state, built.history, built.versions, built.ending = story.state, story.history, story.versions, story.ending
    built.undo_stack = deque(story.undo_stack, maxlen=UNDO_TURNS)
    built.fixed_versions = deque(story.fixed_versions, maxlen=UNDO_TURNS)
    built.fixing = None
    _check_branch_state(save, built, seq, line, event.branch, event.state_hash)


def _check_branch_state(save: _Where, built: Rebuilt, seq: int, line: int, branch: int, recorded: str) -> None:
    if state_hash(built.state) != recorded:
        raise InvalidCommit(
            save.path,
            f"record {seq}: branch {branch} stands at state {state_hash(built.state)[:12]}…, not the "
            f"recorded {recorded[:12]}…",
            line=line,
            seq=seq,
        )
    built.digest = recorded
