"""The `replay` narrator: the recorded model output of a saved session, played back.

It answers each request with what the model did for that turn and attempt
when the session was played: the same structured and text deltas at their
recorded times (scaled by `speed`), the same finish (stop reason, usage), the
same transient faults, errors and cancels. The engine judges the replayed
output exactly as it judged the live one, so a replay that reaches another
decision shows that the engine (or the save) changed.

The narrator knows nothing of save files: `storyloom.saves.replay` reads a save and
hands it `RecordedAnswer`s.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from storyloom.engine.narration import (
    Chunk,
    Finish,
    NarrationRequest,
    NarratorError,
    NarratorRefusal,
    StructuredDelta,
    TextDelta,
    TransientNarratorError,
)


@dataclass(frozen=True)
class RecordedAnswer:
    """What the model did for one request (one turn, one attempt), as recorded.

    Attributes:
        turn, attempt: which request this answers.
        deltas: (milliseconds since the attempt started, "s" structured or "t" text, chunk).
        finish: the recorded stop reason and usage.
        error: (rule, message) when the narrator raised instead of finishing.
        retry_after: for a transient fault the engine retried, the delay it waited.
        cancel: the player cancelled after these deltas; the narrator asks for the cancel and waits.
    """

    turn: int
    attempt: int
    deltas: tuple[tuple[int, str, str], ...] = ()
    finish: Finish = field(default_factory=Finish)
    error: tuple[str, str] | None = None
    retry_after: float | None = None
    cancel: bool = False

    @staticmethod
    def prose_deltas(prose: Iterable[tuple[int, str]]) -> tuple[tuple[int, str, str], ...]:
        """Prose shown by an attempt that was cut short (only the prose is known), rewritten as the
        start of a turn's JSON, so the engine shows the same prose again."""
        chunks = list(prose)
        if not chunks:
            return ()
        return (
            (0, "s", '{"narrative": "'),
            *((at, "s", json.dumps(text, ensure_ascii=False)[1:-1]) for at, text in chunks),
        )

    @classmethod
    def cancelled_with_prose(cls, turn: int, attempt: int, prose: Iterable[tuple[int, str]]) -> RecordedAnswer:
        """A cancelled attempt of which only the prose shown is known."""
        return cls(turn, attempt, cls.prose_deltas(prose), cancel=True)


class ReplayExhausted(NarratorError):
    """The save holds no answer for a request: the replay asked something the live session never did."""

    rule = "replay.exhausted"


class _RecordedError(NarratorError):
    """A narrator error as recorded, with its original rule id."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule


class ReplayNarrator:
    """Plays recorded answers back, keyed by (turn, attempt), in recorded order.

    A retried turn and another version of a turn ask for the same (turn, attempt) again: each
    gets the next answer recorded for it, as they were asked live.

    Args:
        answers: the recorded answers of a save, in the order they were given.
        speed: how much faster than recorded to stream (`math.inf`: no waiting at all).
        model: the recorded model, for status lines.
        sleep: how to wait between chunks (tests pass a fake).
        clock: seconds on a monotonic clock. Each chunk is due at its recorded time (scaled) after the
            answer started, by this clock: a consumer that is slow to take a chunk (a UI painting it)
            delays the next one only if it is not yet due, so the delays do not add up. A chunk
            already due still waits for one turn of the event loop, as a live stream's read does:
            at a finite speed someone watches, and the screen paints and takes keys between
            chunks. At full speed (`math.inf`, headless) nothing waits at all.
        on_cancel: called when the recording says the player cancelled here
            (the replay driver passes `session.cancel`).
        on_exhausted: called when there is no recorded answer left for a request
            (the save ended mid-turn); when unset, the narrator raises `ReplayExhausted`.
    """

    name = "replay"

    def __init__(
        self,
        answers: Iterable[RecordedAnswer],
        *,
        speed: float = math.inf,
        model: str = "",
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        on_cancel: Callable[[], None] | None = None,
        on_exhausted: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        if not speed > 0:
            raise ValueError("speed must be above 0")
        self.model = model
        self.speed = speed
        self.on_cancel = on_cancel
        self.on_exhausted = on_exhausted
        self._sleep = sleep
        self._clock = clock
        self._answers: dict[tuple[int, int], deque[RecordedAnswer]] = defaultdict(deque)
        for answer in answers:
            self.add(answer)

    def add(self, answer: RecordedAnswer) -> None:
        """One more recorded answer, after those given (a save replayed as it is read hands them on a
        step at a time)."""
        self._answers[(answer.turn, answer.attempt)].append(answer)

    async def narrate(self, request: NarrationRequest) -> AsyncIterator[Chunk]:
        queue = self._answers.get((request.turn, request.attempt))
        if not queue:
            if self.on_exhausted is not None:
                self.on_exhausted()
                await asyncio.Event().wait()
            raise ReplayExhausted(
                f"the save holds no recorded answer for turn {request.turn}, attempt {request.attempt}"
            )
        answer = queue.popleft()
        if not queue:  # answered: a long replay keeps only the answers still to come
            del self._answers[(request.turn, request.attempt)]
        started = self._clock()
        paced = math.isfinite(self.speed)
        for at, kind, text in answer.deltas:
            if paced:
                due = started + at / 1000 / self.speed - self._clock()
                await (self._sleep(due) if due > 0 else asyncio.sleep(0))
            yield StructuredDelta(text, at_ms=at) if kind == "s" else TextDelta(text, at_ms=at)
        if answer.retry_after is not None:
            raise TransientNarratorError(
                answer.error[1] if answer.error else "recorded transient fault", retry_after=answer.retry_after
            )
        if answer.error is not None:
            raise _error(*answer.error)
        if answer.cancel:
            if self.on_cancel is not None:
                self.on_cancel()
            await asyncio.Event().wait()
        yield answer.finish


def _error(rule: str, message: str) -> NarratorError:
    if rule == TransientNarratorError.rule:
        return TransientNarratorError(message)
    if rule == NarratorRefusal.rule:
        return NarratorRefusal(message)
    return _RecordedError(rule, message)
