"""What a committed story holds beyond its state: the versions of its latest turn, the turn that can
be retried, where it stands ended, and what the model's history keeps of it.

These are the session's records (`engine/lifecycle.Session` keeps them; a resume rebuilds them from
a save and hands them back as `CommittedStory`); `ending_reached` is the one judgement of an ending.
"""

from __future__ import annotations

from dataclasses import dataclass

from storyloom.engine.ledger import StoryLedger
from storyloom.engine.limits import HISTORY_TURNS
from storyloom.engine.narration import Exchange
from storyloom.engine.packs import Ending, StoryPack
from storyloom.engine.state import WorldState


@dataclass(frozen=True)
class PendingTurn:
    """A turn that failed or was cancelled and can be retried."""

    turn: int
    player_input: str
    retries: int


@dataclass(frozen=True)
class Alternative:
    """One committed version of the latest turn: the exchange the model's history keeps of it, and
    the world after it."""

    exchange: Exchange
    state: WorldState


@dataclass(frozen=True)
class Versions:
    """The committed versions of the latest turn, while it can still change (until the next command).

    Every version answers the same command from the same state: the one before the turn.
    """

    turn: int
    alternatives: tuple[Alternative, ...]
    chosen: int
    """The version that counts now, 1-based (as the player sees `‹ 2/3 ›`)."""

    @property
    def player_input(self) -> str:
        return self.alternatives[0].exchange.player_input

    @property
    def showing(self) -> Alternative:
        return self.alternatives[self.chosen - 1]


@dataclass(frozen=True)
class CommittedStory:
    """What a session continues from when a story is resumed (`Session.restore`): the rebuild of its
    save follows the commits, undos and choices the way a session does and ends in this."""

    state: WorldState
    history: tuple[Exchange, ...]
    """The model's history as the session had it (see `remembered`)."""
    undo_stack: tuple[tuple[WorldState, tuple[Exchange, ...]], ...]
    """(state before, history before) of the latest standing commits, at most `UNDO_TURNS`."""
    commits: int
    """How many commits stand in the story."""
    versions: Versions | None = None
    ending: StoryEnding | None = None
    fixed_versions: tuple[Versions | None, ...] = ()
    """Beside `undo_stack`, entry for entry: the versions of the turn before each of those commits,
    as they were when the commit fixed them (an undo makes that turn the latest again)."""
    pending: PendingTurn | None = None
    """A failed or cancelled command of this branch that can be retried (kept while another is played)."""
    ledger: StoryLedger | None = None
    """The story's ledger (`storyloom.engine.ledger`): its branches, and which turns each path holds."""
    parked: tuple[tuple[int, CommittedStory], ...] = ()
    """The branches not being played, each where it stands (branch number, its committed story)."""


@dataclass(frozen=True)
class StoryEnding:
    """The ending the committed story stands at, and which standing commit reached it."""

    commit: int
    """Which standing commit reached it, counting from 0 (the story's first commit)."""
    turn: int
    """The number of the turn that reached it."""
    ending: str
    """The pack's id of the ending."""
    title: str
    text: str


def ending_reached(pack: StoryPack, before: WorldState, after: WorldState) -> tuple[str, Ending] | None:
    """The ending a commit from `before` to `after` reaches: the first of the pack's endings that holds
    after it and did not before. The one judgement of an ending: live play, resume, replay and export
    all come here."""
    for ending_id, ending in pack.endings.items():
        if ending.when.holds(after) and not ending.when.holds(before):
            return ending_id, ending
    return None


def ending_of(pack: StoryPack, commit: int, turn: int, before: WorldState, after: WorldState) -> StoryEnding | None:
    """The ending standing commit number `commit` (turn `turn`, from `before` to `after`) reaches, if any."""
    reached = ending_reached(pack, before, after)
    if reached is None:
        return None
    ending_id, ending = reached
    return StoryEnding(commit, turn, ending_id, ending.title, ending.text)


def remembered(history: tuple[Exchange, ...], exchange: Exchange) -> tuple[Exchange, ...]:
    """The model's history after `exchange` is committed: between `HISTORY_TURNS` and twice that
    many of the latest exchanges (see `HISTORY_TURNS`)."""
    if len(history) >= 2 * HISTORY_TURNS:
        history = history[len(history) - HISTORY_TURNS + 1 :]
    return (*history, exchange)
