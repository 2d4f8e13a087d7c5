"""The story ledger: what a story is at any point of its event log, folded by one reducer.

A save is an event log. What the story *is* after any prefix of it (the turns standing, each
with its versions and the one chosen, the turns undone, the turn in flight, the counts a
listing shows) is `apply`'d one event at a time, and every reader asks the ledger instead of
following commits, versions, choices and undos on its own: verify's counts, the export, the
resume's versions, the preview's newest turns and the replay's tally all read it.

The ledger follows; it does not judge. An event it cannot place (an undo with nothing standing,
a choice of a version that does not exist) leaves it as it was: judging a save is verify's
(`storyloom.saves.verify`), and a preview folds only the tail of a save, whose first events may
refer to turns it never saw.

Pure and persistent (named tuples, cheap to copy with a change): `apply` returns a new ledger and
never changes the old one; standing and
undone turns are linked lists sharing their tails, so an event costs the same whatever the story's
length, and `keep` bounds how many standing turns a long save's reader holds in full.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import jsonpatch

from storyloom.engine.events import (
    AlternativeChosen,
    AlternativeStarted,
    AttemptFinished,
    BranchStarted,
    BranchSwitched,
    CorrectionStarted,
    Event,
    TurnCancelled,
    TurnCommitted,
    TurnFailed,
    TurnStarted,
    TurnUndone,
)

STORY_KINDS = frozenset(
    {"turn_started", "alternative_started", "turn_committed", "alternative_chosen", "turn_undone"}
    | {"turn_failed", "turn_cancelled", "branch_started", "branch_switched"}
)
"""The events that say which turns the story holds: a reader that wants only the turns (not the
counts of corrections or tokens) applies these and skips making the others' events."""


class Version(NamedTuple):
    """One committed version of a turn: what its commit recorded (and when, if the reader says)."""

    alternative: int
    narrative: str
    state_hash: str
    state_patch: tuple[dict[str, object], ...] = ()
    suggestions: tuple[str, ...] = ()
    at: str = ""


class LedgerTurn(NamedTuple):
    """A committed turn: its command, its versions (1 the first committed) and the one chosen."""

    turn: int
    player_input: str
    versions: tuple[Version, ...]
    chosen: int = 1
    fixed: bool = False
    """A command was played after it (even one then cancelled): its versions can no longer change."""

    @property
    def shown(self) -> Version:
        """The version that counts: the one the player sees and the export follows."""
        return self.versions[self.chosen - 1]


class _Link(NamedTuple):
    turn: LedgerTurn
    rest: _Link | None
    length: int


def _push(link: _Link | None, turn: LedgerTurn, keep: int | None) -> _Link:
    length = 1 if link is None else link.length + 1
    if keep is not None and length > 2 * keep:
        link = _build(list(_walk(link))[: keep - 1][::-1])
        length = (0 if link is None else link.length) + 1
    return _Link(turn, link, length)


def _walk(link: _Link | None) -> Iterator[LedgerTurn]:
    while link is not None:
        yield link.turn
        link = link.rest


def _build(turns: list[LedgerTurn]) -> _Link | None:
    link: _Link | None = None
    for turn in turns:
        link = _Link(turn, link, 1 if link is None else link.length + 1)
    return link


class InFlight(NamedTuple):
    """A command or another version asked for, not yet committed, failed or cancelled."""

    turn: int
    player_input: str
    retry: int = 0
    alternative: int = 0
    """The version asked for (0: a new turn)."""


class _Place(NamedTuple):
    """Where a branch not being played stands: its own part of the ledger, kept as it was left."""

    standing: int
    in_flight: InFlight | None
    pending: InFlight | None
    held: _Link | None
    held_undone: _Link | None


class Branch(NamedTuple):
    """One path of the story: the branch it forks from and after which turn (branch 1, the story as
    first played, forks from nothing), and where it stands while another branch is played."""

    number: int
    parent: int = 0
    fork: int = 0
    """The turn the branch continues from (0: from the story's start)."""
    command: str = ""
    """The command of the fork turn, as the player typed it ("" for a fork at the start)."""
    parked: _Place | None = None
    """Its part of the ledger while another branch is played (None for the branch being played)."""


