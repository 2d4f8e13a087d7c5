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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from storyloom.engine.events import Event, ProseDelta
from storyloom.engine.lifecycle import ATTEMPT_MAX_SECONDS, Session
from storyloom.engine.narration import Finish
from storyloom.engine.narrators.replay import RecordedAnswer, ReplayNarrator
from storyloom.engine.packs import StoryPack
from storyloom.engine.state import canonical_json, state_hash
from storyloom.saves.errors import CorruptRecord
from storyloom.saves.format import Record, Save
from storyloom.saves.reader import gc_paused
from storyloom.saves.verify import open_pack, rebuild

_CANCEL_AFTER = {"attempt_finished", "prose_replaced", "narrator_retrying"}
"""Recorded events after which a cancel lands in the engine at the same point (not mid-stream)."""
_IGNORED_FIELDS = {"state", "partial", "interrupted", "tally"}
_TERMINAL = {"turn_committed", "turn_failed", "turn_cancelled", "story_ended"}


@dataclass(frozen=True)
class ReplayStep:
    """One thing the player did, in order: `play` an input, `retry` a failed turn, `undo`, ask for
    another version of the latest turn (`regenerate`) or `choose` one of its versions.

    Attributes:
        action: "play", "retry", "undo", "regenerate" or "choose".
        turn: the turn number the step concerns.
        player_input: what the player typed (for play and retry).
        expected: the recorded events this step produced (comparable form, no timing).
        cancel_after: index in `expected` after whose event the player cancelled, if they did.
        interrupted: the save stopped during this step (a crash); its end is not compared.
        alternative: for `choose`, the version chosen (1-based).
    """

    action: str
    turn: int
    player_input: str = ""
    expected: tuple[dict[str, Any], ...] = ()
    cancel_after: int | None = None
    interrupted: bool = False
    alternative: int = 0


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
    try:
        answers = _answers(save.records)
        steps = _steps(save.records)
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:  # a doctored `partial` or deltas
        raise CorruptRecord(
            save.path,
            f"a record holds data of the wrong shape to replay ({type(exc).__name__}: "
            f"{exc}); the file was damaged or edited",
        ) from None
    narrator = ReplayNarrator(answers, speed=speed, model=save.header.model, sleep=sleep)
    return ReplayPlan(pack, steps, narrator, save, final_hash)


