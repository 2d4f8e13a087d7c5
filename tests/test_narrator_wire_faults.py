"""Both real narrators against the same broken wires: stalls, resets, silence, cancels, cut-off streams.

What the player sees when the connection misbehaves must not depend on which model
plays, so each test here runs once per narrator: the real `anthropic` SDK and the
httpx OpenAI-compatible client, each against a loopback server speaking its format.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators._shared import Timeouts
from storyloom.engine.narrators.anthropic import AnthropicNarrator
from storyloom.engine.narrators.openai import OpenAINarrator
from tests.conftest import event_names, turn_json
from tests.wire import anthropic_sse, openai_sse
from tests.wire.server import Reset, Silent, Stream, WireServer

GOOD = turn_json(
    "You crouch on the wet rocks and lift the brass lamp. Its glass is cracked but the wick is dry.",
    [{"op": "replace", "path": "/items/lamp", "value": "player"}],
)


@dataclass(frozen=True)
class Wire:
    """One narrator and the streams its server sends."""

    name: str
    narrator: Callable[[str, Timeouts], object]
    """Make the narrator for a server's base address."""
    turn: list[bytes]
    """A whole, well-formed answer reporting GOOD."""
    opening: list[bytes]
    """The first events of that answer: a stream broken off mid-turn."""
    unfinished: list[bytes]
    """The whole turn written, but the stream ends before the finish reason."""
    cut_off: str
    """Words the retry notice uses for a stream that ended before its finish."""
    unreachable: Callable[[str], str]
    """Words the failure uses when nothing listens at the address."""


WIRES = [
    Wire(
        "openai",
        lambda url, timeouts: OpenAINarrator(base_url=f"{url}/v1", timeouts=timeouts),
        turn=openai_sse.tool_stream(GOOD),
        opening=openai_sse.tool_stream(GOOD)[:6],
        unfinished=openai_sse.tool_stream(GOOD)[:-3],
        cut_off="before it was complete",
        unreachable=lambda url: "is the model server running?",
    ),
    Wire(
        "anthropic",
        lambda url, timeouts: AnthropicNarrator(api_key="sk-ant-test-key", base_url=url, timeouts=timeouts),
        turn=anthropic_sse.turn_stream(GOOD),
        opening=[anthropic_sse.message_start(), *anthropic_sse.tool_block(0, GOOD)[:6]],
        unfinished=[anthropic_sse.message_start(), *anthropic_sse.tool_block(0, GOOD)],
        cut_off="stopped before it was complete",
        unreachable=lambda url: f"cannot connect to Anthropic at {url}",
    ),
]


@pytest.fixture(params=WIRES, ids=lambda wire: wire.name)
def wire(request) -> Wire:
    return request.param


@pytest.fixture
def server():
    with WireServer() as loopback:
        yield loopback


def session_for(pack, wire: Wire, url: str, *, sleeps=None, budget=2, timeouts=Timeouts(read=2.0)) -> Session:
    async def record_sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)

    return Session(pack, wire.narrator(url, timeouts), budget=budget, sleep=record_sleep)


async def play(session, command="take lamp"):
    return [event async for event in session.play(command)]


@pytest.mark.parametrize("broken", ["before-answer", "mid-stream"])
async def test_a_reset_connection_is_retried_and_nothing_broken_is_committed(pack, server, wire, broken):
    server.script(Reset() if broken == "before-answer" else Stream(wire.opening, then="reset"), Stream(wire.turn))
    session = session_for(pack, wire, server.url, sleeps=[])
    events = await play(session)
    assert event_names(events).count("narrator_retrying") == 1
    assert "lost the connection" in next(e for e in events if e.event == "narrator_retrying").reason
    assert [e.event for e in events if e.event in ("attempt_finished", "turn_committed")] == [
        "attempt_finished",
        "turn_committed",
    ]
    assert session.state["items"]["lamp"] == "player"


async def test_a_stalled_stream_is_retried_after_the_read_timeout(pack, server, wire):
    server.script(Stream(wire.opening, then="stall"), Stream(wire.turn))
    events = await play(session_for(pack, wire, server.url, sleeps=[], timeouts=Timeouts(read=0.3)))
    assert "stopped sending" in next(e for e in events if e.event == "narrator_retrying").reason
    assert event_names(events)[-1] == "turn_committed"


async def test_a_server_that_never_answers_is_retried_after_the_read_timeout(pack, server, wire):
    server.script(Silent(), Stream(wire.turn))
    events = await play(session_for(pack, wire, server.url, sleeps=[], timeouts=Timeouts(read=0.3)))
    assert "stopped sending" in next(e for e in events if e.event == "narrator_retrying").reason
    assert event_names(events)[-1] == "turn_committed"


async def test_a_stream_that_ends_before_its_finish_is_retried_not_judged(pack, server, wire):
    server.script(Stream(wire.unfinished), Stream(wire.turn))
    events = await play(session_for(pack, wire, server.url, sleeps=[], budget=0))
    assert wire.cut_off in next(e for e in events if e.event == "narrator_retrying").reason
    assert event_names(events).count("attempt_finished") == 1
    assert event_names(events)[-1] == "turn_committed"


async def test_a_server_that_is_not_running_is_retried_with_backoff_then_fails_saying_where(pack, wire):
    with WireServer() as stopped:
        url = stopped.url
    sleeps: list[float] = []
    events = await play(session_for(pack, wire, url, sleeps=sleeps, timeouts=Timeouts(connect=0.5)))
    assert event_names(events)[-1] == "turn_failed"
    assert wire.unreachable(url) in events[-1].issues[0].message
    assert sleeps == [1.0, 2.0, 4.0, 8.0]  # the engine's visible backoff; no hidden retries


async def test_cancel_closes_the_http_stream_within_200_ms(pack, server, wire):
    server.script(Stream(wire.turn[:12], delay=0.01, then="stall"))
    session = session_for(pack, wire, server.url)
    events, cancelled_at = [], None
    async for event in session.play("take lamp"):
        events.append(event)
        if event.event == "prose_delta" and cancelled_at is None and event_names(events).count("prose_delta") == 2:
            cancelled_at = time.monotonic()
            session.cancel()
    closed_at = server.wait_closed()
    assert event_names(events)[-1] == "turn_cancelled"
    assert cancelled_at is not None and closed_at is not None
    assert closed_at - cancelled_at < 0.2
    assert session.state["items"]["lamp"] == "shore" and session.history == ()


async def test_cancel_while_waiting_for_the_first_byte_closes_the_connection_within_200_ms(pack, server, wire):
    server.script(Silent())
    session = session_for(pack, wire, server.url)
    playing = asyncio.ensure_future(play(session))
    while not server.requests:
        await asyncio.sleep(0.005)
    cancelled_at = time.monotonic()
    session.cancel()
    events = await playing
    closed_at = server.wait_closed()
    assert event_names(events)[-1] == "turn_cancelled"
    assert closed_at is not None and closed_at - cancelled_at < 0.2
