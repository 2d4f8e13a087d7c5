"""Replaying a save through a fresh engine session, and catching any divergence.

`replay_plan` reads a save into what a replay needs: the pack (digest
checked), the player's recorded actions (play, retry, undo, regenerate,
choose) and a `replay`
narrator loaded with the recorded model output. `Replayer` drives a fresh
`Session` through those actions and compares every event the engine emits
with the recorded one (timing aside); the first difference is a
`Divergence`, reported, never smoothed over.

The TUI drives the same `Replayer` step by step (`Replayer.play_step`) to
show a replay frame for frame; `storyloom replay --headless` prints it.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from storyloom.engine.events import Event, ProseDelta, TurnCommitted
from storyloom.engine.lifecycle import ATTEMPT_MAX_SECONDS, BranchRefused, Session
from storyloom.engine.narration import Finish
from storyloom.engine.narrators.replay import RecordedAnswer, ReplayNarrator
from storyloom.engine.packs import StoryPack
from storyloom.engine.state import canonical_json, state_hash
from storyloom.saves.answers import from_where_they_part
from storyloom.saves.errors import CorruptRecord, SaveError
from storyloom.saves.format import Record, Save, SaveHeader
from storyloom.saves.reader import NotStreamable, gc_paused, load_save, open_stream
from storyloom.saves.rebuild import rebuild, rebuild_records
from storyloom.saves.verify import open_pack

_CANCEL_AFTER = {"attempt_finished", "prose_replaced", "narrator_retrying"}
"""Recorded events after which a cancel lands in the engine at the same point (not mid-stream)."""
_IGNORED_FIELDS = {"state", "partial", "interrupted", "tally"}
_TERMINAL = {"turn_committed", "turn_failed", "turn_cancelled", "story_ended"}
_OUTCOMES = {"turn_committed", "story_ended"}
"""What a turn the record leaves in flight must not reach when replayed: it changes the story (a failure
or a cancel leaves the turn to retry, as the interrupted turn is left)."""


@dataclass(frozen=True)
class ReplayStep:
    """One thing the player did, in order: `play` an input, `retry` a failed turn, `undo`, ask for
    another version of the latest turn (`regenerate`) or `choose` one of its versions.

    Attributes:
        action: "play", "retry", "undo", "regenerate", "choose", "branch" (from after `turn`) or
            "switch" (to branch `alternative`).
        turn: the turn number the step concerns.
        player_input: what the player typed (for play and retry).
        expected: the recorded events this step produced (comparable form, no timing).
        cancel_after: index in `expected` after whose event the player cancelled, if they did.
        interrupted: the save stopped during this step (a crash); its end is not compared.
        alternative: for `choose`, the version chosen (1-based); for `branch` and `switch`, the branch.
        last: the save's last step (an interrupted last step is where the save stops).
    """

    action: str
    turn: int
    player_input: str = ""
    expected: tuple[dict[str, Any], ...] = ()
    cancel_after: int | None = None
    interrupted: bool = False
    alternative: int = 0
    last: bool = False


@dataclass
class ReplayPlan:
    """What a replay needs: the story, the player's steps, the narrator with the recorded output."""

    pack: StoryPack
    steps: list[ReplayStep]
    narrator: ReplayNarrator
    save: Save
    final_hash: str
    """The state hash the recorded session ended in."""

    @property
    def header(self) -> SaveHeader:
        return self.save.header

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.save.warnings

    @property
    def inputs(self) -> list[str]:
        """The player's recorded inputs, in order (retries and other versions repeat their turn's input)."""
        return [s.player_input for s in self.steps if s.action not in ("undo", "choose")]

    def __iter__(self) -> Iterator[Any]:
        """Unpacks as `(pack, inputs, narrator)`."""
        return iter((self.pack, self.inputs, self.narrator))


@dataclass(frozen=True)
class Divergence:
    """The first place the replay differs from the record."""

    turn: int
    index: int
    expected: dict[str, Any] | None
    actual: dict[str, Any] | None

    def __str__(self) -> str:
        said = (
            f"turn {self.turn}: the record has {_describe(self.expected)}, but the replay gave {_describe(self.actual)}"
        )
        differs = _differences(self.expected, self.actual)
        return f"{said}; {differs}" if differs else said