class BranchView(NamedTuple):
    """A branch as a listing shows it (`StoryLedger.branches`)."""

    number: int
    parent: int
    fork: int
    command: str
    standing: int
    """Turns on its path (the fork's included)."""
    latest: int
    """The number of its newest standing turn (0: none)."""
    current: bool


class StoryLedger(NamedTuple):
    """What the story is after the events applied so far (see the module docstring).

    Attributes:
        keep: how many of the newest standing (and undone) turns are held whole (None: all);
            the counts cover every turn whatever `keep` is.
        standing: turns in the story now (not undone), counted.
        committed: turns committed, undone ones included (another version is no new turn).
        undone: commits taken back by an undo.
        in_flight: the command or version asked for and not yet ended.
        pending: a command that failed or was cancelled and can be retried (turn, input, retry).
        last_turn: the highest turn number seen (the next turn is the one after).
    """

    keep: int | None = None
    standing: int = 0
    committed: int = 0
    undone: int = 0
    versions: int = 0
    """Other versions committed (beyond each turn's first)."""
    choices: int = 0
    failures: int = 0
    cancels: int = 0
    corrections: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    in_flight: InFlight | None = None
    pending: InFlight | None = None
    last_turn: int = 0
    held: _Link | None = None
    """The standing turns held (newest first, sharing their tails with earlier ledgers)."""
    held_undone: _Link | None = None
    branch: int = 1
    """The branch being played: `standing`, `held`, `in_flight` and `pending` are its own."""
    tree: tuple[Branch, ...] = ()
    """Every branch, in the order they were started; empty while the story has one path."""

    def apply(self, event: Event, at: str = "") -> StoryLedger:
        """The ledger once `event` has happened (`at`: when it was recorded, kept with a commit)."""
        return apply(self, event, at)

    def fold(self, events: Iterable[Event]) -> StoryLedger:
        """The ledger once every one of `events` has happened, in order."""
        ledger = self
        for event in events:
            ledger = apply(ledger, event)
        return ledger

    @property
    def latest(self) -> LedgerTurn | None:
        """The newest standing turn (the one another version or an undo is of)."""
        return None if self.held is None else self.held.turn

    def turns(self) -> list[LedgerTurn]:
        """The standing turns held (see `keep`), oldest first."""
        return list(_walk(self.held))[::-1]

    def turns_after(self, turn: int) -> int | None:
        """How many standing turns of the branch being played come after `turn` (0: the story's
        start), which a branch from it takes back; None when `turn` is not on its path (held)."""
        if turn == 0:
            return self.standing
        path = self.turns()
        if not any(t.turn == turn for t in path):
            return None
        return sum(1 for t in path if t.turn > turn)

    def undone_turns(self, branch: int | None = None) -> list[LedgerTurn]:
        """The undone turns held (see `keep`) of `branch` (default: the one being played), oldest first."""
        if branch is None or branch == self.branch:
            return list(_walk(self.held_undone))[::-1]
        found = next((b for b in self.tree if b.number == branch), None)
        return [] if found is None or found.parked is None else list(_walk(found.parked.held_undone))[::-1]

    @property
    def next_turn(self) -> int:
        return self.last_turn + 1

    @property
    def branch_count(self) -> int:
        return len(self.tree) or 1

    def branches(self) -> list[BranchView]:
        """Every branch of the story (one while it has a single path), in the order they started."""
        views = []
        for branch in self.tree or (Branch(1),):
            place = branch.parked if branch.number != self.branch else None
            standing, held = (self.standing, self.held) if place is None else (place.standing, place.held)
            latest = 0 if held is None else held.turn.turn
            views.append(
                BranchView(branch.number, branch.parent, branch.fork, branch.command, standing, latest, place is None)
            )
        return views

    def path(self, branch: int | None = None) -> list[LedgerTurn]:
        """The standing turns held of `branch` (default: the one being played), oldest first: its
        parent's turns up to its fork, then its own. Empty for a branch that does not exist."""
        if branch is None or branch == self.branch:
            return self.turns()
        found = next((b for b in self.tree if b.number == branch), None)
        if found is None or found.parked is None:
            return []
        return list(_walk(found.parked.held))[::-1]

    @property
    def retryable(self) -> InFlight | None:
        """The command that can be retried: one that failed or was cancelled, or one still in flight
        where the log stops (a crash); never another version (the chosen one stays)."""
        flight = self.in_flight
        return flight if flight is not None and not flight.alternative else self.pending


