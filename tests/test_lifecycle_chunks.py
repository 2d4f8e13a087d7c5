"""How the engine reads a narrator's stream: a chunk at a time, never ahead of what the player was shown.

A narrator may have its chunks ready at once (a replay at full speed, a buffered read) or wait for
each (a network read, a paced stream). Either way the engine reads chunk k+1 only after the events
of chunk k were taken, and a cancel made in between stops the stream before it is read on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.narration import Finish, NarrationRequest, StructuredDelta, TransientNarratorError
from tests.conftest import event_names, prose_on_screen

SENTENCES = ["One. ", "Two. ", "Three. ", "Four. ", "Five. "]
CHUNKS = ['{"narrative": "', *SENTENCES, '", "state_patch": []}']
"""The first chunk shows no prose yet; each sentence after it is one prose delta."""


async def _no_wait() -> None:
    return None


async def _loop_turn() -> None:
    await asyncio.sleep(0)


async def _timer() -> None:
    await asyncio.sleep(0.001)


async def _in_a_timeout_scope() -> None:
    with anyio.fail_after(5):  # as an HTTP client's reads do: a scope bound to the task that entered it
        await asyncio.sleep(0.001)


WAITS: dict[str, Callable[[], Awaitable[None]]] = {
    "never waits": _no_wait,
    "yields to the loop": _loop_turn,
    "waits on a timer": _timer,
    "waits in a timeout scope": _in_a_timeout_scope,
}


class CountingNarrator:
    """Streams `CHUNKS`, waiting before each as `wait` does, and counts the chunks it was asked for."""

    name = "counting"
    model = "counting-1"

    def __init__(self, wait: Callable[[], Awaitable[None]], chunks: list[str] = CHUNKS):
        self.wait, self.chunks = wait, chunks
        self.produced = 0
        self.closed = 0

    async def narrate(self, request: NarrationRequest) -> AsyncIterator[Any]:
        try:
            for text in self.chunks:
                await self.wait()
                self.produced += 1
                yield StructuredDelta(text)
            await self.wait()
            yield Finish("end")
        finally:
            self.closed += 1


async def _all(events: AsyncIterator[Any]) -> list[Any]:
    return [event async for event in events]


async def _cancel_after_prose(session: Session, command: str, deltas: int) -> list[Any]:
    events = []
    async for event in session.play(command):
        events.append(event)
        if event_names(events).count("prose_delta") == deltas and event.event == "prose_delta":
            session.cancel()
    return events


@pytest.mark.parametrize("wait", WAITS.values(), ids=WAITS.keys())
async def test_a_cancel_after_the_third_prose_delta_shows_exactly_three_chunks(pack, wait) -> None:
    narrator = CountingNarrator(wait)
    session = Session(pack, narrator)
    events = await asyncio.wait_for(_cancel_after_prose(session, "wait", 3), 5)
    assert events[-1].event == "turn_cancelled"
    assert prose_on_screen(events) == "One. Two. Three. "
    assert narrator.produced == 4  # the opening chunk and three sentences: nothing read ahead
    assert narrator.closed == 1
    assert session.history == () and session.pending is not None


@pytest.mark.parametrize("wait", WAITS.values(), ids=WAITS.keys())
async def test_a_turn_streams_every_chunk_and_commits_however_the_narrator_waits(pack, wait) -> None:
    narrator = CountingNarrator(wait)
    session = Session(pack, narrator)
    events = await _all(session.play("wait"))
    assert event_names(events).count("prose_delta") == len(SENTENCES)
    assert events[-1].event == "turn_committed"
    assert prose_on_screen(events) == "".join(SENTENCES)
    assert narrator.produced == len(CHUNKS) and narrator.closed == 1


async def test_a_key_pressed_mid_attempt_cancels_it_even_when_the_narrator_never_waits(pack) -> None:
    """The loop gets a turn while a stream that never waits is read (every `LOOP_TURN_SECONDS`), so a
    cancel from elsewhere (the player's key) lands mid-attempt, not only once the attempt is over."""
    pressed = asyncio.Event()
    chunks = ['{"narrative": "', "On and on. ", *([""] * 200_000), '", "state_patch": []}']
    narrator = CountingNarrator(_no_wait, chunks)
    session = Session(pack, narrator)

    async def player() -> None:
        await pressed.wait()
        session.cancel()

    key = asyncio.create_task(player())
    events = []
    async for event in session.play("wait"):
        events.append(event)
        if event.event == "prose_delta":
            pressed.set()
    await key
    assert events[-1].event == "turn_cancelled"
    assert narrator.produced < len(chunks) - 1 and narrator.closed == 1


async def test_a_narrator_still_writing_at_the_deadline_fails_the_turn_whether_or_not_it_waits(pack) -> None:
    class Endless(CountingNarrator):
        async def narrate(self, request: NarrationRequest) -> AsyncIterator[Any]:
            yield StructuredDelta('{"narrative": "')
            while True:
                self.produced += 1
                yield StructuredDelta("")  # adds nothing: the output limit never stops it

    session = Session(pack, Endless(_no_wait), attempt_timeout=0.05)
    events = await asyncio.wait_for(_all(session.play("wait")), 10)
    assert events[-1].event == "turn_failed"
    assert "still writing" in events[-1].issues[0].message


async def test_a_narrator_that_turns_the_cancel_into_its_own_error_still_ends_the_turn_cancelled(pack) -> None:
    """An HTTP client may answer a cancel with an error of its own (a connection closed): the turn is
    cancelled all the same, not retried as a transient fault."""

    class Protesting(CountingNarrator):
        async def narrate(self, request: NarrationRequest) -> AsyncIterator[Any]:
            yield StructuredDelta('{"narrative": "One. ')
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                raise TransientNarratorError("the connection was closed") from None
            yield Finish("end")

    session = Session(pack, Protesting(_no_wait))
    events = []
    async for event in session.play("wait"):
        events.append(event)
        if event.event == "prose_delta":
            asyncio.get_running_loop().call_soon(session.cancel)  # the key lands while the narrator waits
    assert event_names(events)[-1] == "turn_cancelled"
    assert "narrator_retrying" not in event_names(events)
    assert not asyncio.current_task().cancelling()