def _answers(records: tuple[Record, ...]) -> list[RecordedAnswer]:
    """The model's recorded answers, one per request the engine made."""
    answers: list[RecordedAnswer] = []
    turn, attempt, open_attempt = 0, 1, False
    for record in records:
        kind, data = record.kind, record.data
        if kind in ("turn_started", "alternative_started"):
            turn, attempt, open_attempt = data["turn"], 1, True
        elif kind == "correction_started":
            attempt, open_attempt = data["attempt"], True
        elif kind == "narrator_retrying":
            prose = [(int(a), str(t)) for a, t in (data.get("partial") or {}).get("prose", [])]
            answers.append(
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
            answers.append(RecordedAnswer(turn, data["attempt"], deltas, finish))
            open_attempt = False
        elif kind == "turn_failed" and open_attempt:
            issue = (data.get("issues") or [{"rule": "narrator.error", "message": "the narrator failed"}])[0]
            prose = [(int(a), str(t)) for a, t in (data.get("partial") or {}).get("prose", [])]
            answers.append(
                RecordedAnswer(
                    turn, attempt, RecordedAnswer.prose_deltas(prose), error=(issue["rule"], issue["message"])
                )
            )
            open_attempt = False
        elif kind == "turn_cancelled" and data.get("interrupted"):
            open_attempt = False  # the save stopped here (a crash): the replay cancels, nothing is asked
        elif kind == "turn_cancelled" and open_attempt:
            prose = (data.get("partial") or {}).get("prose", [])
            answers.append(RecordedAnswer.cancelled_with_prose(turn, attempt, [(int(a), str(t)) for a, t in prose]))
            open_attempt = False
    return answers


def _steps(records: tuple[Record, ...]) -> list[ReplayStep]:
    """The player's actions, each with the events it produced as recorded."""
    steps: list[ReplayStep] = []
    current: dict[str, Any] | None = None

    def close(interrupted: bool = False) -> None:
        nonlocal current
        if current is None:
            return
        events = current["events"]
        interrupted = interrupted or not (events and events[-1]["event"] in _TERMINAL)
        cancel_after = current["cancel_after"]
        if interrupted:
            cancel_after = len(events) - 1  # cancel where the record stops, so nothing more is committed
        steps.append(
            ReplayStep(current["action"], current["turn"], current["input"], tuple(events), cancel_after, interrupted)
        )
        current = None

    for record in records:
        kind, data = record.kind, record.data
        if kind == "resumed":
            continue
        if kind in ("turn_started", "alternative_started"):
            close()
            action = "regenerate" if kind == "alternative_started" else "retry" if data.get("retry", 0) else "play"
            current = {
                "action": action,
                "turn": data["turn"],
                "input": data.get("player_input", ""),
                "events": [],
                "cancel_after": None,
            }
        elif kind == "turn_undone":
            close()
            steps.append(ReplayStep("undo", data["turn"], expected=(comparable(kind, data),)))
            continue
        elif kind == "alternative_chosen":
            close()
            chosen = int(data["alternative"])
            steps.append(ReplayStep("choose", data["turn"], expected=(comparable(kind, data),), alternative=chosen))
            continue
        if current is None:
            continue
        if kind == "turn_cancelled" and data.get("interrupted"):
            close(interrupted=True)
            continue
        if kind == "turn_cancelled" and current["events"] and current["events"][-1]["event"] in _CANCEL_AFTER:
            current["cancel_after"] = len(current["events"]) - 1
        current["events"].append(comparable(kind, data))
    close()
    return steps


def _differences(expected: dict[str, Any] | None, actual: dict[str, Any] | None) -> str:
    """What differs between two events of the same kind (`_describe` may read the same for both):
    each differing field, with both values from where they part."""
    if expected is None or actual is None or expected.get("event") != actual.get("event"):
        return ""
    parts = []
    for name in sorted(set(expected) | set(actual)):
        was, now = expected.get(name), actual.get(name)
        if was != now:
            was_text, now_text = _from_where_they_part(canonical_json(was), canonical_json(now))
            parts.append(f"its {name} differs (the record: {was_text}; the replay: {now_text})")
    return "; ".join(parts)


def _from_where_they_part(first: str, second: str, width: int = 40) -> tuple[str, str]:
    """Two texts shown from a little before their first difference, each cut to `width` characters."""
    at = next((i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), min(len(first), len(second)))
    start = max(0, at - 10)

    def cut(text: str) -> str:
        shown = text[start : start + width]
        return ("…" if start else "") + shown + ("…" if start + width < len(text) else "")

    return cut(first), cut(second)


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


class Replayer:
    """Drives a fresh session through a plan's steps, comparing every event with the record.

    Args:
        plan: from `replay_plan`.
        sleep: how the session waits before retrying a recorded transient fault (scaled by speed).
    """

    def __init__(
        self,
        plan: ReplayPlan,
        *,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
    ):
        self.plan = plan
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
            budget=plan.save.header.budget,
            rules=plan.save.header.rules,
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
        self.result.final_hash = state_hash(self.session.state)
        return self.result

    async def play_step(self, step: ReplayStep) -> AsyncIterator[Event]:
        """Play one recorded step, yielding the engine's events (prose deltas included) as they come."""
        if step.action in ("undo", "choose"):
            done = self.session.undo() if step.action == "undo" else self.session.choose(step.alternative)
            if done is not None:
                self.result.events.append(done)
                yield done
            self._compare(step, 0, done)
            return
        if step.action == "regenerate" and not self.session.can_regenerate:
            self._compare(step, 0, None)  # the replayed story has no such turn to ask again
            return
        if step.action == "regenerate":
            events = self.session.regenerate()
        elif step.action == "retry" and self.session.pending is not None:
            events = self.session.retry()
        else:
            events = self.session.play(step.player_input)
        index = 0
        async for event in events:
            self.result.events.append(event)
            if isinstance(event, ProseDelta):
                yield event
                continue
            if step.interrupted and index >= len(step.expected):
                self.session.cancel()  # the record stops here: the rest of this turn never happened
                index += 1
                continue
            if self.result.divergence is None and not self._compare(step, index, event):
                self.session.cancel()
            yield event
            if step.cancel_after == index:
                self.session.cancel()
            index += 1
        if self.result.divergence is None and index < len(step.expected) and not step.interrupted:
            self._compare(step, index, None)
        if step.interrupted and step is self.plan.steps[-1]:
            self.result.interrupted = step.turn
        elif step.interrupted:
            self.result.went_on_after.append(step.turn)

    def _compare(self, step: ReplayStep, index: int, event: Event | None) -> bool:
        expected = step.expected[index] if index < len(step.expected) else None
        actual = comparable(event.event, event.to_json()) if event is not None else None
        if expected == actual:
            return True
        if self.result.divergence is None:
            self.result.divergence = Divergence(step.turn, index, expected, actual)
        return False