_FIELD = {name: index for index, name in enumerate(StoryLedger._fields)}


def _with(ledger: StoryLedger, **changes: Any) -> StoryLedger:
    """`ledger._replace(**changes)`, which a save's reading asks twice a turn, for less (no field
    names looked up by pop, no map)."""
    values = list(ledger)
    for name, value in changes.items():
        values[_FIELD[name]] = value
    return tuple.__new__(StoryLedger, values)  # `_make` without its length check


def _fixed(turn: LedgerTurn) -> LedgerTurn:
    """`turn._replace(fixed=True)`: the next command was played."""
    return LedgerTurn._make((*turn[:4], True))


def apply(ledger: StoryLedger, event: Event, at: str = "") -> StoryLedger:
    """The one reducer of the event log: `ledger` once `event` has happened (see `StoryLedger`)."""
    if isinstance(event, TurnCommitted):
        return _committed(ledger, event, at)
    if isinstance(event, TurnStarted):
        return _started(ledger, event)
    if isinstance(event, AttemptFinished):
        return _attempted(ledger, event)
    if isinstance(event, AlternativeStarted):
        flight = InFlight(event.turn, event.player_input, alternative=event.alternative)
        return _with(ledger, in_flight=flight, last_turn=max(ledger.last_turn, event.turn))
    if isinstance(event, TurnFailed | TurnCancelled):
        return _ended(ledger, event)
    if isinstance(event, TurnUndone):
        return _undone(ledger)
    if isinstance(event, AlternativeChosen):
        return _chosen(ledger, event)
    if isinstance(event, CorrectionStarted):
        return _with(ledger, corrections=ledger.corrections + 1)
    if isinstance(event, BranchStarted):
        return _branched(ledger, event)
    if isinstance(event, BranchSwitched):
        return _switched(ledger, event)
    return ledger


def _parked(ledger: StoryLedger) -> tuple[Branch, ...]:
    """The tree with the branch being played parked where it stands."""
    here = _Place(ledger.standing, ledger.in_flight, ledger.pending, ledger.held, ledger.held_undone)
    return tuple(b._replace(parked=here) if b.number == ledger.branch else b for b in ledger.tree or (Branch(1),))


def _branched(ledger: StoryLedger, event: BranchStarted) -> StoryLedger:
    """A new branch from after turn `event.turn` of the branch being played: its path shares the
    parent's links up to the fork (nothing is copied), and the fork turn is its latest turn."""
    if any(b.number == event.branch for b in ledger.tree) or event.branch == ledger.branch:
        return ledger
    held, standing = ledger.held, ledger.standing
    while held is not None and held.turn.turn > event.turn:
        held, standing = held.rest, standing - 1
    command = ""
    if held is not None and held.turn.turn == event.turn:
        command = held.turn.player_input
        held = _Link(held.turn._replace(fixed=False), held.rest, held.length)
    tree = (*_parked(ledger), Branch(event.branch, ledger.branch, event.turn, command))
    return _with(
        ledger,
        branch=event.branch,
        tree=tree,
        standing=max(standing, 0),
        in_flight=None,
        pending=None,
        held=held,
        held_undone=None,
    )


def _switched(ledger: StoryLedger, event: BranchSwitched) -> StoryLedger:
    """Play branch `event.branch` again, where it was left; the one played is parked as it stands."""
    target = next((b for b in ledger.tree if b.number == event.branch), None)
    if target is None or target.parked is None or event.branch == ledger.branch:
        return ledger
    place = target.parked
    tree = tuple(b._replace(parked=None) if b.number == event.branch else b for b in _parked(ledger))
    return _with(
        ledger,
        branch=event.branch,
        tree=tree,
        standing=place.standing,
        in_flight=place.in_flight,
        pending=place.pending,
        held=place.held,
        held_undone=place.held_undone,
    )


