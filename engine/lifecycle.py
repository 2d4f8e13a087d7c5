"""The turn lifecycle: stream, validate, correct within a budget, commit or fail.

`Session` owns the committed state and the model's conversation. Each call to
`play`, `retry` or `regenerate` is an async generator of events; nothing is
committed until a whole turn passes every rule, and a failed or cancelled turn
leaves the state and the conversation exactly as they were.

The latest committed turn keeps its committed versions (`Versions`) until the
next command is played: `regenerate` asks for another one, judged against the
state before the turn, and `choose` shows one of them; either swaps the state
and the history together. Once the next command is played the turn is fixed.

Only the first attempt streams prose. A correction's output is judged whole and
shown only if it commits: then `prose_replaced` says whether its prose differs
from what is on screen, so the prose changes at most once, in one step.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import replace
from typing import Any

from storyloom.engine.attempts import (
    MAX_TRANSIENT_RETRIES,
    PROSE_STREAM_MAX_CHARS,
    _Attempt,
    _attempt_finished,
    _judged,
    _next_correction,
    _read_attempt,
    _show_judged,
    _TurnState,
)
from storyloom.engine.committed import (
    Alternative,
    CommittedStory,
    PendingTurn,
    StoryEnding,
    Versions,
    ending_of,
    ending_reached,
    remembered,
)
from storyloom.engine.events import (
    AlternativeChosen,
    AlternativeStarted,
    BranchStarted,
    BranchSwitched,
    CorrectionStarted,
    Event,
    ProseReplaced,
    StoryEnded,
    TurnCancelled,
    TurnCommitted,
    TurnFailed,
    TurnStarted,
    TurnUndone,
    ValidationFailed,
)
from storyloom.engine.ledger import StoryLedger
from storyloom.engine.limits import DEFAULT_BUDGET, UNDO_TURNS, command_too_long
from storyloom.engine.narration import (
    Exchange,
    NarrationRequest,
    Narrator,
    NarratorError,
)
from storyloom.engine.packs import StoryPack
from storyloom.engine.rules import RULE_SET, RULE_SETS, Verdict
from storyloom.engine.state import WorldState, initial_state, state_hash
from storyloom.engine.streaming import Cancelled
from storyloom.engine.turns import Issue

__all__ = [  # the session, and the records it keeps (engine/committed.py), as its users import them
    "ATTEMPT_MAX_SECONDS",
    "MAX_TRANSIENT_RETRIES",
    "PROSE_STREAM_MAX_CHARS",
    "Alternative",
    "CommandTooLong",
    "CommittedStory",
    "PendingTurn",
    "Session",
    "StoryEnding",
    "StoryOver",
    "Versions",
    "ending_of",
    "ending_reached",
    "remembered",
]

ATTEMPT_MAX_SECONDS = 600.0
"""An attempt still writing after this long fails the turn: a stream that drips forever must end.
Generous, so a slow local model on a CPU still finishes a long turn."""


class BranchRefused(ValueError):
    """A branch cannot be started or switched to now; the message says why, in the player's words."""


class CommandTooLong(ValueError):
    """A player command over `storyloom.engine.limits.COMMAND_MAX_CHARS`: it is not played (no turn
    number is spent, nothing is recorded). The front ends refuse such a command first, with the same words."""


class StoryOver(ValueError):
    """The story has reached an ending: no command is played until undo takes the ending turn back
    (nothing is recorded, no turn number is spent). The front ends say so first, in their own words."""