@dataclass
class ReplayResult:
    """How a replay went."""

    events: list[Event] = field(default_factory=list, repr=False)
    """Every event the replay gave. Left out of the repr: at 5,000 turns one (whole states included) is
    16 MB and half a second, and `asyncio.run` on Python 3.11 makes two of its main task's result
    on the way out (putting back the SIGINT handler formats the old one, a partial holding the task)."""
    divergence: Divergence | None = None
    final_hash: str = ""
    expected_final_hash: str = ""
    interrupted: int | None = None
    """The turn in flight where the save stops (a crash ended it there), if it does."""
    commits: int = 0
    """Commits the replay made (kept as a count: a text replay keeps no events)."""
    went_on_after: list[int] = field(default_factory=list)
    """Turns a crash interrupted that the save then went on after (a resume closed them)."""

    @property
    def faithful(self) -> bool:
        return self.divergence is None and self.final_hash == self.expected_final_hash


_NESTED = (dict, list, tuple)


def comparable(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """An event as the replay compares it: no timing, no bulky state, JSON types only."""
    plain: dict[str, Any] = {"event": kind}
    for key, value in data.items():
        if key in _IGNORED_FIELDS or key == "event":
            continue
        if key == "deltas":  # the bulk of a save: each (time, kind, text) is two strings compared
            plain[key] = [[d[1], d[2]] for d in value]
        else:
            plain[str(key)] = _plain(value) if isinstance(value, _NESTED) else value
    return plain


def _plain(value: Any) -> Any:
    """A value with JSON's types (tuples as lists), as a JSON round trip would give it, without one:
    encoding and decoding every event twice was a tenth of a replay at full speed. Only what nests
    is gone into (a call for each plain value was half of the time this took)."""
    if isinstance(value, dict):
        return {str(key): _plain(item) if isinstance(item, _NESTED) else item for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) if isinstance(item, _NESTED) else item for item in value]
    return value