def world_after(initial: dict[str, Any], path: Iterable[LedgerTurn], turn: int | None = None) -> dict[str, Any]:
    """The world after `turn` of a path (`StoryLedger.path`, held whole: `keep=None`), from the story's
    initial world: each turn's chosen version's patch in order (None: after its last turn)."""
    world = copy.deepcopy(initial)
    for step in path:
        if turn is not None and step.turn > turn:
            break
        world = jsonpatch.JsonPatch(list(step.shown.state_patch)).apply(world)
    return world


def _started(ledger: StoryLedger, event: TurnStarted) -> StoryLedger:
    latest = ledger.held
    if latest is not None and not latest.turn.fixed:
        latest = _Link(_fixed(latest.turn), latest.rest, latest.length)
    flight = InFlight(event.turn, event.player_input, event.retry)
    return _with(ledger, in_flight=flight, last_turn=max(ledger.last_turn, event.turn), held=latest)


def _attempted(ledger: StoryLedger, event: AttemptFinished) -> StoryLedger:
    usage = event.usage
    if not usage:
        return ledger
    return _with(
        ledger,
        input_tokens=ledger.input_tokens + int(usage.get("input_tokens", 0)),
        output_tokens=ledger.output_tokens + int(usage.get("output_tokens", 0)),
    )


def _undone(ledger: StoryLedger) -> StoryLedger:
    top = ledger.held
    if top is None:
        return _with(ledger, undone=ledger.undone + 1, in_flight=None, pending=None)
    return _with(
        ledger,
        standing=ledger.standing - 1,
        undone=ledger.undone + 1,
        in_flight=None,
        pending=None,
        held=top.rest,
        held_undone=_push(ledger.held_undone, top.turn, ledger.keep),
    )


def _chosen(ledger: StoryLedger, event: AlternativeChosen) -> StoryLedger:
    top = ledger.held
    if top is None and ledger.standing:  # a turn beyond `keep`: counted, not held
        return _with(ledger, choices=ledger.choices + 1)
    if top is None or top.turn.turn != event.turn or not 1 <= event.alternative <= len(top.turn.versions):
        return ledger
    chosen = top.turn._replace(chosen=event.alternative)
    return _with(ledger, choices=ledger.choices + 1, held=_Link(chosen, top.rest, top.length))


def _committed(ledger: StoryLedger, event: TurnCommitted, at: str) -> StoryLedger:
    flight, top = ledger.in_flight, ledger.held
    last_turn = max(ledger.last_turn, event.turn)
    if flight is not None and flight.alternative and top is not None and top.turn.turn == event.turn:
        number = len(top.turn.versions) + 1
        turn = top.turn._replace(versions=(*top.turn.versions, _version(event, number, at)), chosen=number)
        return _with(
            ledger,
            versions=ledger.versions + 1,
            in_flight=None,
            last_turn=last_turn,
            held=_Link(turn, top.rest, top.length),
        )
    if flight is not None and flight.alternative and top is None and ledger.standing:  # beyond `keep`
        return _with(ledger, versions=ledger.versions + 1, in_flight=None, last_turn=last_turn)
    player_input = flight.player_input if flight is not None and flight.turn == event.turn else ""
    if top is not None and not top.turn.fixed:
        top = _Link(_fixed(top.turn), top.rest, top.length)
    turn = LedgerTurn(event.turn, player_input, (_version(event, 1, at),))
    return _with(
        ledger,
        standing=ledger.standing + 1,
        committed=ledger.committed + 1,
        in_flight=None,
        pending=None,
        last_turn=last_turn,
        held=_push(top, turn, ledger.keep),
    )


def _version(event: TurnCommitted, number: int, at: str) -> Version:
    return Version(number, event.narrative, event.state_hash, tuple(event.state_patch), tuple(event.suggestions), at)


def _ended(ledger: StoryLedger, event: TurnFailed | TurnCancelled) -> StoryLedger:
    """A turn (or a version) failed or was cancelled: a command of a new turn can be retried."""
    flight = ledger.in_flight
    pending = ledger.pending
    if flight is not None and flight.turn == event.turn and not flight.alternative:
        pending = flight
    failed = isinstance(event, TurnFailed)
    return _with(
        ledger,
        failures=ledger.failures + failed,
        cancels=ledger.cancels + (not failed),
        in_flight=None,
        pending=pending,
        last_turn=max(ledger.last_turn, event.turn),
    )