class Session:
    """One story being played: committed state, history, and the turn in flight.

    Args:
        pack: the story.
        narrator: who writes the turns.
        budget: how many corrections a turn may use before it fails.
        state: the committed state to start from (a resumed story), else the pack's initial state.
        history: the committed exchanges so far (a resumed story).
        next_turn: the number the next turn gets (turn numbers are never reused).
        clock: monotonic seconds, for delta timing when a narrator keeps no clock of its own.
        sleep: how to wait before retrying a transient fault.
        attempt_timeout: seconds an attempt may take before it fails the turn (see `ATTEMPT_MAX_SECONDS`).
    """

    def __init__(
        self,
        pack: StoryPack,
        narrator: Narrator,
        *,
        budget: int = DEFAULT_BUDGET,
        state: WorldState | None = None,
        history: tuple[Exchange, ...] = (),
        next_turn: int = 1,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        attempt_timeout: float = ATTEMPT_MAX_SECONDS,
        rules: int = RULE_SET,
    ):
        if budget < 0:
            raise ValueError("the correction budget cannot be negative")
        if rules not in RULE_SETS:
            raise ValueError(f"unknown rule set {rules!r}")
        self.pack = pack
        self.rules = rules
        """The rule set every turn is judged by (`storyloom.engine.rules.RULE_SETS`): a save keeps its own."""
        self.narrator = narrator
        self.budget = budget
        self.state: WorldState = state if state is not None else initial_state(pack)
        self.history: tuple[Exchange, ...] = history
        self.next_turn = next_turn
        self.pending: PendingTurn | None = None
        self.versions: Versions | None = None
        """The committed versions of the latest turn while it may still change; None once it is fixed."""
        self._undo_stack: deque[tuple[WorldState, tuple[Exchange, ...]]] = deque(maxlen=UNDO_TURNS)
        """(state before, history before) of the latest `UNDO_TURNS` standing commits."""
        self._fixed: deque[Versions | None] = deque(maxlen=UNDO_TURNS)
        """Beside `_undo_stack`: the versions each of those commits fixed (see `CommittedStory.fixed_versions`)."""
        self._fixing: Versions | None = None
        """The versions the command in flight fixed, kept until it commits (or an undo drops them)."""
        self.commits = 0
        """How many commits stand in the story (a resumed one's included; undone ones are not)."""
        self._clock = clock
        self._sleep = sleep
        self.attempt_timeout = attempt_timeout
        self._ending: StoryEnding | None = None
        self._cancel: asyncio.Future[None] | None = None
        """Done once the player cancels the turn in flight (a future, so waiting on it needs no task)."""
        self.ledger = StoryLedger(keep=UNDO_TURNS)
        """The story as the one reducer folds this session's events: its branches and their paths."""
        self._parked: dict[int, CommittedStory] = {}
        """The branches not being played, each where it was left (see `branch`, `switch`)."""

    @property
    def ending(self) -> StoryEnding | None:
        """The ending the committed story stands at, or None while it goes on.

        Followed commit by commit (and undo by undo) from the standing commits, as the rebuild of a
        save follows it, so an undo, a resume and a replay all agree on it; the front ends play no
        command while it is set (undo takes the ending turn back).
        """
        return self._ending

    @property
    def can_undo(self) -> bool:
        """True when a committed turn can be taken back now (see `UNDO_TURNS`)."""
        return bool(self._undo_stack) and not self.busy

    @property
    def no_undo(self) -> str:
        """Why nothing can be undone now (when `can_undo` is False), in the words the player is told."""
        if self.busy:
            return "a turn is in flight: wait for it, or cancel it"
        if self.commits:
            return f"nothing more to undo: only the latest {UNDO_TURNS} turns can be taken back"
        return "nothing to undo: no turn is committed"

    @property
    def busy(self) -> bool:
        """True while a turn is in flight."""
        return self._cancel is not None

    def play(self, player_input: str) -> AsyncIterator[Event]:
        """Play one player command as a new turn.

        Raises:
            StoryOver: the story has reached an ending (`ending`); undo takes it back.
            CommandTooLong: the command is over the limit (see `storyloom.engine.limits.command_too_long`).
        """
        if self._ending is not None:
            raise StoryOver(f"the story is over ({self._ending.title}): undo takes back the ending turn")
        problem = command_too_long(player_input)
        if problem is not None:
            raise CommandTooLong(problem)
        turn = self.next_turn
        self.next_turn += 1
        return self._followed(self._run(turn, player_input, retry=0))

    async def _followed(self, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        """A turn's events, each applied to the session's ledger as it is yielded."""
        try:
            async for event in events:
                self.ledger = self.ledger.apply(event)
                yield event
        finally:
            await events.aclose()  # type: ignore[attr-defined]

    @property
    def can_regenerate(self) -> bool:
        """True when the latest committed turn may get another version: idle, the turn not fixed, and
        the story not over (an ending is undone first, like any turn after it would be)."""
        return self.versions is not None and not self.busy and self.ending is None

    def regenerate(self) -> AsyncIterator[Event]:
        """Ask for another version of the latest committed turn: the same command, judged against
        the state before that turn, streamed, validated and corrected like any turn.

        It starts with `alternative_started`; its commit makes it the chosen version (state and
        history swap together). A failed or cancelled one leaves the chosen version in place and
        sets no pending turn: to try again, regenerate again.

        Raises:
            RuntimeError: there is no turn that can change (none committed, the next command
                was played since, or the story is over), or a turn is in flight.
        """
        versions = self.versions
        if versions is None or self.ending is not None:
            raise RuntimeError(
                "only the latest committed turn can get another version, before the next command and the story's end"
            )
        if self.busy:
            raise RuntimeError("a turn is already in flight")
        return self._followed(
            self._run(versions.turn, versions.player_input, retry=0, alternative=len(versions.alternatives) + 1)
        )

    def choose(self, alternative: int) -> AlternativeChosen | None:
        """Make one of the latest turn's committed versions (1-based) the one that counts: its state
        and its exchange in the history swap in together. The narrator is not asked.

        Returns None (and changes nothing) when busy, when the turn is fixed or the story is over,
        or when there is no such version.
        """
        versions = self.versions
        if (
            versions is None
            or self.busy
            or self.ending is not None
            or not 1 <= alternative <= len(versions.alternatives)
        ):
            return None
        chosen = versions.alternatives[alternative - 1]
        before, history = self._undo_stack[-1]
        self.state, self.history = chosen.state, remembered(history, chosen.exchange)
        self.versions = replace(versions, chosen=alternative)
        self._ending = ending_of(self.pack, self.commits - 1, versions.turn, before, chosen.state)
        event = self.showing()
        if event is not None:
            self.ledger = self.ledger.apply(event)
        return event

    def showing(self) -> AlternativeChosen | None:
        """The version of the latest turn that counts now, as the event that shows it (a resumed
        story's screen starts from it); None once the turn is fixed."""
        versions = self.versions
        if versions is None:
            return None
        shown = versions.showing
        return AlternativeChosen(
            turn=versions.turn,
            alternative=versions.chosen,
            alternatives=len(versions.alternatives),
            state_hash=state_hash(shown.state),
            narrative=shown.exchange.turn.narrative,
            suggestions=tuple(shown.exchange.turn.suggestions),
            state=shown.state,
        )

    def retry(self) -> AsyncIterator[Event]:
        """Play the last failed or cancelled turn again, with a fresh budget.

        Raises:
            RuntimeError: there is no failed or cancelled turn to retry.
        """
        if self.pending is None:
            raise RuntimeError("there is no failed or cancelled turn to retry")
        if self._ending is not None:
            raise StoryOver(f"the story is over ({self._ending.title}): undo takes back the ending turn")
        pending = self.pending
        return self._followed(self._run(pending.turn, pending.player_input, retry=pending.retries + 1))

    def cancel(self) -> None:
        """Cancel the turn in flight, wherever it is; a no-op when idle."""
        if self._cancel is not None and not self._cancel.done():
            self._cancel.set_result(None)

    def undo(self) -> TurnUndone | None:
        """Restore the state before the last committed turn, or None if none can be taken back
        (`can_undo`: none is committed, a turn is in flight, or `UNDO_TURNS` were taken back)."""
        if not self.can_undo:
            return None
        self.state, self.history = self._undo_stack.pop()
        self.commits -= 1
        self.pending = None
        # the turn goes with all its versions; the one before it is the latest again, its versions browsable
        self.versions, self._fixing = self._fixed.pop(), None
        if self._ending is not None and self._ending.commit >= self.commits:
            self._ending = None  # this undo took back the commit that reached it
        event = TurnUndone(turn=self.next_turn - 1, state_hash=state_hash(self.state), state=self.state)
        self.ledger = self.ledger.apply(event)
        return event

    def no_branch(self, turn: int) -> str | None:
        """Why the story cannot continue from after `turn` on a new branch now, in the player's
        words, or None when it can (see `branch`)."""
        if self.busy:
            return "a turn is in flight: wait for it, or cancel it"
        later = self.commits if turn == 0 else self.ledger.turns_after(turn)
        if later is None:
            shown = ", ".join(str(t.turn) for t in self.ledger.turns()[-12:]) or "none yet"
            return f"turn {turn} is not on the path of branch {self.ledger.branch} (its turns: {shown})"
        if later > len(self._undo_stack):
            return f"only the latest {UNDO_TURNS} turns of a branch can be continued from"
        return None

    def branch(self, turn: int) -> BranchStarted:
        """Continue the story from after `turn` (0: its start) on a new branch; the branch played
        until now is kept whole, where it stands, and `switch` goes back to it.

        The new branch's world is exactly the world after `turn`, its history the model's history
        then, its undo the turns before, and `turn` its latest turn again, with its versions as
        they were when the next command fixed them (so another version of an earlier turn is a
        branch from it, then `regenerate` or `choose`). Nothing is asked of the narrator.

        Raises:
            BranchRefused: see `no_branch`.
        """
        problem = self.no_branch(turn)
        if problem is not None:
            raise BranchRefused(problem)
        later = self.commits if turn == 0 else self.ledger.turns_after(turn)
        assert later is not None  # `no_branch` found it on the path
        self._parked[self.ledger.branch] = self._here()
        for _ in range(later):
            self.state, self.history = self._undo_stack.pop()
            self.versions = self._fixed.pop()
            self.commits -= 1
        self._fixing, self.pending = None, None
        if self._ending is not None and self._ending.commit >= self.commits:
            self._ending = None  # reached after the fork: this branch has not reached it
        event = BranchStarted(
            turn=turn,
            branch=self.ledger.branch_count + 1,
            parent=self.ledger.branch,
            state_hash=state_hash(self.state),
            state=self.state,
        )
        self.ledger = self.ledger.apply(event)
        return event

    def switch(self, branch: int) -> BranchSwitched:
        """Play branch `branch` again, where it was left: its world, history, undo, versions,
        the command to retry and its ending. The branch played until now is kept where it stands.

        Raises:
            BranchRefused: a turn is in flight, or there is no such other branch.
        """
        if self.busy:
            raise BranchRefused("a turn is in flight: wait for it, or cancel it")
        if branch == self.ledger.branch:
            raise BranchRefused(f"branch {branch} is the one being played")
        story = self._parked.pop(branch, None)
        if story is None:
            raise BranchRefused(f"there is no branch {branch} (the story has 1 to {self.ledger.branch_count})")
        self._parked[self.ledger.branch] = self._here()
        self._take(story)
        latest = next((b.latest for b in self.ledger.branches() if b.number == branch), 0)
        event = BranchSwitched(turn=latest, branch=branch, state_hash=state_hash(self.state), state=self.state)
        self.ledger = self.ledger.apply(event)
        return event

    def branch_endings(self) -> dict[int, StoryEnding]:
        """The ending each branch stands at, by branch number (those that reached none are left out)."""
        endings = {number: story.ending for number, story in self._parked.items() if story.ending is not None}
        if self._ending is not None:
            endings[self.ledger.branch] = self._ending
        return endings

    def _here(self) -> CommittedStory:
        """The branch being played, where it stands (to park it while another is played)."""
        return CommittedStory(
            self.state,
            self.history,
            tuple(self._undo_stack),
            self.commits,
            self.versions,
            self._ending,
            tuple(self._fixed),
            self.pending,
        )

    def _take(self, story: CommittedStory) -> None:
        self.state, self.history, self.versions = story.state, story.history, story.versions
        self._undo_stack = deque(story.undo_stack, maxlen=UNDO_TURNS)
        fixed = story.fixed_versions[-len(story.undo_stack) :] if story.undo_stack else ()
        self._fixed = deque((None,) * (len(story.undo_stack) - len(fixed)) + fixed, maxlen=UNDO_TURNS)
        self._fixing = None
        self.commits, self._ending, self.pending = story.commits, story.ending, story.pending

    def restore(self, story: CommittedStory) -> None:
        """Put a resumed story's commits in place: its state, the model's history, what undo takes
        back, the latest turn's versions (if it can still change) and its ending."""
        if story.versions is not None and not (
            story.undo_stack
            and 1 <= story.versions.chosen <= len(story.versions.alternatives)
            and story.versions.showing.state == story.state
        ):
            raise ValueError("the chosen version must be the committed state, over a turn on the undo stack")
        self._take(story)
        if story.ledger is not None:
            self.ledger = story.ledger
        self._parked = dict(story.parked)

    def _start(self, turn: int, player_input: str, retry: int, alternative: int) -> tuple[NarrationRequest, Event]:
        """The first request of a turn (or of another version of one) and the event that announces it.

        Another version is asked from the state and history before the turn, never after a version.
        Playing a new command fixes the latest turn: its chosen version is the one that counts.
        """
        if alternative > 1:
            if self.versions is None or self.versions.turn != turn:  # fixed between the call and the first step
                raise RuntimeError("that turn was fixed by the next command; it can no longer get another version")
            before, history = self._undo_stack[-1]
            earlier = tuple(a.exchange.turn.narrative for a in self.versions.alternatives)
            request = NarrationRequest(
                self.pack,
                before,
                history,
                player_input,
                turn,
                alternative=alternative,
                earlier_versions=earlier,
            )
            return request, AlternativeStarted(turn=turn, alternative=alternative, player_input=player_input)
        if self.versions is not None:  # a retry after a failed command finds them fixed already
            self._fixing, self.versions = self.versions, None
        request = NarrationRequest(self.pack, self.state, self.history, player_input, turn)
        return request, TurnStarted(turn=turn, attempt=1, player_input=player_input, retry=retry)

    async def _run(self, turn: int, player_input: str, retry: int, alternative: int = 1) -> AsyncIterator[Event]:
        """Play one turn (or another version of the latest) to its end, in steps around a `_TurnState`:
        stream an attempt, judge it, show its prose, then commit it, fail the turn, or ask for a
        correction and go again."""
        if self._cancel is not None:
            raise RuntimeError("a turn is already in flight")
        request, started = self._start(turn, player_input, retry, alternative)
        cancel = self._cancel = asyncio.get_running_loop().create_future()
        state = _TurnState(request, retry)
        try:
            yield started
            while True:
                attempt: _Attempt | None = None
                async for item in _read_attempt(
                    self.narrator,
                    state.request,
                    cancel,
                    clock=self._clock,
                    sleep=self._sleep,
                    timeout=self.attempt_timeout,
                ):
                    if isinstance(item, _Attempt):
                        attempt = item
                    else:
                        yield item
                assert attempt is not None
                verdict = _judged(attempt, state.request, self.pack, self.rules)
                yield _attempt_finished(state.request, attempt, verdict)
                state, shown = _show_judged(state, attempt, verdict)
                for event in shown:
                    yield event
                if cancel.done():
                    raise Cancelled
                if verdict.ok:
                    for event in self._commit(state, verdict, cancel):
                        yield event
                    return
                yield ValidationFailed(turn=turn, attempt=state.request.attempt, issues=verdict.issues)
                if state.request.attempt - 1 >= self.budget:  # every correction is spent
                    self.pending = state.pending
                    yield TurnFailed(turn=turn, issues=verdict.issues)
                    return
                state = _next_correction(state, attempt, verdict, self.rules)
                yield CorrectionStarted(
                    turn=turn, attempt=state.request.attempt, budget=self.budget, correction=state.request.attempt - 1
                )
        except Cancelled:
            self.pending = state.pending
            yield TurnCancelled(turn=turn)
        except NarratorError as exc:
            self.pending = state.pending
            yield TurnFailed(turn=turn, issues=(Issue("", exc.rule, str(exc)),))
        finally:
            self._cancel = None

    def _commit(self, state: _TurnState, verdict: Verdict, cancel: asyncio.Future[None]) -> Iterator[Event]:
        """Make an accepted turn the committed one, and tell it.

        A correction's prose shows only now, in one step (`prose_replaced`), before the
        state changes: a consumer that stops reading there has committed nothing, and a cancel
        asked for there lands there (as after any event before the commit), so a save that stops
        after it replays to the state it holds.
        """
        accepted, after = verdict.turn, verdict.after
        assert accepted is not None and after is not None
        request = state.request
        turn = request.turn
        if request.is_correction:
            changed = accepted.narrative != state.shown
            yield ProseReplaced(turn=turn, changed=changed, text=accepted.narrative if changed else "")
            if cancel.done():
                raise Cancelled
        before = request.state
        exchange = Exchange(request.player_input, accepted, turn)
        version = Alternative(exchange, after)
        reached = ending_reached(self.pack, before, after)
        if request.is_regeneration:  # the new version is chosen: it takes the turn's place
            assert self.versions is not None
            alternatives = (*self.versions.alternatives, version)
            self.versions = replace(self.versions, alternatives=alternatives, chosen=len(alternatives))
            self.history = remembered(self._undo_stack[-1][1], exchange)
            self._ending = ending_of(self.pack, self.commits - 1, turn, before, after)
        else:
            self._undo_stack.append((before, self.history))
            self._fixed.append(self._fixing)
            self._fixing = None
            self.history = remembered(self.history, exchange)
            self.versions = Versions(turn, (version,), 1)
            self.commits += 1
            if self._ending is None:
                self._ending = ending_of(self.pack, self.commits - 1, turn, before, after)
        self.state = after
        self.pending = None
        yield TurnCommitted(
            turn=turn,
            state_hash=state_hash(after),
            narrative=accepted.narrative,
            state_patch=tuple(accepted.patch_json()),
            suggestions=tuple(accepted.suggestions),
            state=after,
        )
        if reached is not None:
            ending_id, closing = reached
            yield StoryEnded(turn=turn, ending=ending_id, title=closing.title, text=closing.text)