@gc_paused()  # reads every record's data: a save's worth of small dicts and lists, no garbage cycles
def replay_plan(
    save: Save,
    *,
    speed: float = math.inf,
    pack: StoryPack | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> ReplayPlan:
    """Read a save into a replay plan (see the module docstring).

    Raises:
        PackMismatch: the story cannot be found or changed.
        InvalidCommit: the save's commits do not hold (a replay of it would mean nothing).
    """
    pack = open_pack(save.header, save.path, pack)
    final_hash = state_hash(rebuild(save, pack).state)
    answers: list[RecordedAnswer] = []
    steps = list(_read_steps(save.path, save.records, answers.append))
    narrator = ReplayNarrator(answers, speed=speed, model=save.header.model, sleep=sleep)
    return ReplayPlan(pack, steps, narrator, save, final_hash)


@dataclass
class StreamedPlan:
    """A replay plan read a record at a time (`stream_plan`): its steps are read as they are played,
    and each step's recorded answers reach the narrator just before it, so a replay of a save of any
    size holds one step's records, never the save."""

    pack: StoryPack
    steps: Iterator[ReplayStep]
    narrator: ReplayNarrator
    header: SaveHeader
    path: Path
    final_hash: str
    warnings: tuple[str, ...] = ()
    """What reading the save had to overlook (a torn last line), for the player to read."""
    branches: int = 1
    """How many branches the story has (its judged reading counted them): one needs no path read."""


def stream_plan(path: Path, *, speed: float = math.inf, pack: StoryPack | None = None) -> StreamedPlan | ReplayPlan:
    """`replay_plan` for a save read twice a record at a time: once judged (`rebuild_records`, as
    verify reads it), then again for its steps as they are replayed. A save the streamed reading
    does not take (an older shape, damage) is read whole (`replay_plan` of `load_save`), which names
    any fault.

    Raises:
        SaveError: as `replay_plan` (a record of the wrong shape only when the replay reaches it).
    """
    try:
        stream = open_stream(path)
        pack = open_pack(stream.header, path, pack)
        records = stream.records()
        try:
            built = rebuild_records(path, records, pack, rules=stream.header.rules)
        finally:
            records.close()
    except (NotStreamable, SaveError):
        return replay_plan(load_save(path), speed=speed, pack=pack)
    narrator = ReplayNarrator((), speed=speed, model=stream.header.model)

    def steps() -> Iterator[ReplayStep]:
        again = open_stream(path).records()
        try:
            yield from _read_steps(path, again, narrator.add)
        except NotStreamable:
            raise CorruptRecord(path, "the save changed while it was replayed") from None
        finally:
            again.close()

    return StreamedPlan(
        pack,
        steps(),
        narrator,
        stream.header,
        path,
        state_hash(built.state),
        tuple(stream.warnings),
        built.ledger.branch_count,
    )


def _read_steps(
    path: Path, records: Iterable[Record], answer: Callable[[RecordedAnswer], None]
) -> Iterator[ReplayStep]:
    """The player's steps, each with the events it produced as recorded, read in one pass over the
    records; the model's recorded answers go to `answer` as they are read (one per request the
    engine made), each before the step that asks for it. The last step is marked `last`."""
    reading = _Reading(answer)
    held: ReplayStep | None = None
    try:
        for record in records:
            for step in reading.feed(record):
                if held is not None:
                    yield held
                held = step
        for step in reading.end():
            if held is not None:
                yield held
            held = step
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:  # a doctored `partial` or deltas
        raise CorruptRecord(
            path,
            f"a record holds data of the wrong shape to replay ({type(exc).__name__}: "
            f"{exc}); the file was damaged or edited",
        ) from None
    if held is not None:
        yield replace(held, last=True)


class _Reading:
    """What a replay reads of a save's records, one record at a time (`feed`): the model's answers,
    handed on as they are read, and the player's steps, each given once the record after it shows it
    is over (`end` gives the last)."""

    def __init__(self, answer: Callable[[RecordedAnswer], None]) -> None:
        self._answer = answer
        self._turn, self._attempt, self._open_attempt = 0, 1, False
        self._current: dict[str, Any] | None = None

    def feed(self, record: Record) -> list[ReplayStep]:
        kind, data = record.kind, record.data
        self._answers(kind, data)
        return self._steps(kind, data)

    def end(self) -> list[ReplayStep]:
        return self._close()

    def _answers(self, kind: str, data: dict[str, Any]) -> None:
        """The model's recorded answers, one per request the engine made."""
        turn, attempt = self._turn, self._attempt
        if kind in ("turn_started", "alternative_started"):
            self._turn, self._attempt, self._open_attempt = data["turn"], 1, True
        elif kind == "correction_started":
            self._attempt, self._open_attempt = data["attempt"], True
        elif kind == "narrator_retrying":
            prose = [(int(a), str(t)) for a, t in (data.get("partial") or {}).get("prose", [])]
            self._answer(
                RecordedAnswer(
                    turn,
                    data["attempt"],
                    RecordedAnswer.prose_deltas(prose),
                    error=("narrator.unavailable", data["reason"]),
                    retry_after=float(data["delay"]),
                )
            )
        elif kind == "attempt_finished":
            deltas = tuple([(int(d[0]), str(d[1]), str(d[2])) for d in data.get("deltas", ())])
            finish = Finish(data.get("stop_reason", "end"), dict(data.get("usage", {})))
            self._answer(RecordedAnswer(turn, data["attempt"], deltas, finish))
            self._open_attempt = False
        elif kind == "turn_failed" and self._open_attempt:
            issue = (data.get("issues") or [{"rule": "narrator.error", "message": "the narrator failed"}])[0]
            prose = [(int(a), str(t)) for a, t in (data.get("partial") or {}).get("prose", [])]
            self._answer(
                RecordedAnswer(
                    turn, attempt, RecordedAnswer.prose_deltas(prose), error=(issue["rule"], issue["message"])
                )
            )
            self._open_attempt = False
        elif kind == "turn_cancelled" and data.get("interrupted"):
            self._open_attempt = False  # the save stopped here (a crash): the replay cancels, nothing is asked
        elif kind == "turn_cancelled" and self._open_attempt:
            prose = (data.get("partial") or {}).get("prose", [])
            self._answer(RecordedAnswer.cancelled_with_prose(turn, attempt, [(int(a), str(t)) for a, t in prose]))
            self._open_attempt = False

    def _close(self, interrupted: bool = False) -> list[ReplayStep]:
        current, self._current = self._current, None
        if current is None:
            return []
        events = current["events"]
        interrupted = interrupted or not (events and events[-1]["event"] in _TERMINAL)
        cancel_after = current["cancel_after"]
        if interrupted:
            cancel_after = len(events) - 1  # cancel where the record stops, so nothing more is committed
        return [
            ReplayStep(current["action"], current["turn"], current["input"], tuple(events), cancel_after, interrupted)
        ]

    def _steps(self, kind: str, data: dict[str, Any]) -> list[ReplayStep]:
        """The player's actions, each with the events it produced as recorded."""
        if kind == "resumed":
            return []
        closed: list[ReplayStep] = []
        if kind in ("turn_started", "alternative_started"):
            closed = self._close()
            action = "regenerate" if kind == "alternative_started" else "retry" if data.get("retry", 0) else "play"
            self._current = {
                "action": action,
                "turn": data["turn"],
                "input": data.get("player_input", ""),
                "events": [],
                "cancel_after": None,
            }
        elif kind == "turn_undone":
            return [*self._close(), ReplayStep("undo", data["turn"], expected=(comparable(kind, data),))]
        elif kind == "alternative_chosen":
            chosen = int(data["alternative"])
            step = ReplayStep("choose", data["turn"], expected=(comparable(kind, data),), alternative=chosen)
            return [*self._close(), step]
        elif kind in ("branch_started", "branch_switched"):
            action = "branch" if kind == "branch_started" else "switch"
            step = ReplayStep(action, data["turn"], expected=(comparable(kind, data),), alternative=int(data["branch"]))
            return [*self._close(), step]
        current = self._current
        if current is None:
            return closed
        if kind == "turn_cancelled" and data.get("interrupted"):
            return [*closed, *self._close(interrupted=True)]
        if kind == "turn_cancelled" and current["events"] and current["events"][-1]["event"] in _CANCEL_AFTER:
            current["cancel_after"] = len(current["events"]) - 1
        current["events"].append(comparable(kind, data))
        return closed


def _differences(expected: dict[str, Any] | None, actual: dict[str, Any] | None) -> str:
    """What differs between two events of the same kind (`_describe` may read the same for both):
    each differing field, with both values from where they part."""
    if expected is None or actual is None or expected.get("event") != actual.get("event"):
        return ""
    parts = []
    for name in sorted(set(expected) | set(actual)):
        was, now = expected.get(name), actual.get(name)
        if was != now:
            was_text, now_text = from_where_they_part(canonical_json(was), canonical_json(now))
            parts.append(f"its {name} differs (the record: {was_text}; the replay: {now_text})")
    return "; ".join(parts)


def _describe(event: dict[str, Any] | None) -> str:
    if event is None:
        return "nothing more"
    kind = str(event["event"])
    if kind == "turn_committed":
        return f"a commit (state {event.get('state_hash', '')[:12]}…)"
    if kind in ("validation_failed", "turn_failed"):
        rules = ", ".join(i.get("rule", "?") for i in event.get("issues", []))
        return f"{kind} [{rules}]"
    if kind == "attempt_finished":  # the output can read the same and still be judged otherwise: say both
        rules = ", ".join(i.get("rule", "?") for i in event.get("issues", [])) or "no issues"
        return f"attempt {event.get('attempt')} output {str(event.get('raw'))[:60]!r} judged [{rules}]"
    if kind == "turn_undone":
        return f"an undo (state {str(event.get('state_hash', ''))[:12]}…)"
    if kind == "alternative_chosen":
        return f"version {event.get('alternative')} chosen (state {str(event.get('state_hash', ''))[:12]}…)"
    if kind == "alternative_started":
        return f"another version ({event.get('alternative')}) of the turn"
    return kind


_AT_ONCE = ("undo", "choose", "branch", "switch")
"""The steps that ask nothing of the narrator."""


class Replayer:
    """Drives a fresh session through a plan's steps, comparing every event with the record.

    Args:
        plan: from `replay_plan`.
        sleep: how the session waits before retrying a recorded transient fault (scaled by speed).
    """

    def __init__(
        self,
        plan: ReplayPlan | StreamedPlan,
        *,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        keep_events: bool = True,
    ):
        self.plan = plan
        self.keep_events = keep_events
        """Keep every event in `result.events` (the screen counts them); a text replay keeps none."""
        self._last_turn = 0
        speed = plan.narrator.speed

        async def scaled(delay: float) -> None:
            if math.isfinite(speed):
                await (sleep or asyncio.sleep)(delay / speed)

        # Replayed at `speed`, an attempt takes 1/speed of its recorded time, and so may its limit: an
        # attempt that finished in time when played finishes in time when replayed slower.
        limit = ATTEMPT_MAX_SECONDS / speed if math.isfinite(speed) else ATTEMPT_MAX_SECONDS
        self.session = Session(
            plan.pack,
            plan.narrator,
            budget=plan.header.budget,
            rules=plan.header.rules,
            sleep=scaled,
            attempt_timeout=limit,
        )
        plan.narrator.on_cancel = self.session.cancel
        plan.narrator.on_exhausted = self.session.cancel
        self.result = ReplayResult(expected_final_hash=plan.final_hash)

    async def run(self, on_event: Callable[[Event], Any] | None = None) -> ReplayResult:
        """Play every step; stop at the first divergence.

        The cycle collector is held off meanwhile (and while the plan is read): the events kept grow
        by some 25 a turn, next to the save's records, and are not garbage cycles (a 5,000-turn
        replay leaves under a thousand objects to collect), yet rescanning them all took a fifth of
        `replay --headless --speed inf` (7.0 s against 5.6 s for the 5,000-turn save).
        """
        with gc_paused():
            for step in self.plan.steps:
                async for event in self.play_step(step):
                    if on_event is not None:
                        on_event(event)
                if self.result.divergence is not None:
                    break
        self.finish()
        return self.result

    def finish(self) -> None:
        """Note the state the replay ends in; if it is not the record's and no event differed, the
        end is where it diverges, named as such (a replay never differs without saying where)."""
        result = self.result
        result.final_hash = state_hash(self.session.state)
        if result.divergence is None and result.final_hash != result.expected_final_hash:
            result.divergence = Divergence(
                self._last_turn,
                -1,
                {"event": "the end of the save", "state_hash": result.expected_final_hash},
                {"event": "the end of the save", "state_hash": result.final_hash},
            )

    def _keep(self, event: Event) -> None:
        self.result.commits += isinstance(event, TurnCommitted)
        if self.keep_events:
            self.result.events.append(event)

    async def play_step(self, step: ReplayStep) -> AsyncIterator[Event]:
        """Play one recorded step, yielding the engine's events (prose deltas included) as they come."""
        self._last_turn = step.turn
        if step.action in _AT_ONCE:
            done = self._at_once(step)
            if done is not None:
                self._keep(done)
                yield done
            self._compare(step, 0, done)
            return
        events = self._asked(step)
        if events is None:
            self._compare(step, 0, None)  # the replayed story has no such turn to ask again
            return
        index = 0
        async for event in events:
            self._keep(event)
            if isinstance(event, ProseDelta):
                yield event
                continue
            if self._follow(step, index, event):
                yield event
                if step.cancel_after == index:
                    self.session.cancel()
            index += 1
        self._end_step(step, index)

    def _asked(self, step: ReplayStep) -> AsyncIterator[Event] | None:
        """The turn a step asks the narrator for; None for another version of a turn the replay lacks."""
        if step.action == "regenerate":
            return self.session.regenerate() if self.session.can_regenerate else None
        if step.action == "retry" and self.session.pending is not None:
            return self.session.retry()
        return self.session.play(step.player_input)

    def _follow(self, step: ReplayStep, index: int, event: Event) -> bool:
        """Compare one event of a step with the record; False for one past where an interrupted record
        stops, which is never shown (the rest of that turn never happened)."""
        if step.interrupted and index >= len(step.expected):
            if event.event in _OUTCOMES and self.result.divergence is None:
                self._compare(step, index, event)  # the record stops mid-turn; the replay went on to an end
            self.session.cancel()
            return False
        if self.result.divergence is None and not self._compare(step, index, event):
            self.session.cancel()
        return True

    def _end_step(self, step: ReplayStep, index: int) -> None:
        """A step played out: a record with more events than came is a divergence; note an interrupted turn."""
        if self.result.divergence is None and index < len(step.expected) and not step.interrupted:
            self._compare(step, index, None)
        if step.interrupted and step.last:
            self.result.interrupted = step.turn
        elif step.interrupted:
            self.result.went_on_after.append(step.turn)

    def _at_once(self, step: ReplayStep) -> Event | None:
        """A step that asks nothing of the narrator: an undo, a choice, a branch or a switch."""
        session = self.session
        if step.action == "undo":
            return session.undo()
        if step.action == "choose":
            return session.choose(step.alternative)
        try:
            return session.branch(step.turn) if step.action == "branch" else session.switch(step.alternative)
        except BranchRefused:
            return None  # the replayed story cannot: it differs from the record here

    def _compare(self, step: ReplayStep, index: int, event: Event | None) -> bool:
        expected = step.expected[index] if index < len(step.expected) else None
        actual = comparable(event.event, event.to_json()) if event is not None else None
        if expected == actual:
            return True
        if self.result.divergence is None:
            self.result.divergence = Divergence(step.turn, index, expected, actual)
        return False
