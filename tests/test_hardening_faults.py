"""Narrator faults on the wire: a clear status, nothing committed, and a retry that works.

Both real narrators (the `anthropic` SDK and the `httpx` OpenAI-compatible client) play
against loopback servers that misbehave in every way we could think of: connection
resets, silence, garbage and malformed stream events, bytes that are not UTF-8, lone
surrogate escapes, 500s and 529s, and a stream that drips a byte at a time. Each
session is recorded in a real save, which must verify afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from storyloom.engine.events import NarratorRetrying, TurnCommitted, TurnFailed
from storyloom.engine.lifecycle import MAX_TRANSIENT_RETRIES, Session
from storyloom.engine.narrators._shared import Timeouts
from storyloom.engine.narrators.anthropic import AnthropicNarrator
from storyloom.engine.narrators.openai import OpenAINarrator
from storyloom.engine.state import initial_state
from storyloom.saves.format import SaveHeader
from storyloom.saves.reader import load_save
from storyloom.saves.verify import verify_save
from storyloom.saves.writer import Journal
from tests.conftest import turn_json
from tests.hardening.corpus import assert_inert
from tests.hardening.figures import tally
from tests.wire import anthropic_sse as asse
from tests.wire import openai_sse as osse
from tests.wire.server import Reset, Silent, Status, Stream, WireServer

GOOD = turn_json(
    "You lift the brass lamp from the rocks.", [{"op": "replace", "path": "/items/lamp", "value": "player"}]
)
KEY = "sk-test-hardening-0123456789abcdef"


def _o(*events: bytes) -> Stream:
    return Stream([osse.chunk({"role": "assistant", "content": None}), *events, *osse.tool_stream(GOOD)])


def _a(*events: bytes) -> Stream:
    return Stream([asse.message_start(), *events, *asse.turn_stream(GOOD)[1:]])


OPENAI_FAULTS: dict[str, object] = {
    "reset before answering": Reset(),
    "reset mid-stream": Stream(osse.tool_stream(GOOD)[:6], then="reset"),
    "500": Status(500, osse.error_body("boom", "server_error")),
    "503 with retry-after": Status(503, {"error": "loading model"}, {"retry-after": "0"}),
    "body that is not JSON": Status(502, b"<html>\x1b[31mbad gateway</html>"),
    "error body nested 10,000 deep": Status(500, b"[" * 10_000),
    "event that is not JSON": _o(b"data: {not json\n\n"),
    "event that is a list": _o(b"data: [1, 2]\n\n"),
    "event that is 1e400": _o(b"data: 1e400\n\n"),
    "event with 5,000-digit usage": _o(b'data: {"usage": {"prompt_tokens": ' + b"9" * 5000 + b"}}\n\n"),
    "event nested 10,000 deep": _o(b"data: " + b"[" * 10_000 + b"\n\n"),
    "tool_calls of the wrong type": _o(b'data: {"choices": [{"index": 0, "delta": {"tool_calls": 5}}]}\n\n'),
    "delta of the wrong type": _o(b'data: {"choices": [{"index": 0, "delta": "text"}]}\n\n'),
    "event nested 10,000 deep in an object": _o(b'data: {"choices": ' + b"[" * 10_000 + b"\n\n"),
    "NaN event": _o(b"data: NaN\n\n"),
    "error event in the stream": _o(b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'),
    "stream that ends early": Stream(osse.tool_stream(GOOD)[:5]),
}
"""Faults the OpenAI-compatible narrator must survive (each is answered until the retries run out)."""

IGNORED: dict[str, tuple[str, bytes]] = {
    "openai: choices of the wrong type": ("openai", b'data: {"choices": "x"}\n\n'),
    "openai: finish_reason that is an object": (
        "openai",
        b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": {"a": 1}}]}\n\n',
    ),
    "openai: usage of the wrong types": (
        "openai",
        b'data: {"choices": [], "usage": {"prompt_tokens": "many", '
        b'"completion_tokens": 1e400, "prompt_tokens_details": 7}}\n\n',
    ),
    "openai: bytes that are not UTF-8 in stray text": (
        "openai",
        b'data: {"choices": [{"index": 0, "delta": {"content": "x\xff\xfe\xc3y"}}]}\n\n',
    ),
    "anthropic: an event that is a list": ("anthropic", b"data: [1,2]\n\n"),
    "anthropic: an unknown event": ("anthropic", b'event: bogus\ndata: {"type": "bogus"}\n\n'),
    "anthropic: block start with a bad index": (
        "anthropic",
        b'event: content_block_start\ndata: {"type": '
        b'"content_block_start", "index": "x", '
        b'"content_block": {"type": "text"}}\n\n',
    ),
}
"""Odd events a narrator may skip: the turn must then commit exactly as if they were not there."""

ANTHROPIC_FAULTS: dict[str, object] = {
    "reset before answering": Reset(),
    "reset mid-stream": Stream(asse.turn_stream(GOOD)[:6], then="reset"),
    "500": Status(500, asse.error_body("api_error", "Internal server error")),
    "529 overloaded": Status(529, asse.error_body("overloaded_error", "Overloaded")),
    "body that is not JSON": Status(502, b"<html>\x1b]0;title\x07bad gateway</html>"),
    "error body nested 10,000 deep": Status(500, b"[" * 10_000),
    "message_start of the wrong shape": Stream(
        [b'event: message_start\ndata: {"type":"message_start","message":5}\n\n']
    ),
    "bytes that are not UTF-8": _a(b"event: ping\ndata: \xff\xfe\n\n"),
    "an event nested 10,000 deep": _a(b"event: content_block_delta\ndata: " + b"[" * 10_000 + b"\n\n"),
    "error event in the stream": _a(asse.error_event()),
    "stream that ends early": Stream(asse.turn_stream(GOOD)[:5]),
}


async def no_sleep(_: float) -> None:
    return None


def openai_for(server: WireServer) -> OpenAINarrator:
    return OpenAINarrator(base_url=f"{server.url}/v1", api_key=KEY, timeouts=Timeouts(read=0.5))


def anthropic_for(server: WireServer) -> AnthropicNarrator:
    return AnthropicNarrator(api_key=KEY, base_url=server.url, timeouts=Timeouts(read=0.5))


async def fail_then_retry(
    tmp_path: Path, pack, make: Callable[[WireServer], object], fault: object, good: Stream
) -> list:
    """Every attempt of the first try meets `fault`; the manual retry gets a good answer."""
    with WireServer() as server:
        server.script(*[fault] * (MAX_TRANSIENT_RETRIES + 1), good)
        narrator = make(server)
        session = Session(pack, narrator, sleep=no_sleep)
        journal = Journal.create(tmp_path / "save.jsonl", SaveHeader.for_session(pack, narrator))
        with journal:
            first = []
            async for event in session.play("take lamp"):
                journal.record(event)
                first.append(event)
            failed = first[-1]
            assert isinstance(failed, TurnFailed), [e.event for e in first]
            assert session.state == initial_state(pack) and session.history == ()
            assert not any(isinstance(e, TurnCommitted) for e in first)
            message = failed.issues[0].message
            assert message and "Traceback" not in message and KEY not in message and KEY[-12:] not in message
            assert_inert(message, "the failure message")
            retried = []
            async for event in session.retry():
                journal.record(event)
                retried.append(event)
        assert isinstance(retried[-1], TurnCommitted), [e.event for e in retried]
        assert session.state["items"]["lamp"] == "player"
    report = verify_save(tmp_path / "save.jsonl", pack)
    assert report.sound, report.lines
    assert KEY not in (tmp_path / "save.jsonl").read_text(encoding="utf-8")
    return first


@pytest.mark.parametrize("name", list(OPENAI_FAULTS))
async def test_openai_fault_fails_clearly_commits_nothing_and_retry_works(name, pack, tmp_path):
    events = await fail_then_retry(tmp_path, pack, openai_for, OPENAI_FAULTS[name], Stream(osse.tool_stream(GOOD)))
    statuses = [e for e in events if isinstance(e, NarratorRetrying)]
    assert len(statuses) == MAX_TRANSIENT_RETRIES and all(s.reason for s in statuses)
    tally("narrator faults: openai wire faults", MAX_TRANSIENT_RETRIES + 1)


@pytest.mark.parametrize("name", list(ANTHROPIC_FAULTS))
async def test_anthropic_fault_fails_clearly_commits_nothing_and_retry_works(name, pack, tmp_path):
    events = await fail_then_retry(
        tmp_path, pack, anthropic_for, ANTHROPIC_FAULTS[name], Stream(asse.turn_stream(GOOD))
    )
    statuses = [e for e in events if isinstance(e, NarratorRetrying)]
    assert len(statuses) == MAX_TRANSIENT_RETRIES and all(s.reason for s in statuses)
    tally("narrator faults: anthropic wire faults", MAX_TRANSIENT_RETRIES + 1)


@pytest.mark.parametrize("which", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", ["silent", "stall mid-stream"])
async def test_a_silent_or_stalled_server_is_retried_after_the_read_timeout(which, fault, pack):
    good = Stream(osse.tool_stream(GOOD) if which == "openai" else asse.turn_stream(GOOD))
    stalled = Silent() if fault == "silent" else Stream(good.events[:4], then="stall")
    with WireServer() as server:
        server.script(stalled, good)
        narrator = openai_for(server) if which == "openai" else anthropic_for(server)
        session = Session(pack, narrator, sleep=no_sleep)
        events = [e async for e in session.play("take lamp")]
    retry = next(e for e in events if isinstance(e, NarratorRetrying))
    assert "stopped sending" in retry.reason and "0.5 s" in retry.reason
    assert isinstance(events[-1], TurnCommitted)
    tally("narrator faults: silent/stalled servers")


@pytest.mark.parametrize("which", ["openai", "anthropic"])
async def test_a_server_that_drips_a_byte_at_a_time_is_stopped_at_the_deadline_and_retry_works(which, pack):
    stream = osse.tool_stream(GOOD) if which == "openai" else asse.turn_stream(GOOD)
    head = b"".join(stream[:3])
    drip = Stream([head[i : i + 1] for i in range(len(head))] * 50, delay=0.02)  # never silent long, never done
    with WireServer() as server:
        server.script(drip, Stream(stream))
        narrator = openai_for(server) if which == "openai" else anthropic_for(server)
        session = Session(pack, narrator, sleep=no_sleep, attempt_timeout=0.6)
        events = [e async for e in session.play("take lamp")]
        assert isinstance(events[-1], TurnFailed) and "still writing after 0.6 s" in events[-1].issues[0].message
        assert server.wait_closed() is not None  # the engine hung up on the drip
        assert session.state == initial_state(pack)
        assert isinstance([e async for e in session.retry()][-1], TurnCommitted)
    tally("narrator faults: byte-at-a-time drip (deadline)")


@pytest.mark.parametrize("which", ["openai", "anthropic"])
async def test_lone_surrogate_escapes_in_model_text_never_reach_the_save(which, pack, tmp_path):
    bad_text = "I think \ud800 about it"  # json.dumps writes the escape \\ud800
    if which == "openai":
        answer = Stream([*osse.content_stream(bad_text)[:-3], *osse.tool_stream(GOOD)])
    else:
        answer = Stream(
            [
                asse.message_start(),
                *asse.text_block(0, bad_text),
                *asse.tool_block(1, GOOD),
                *asse.message_end("tool_use"),
            ]
        )
    with WireServer() as server:
        server.script(answer)
        narrator = openai_for(server) if which == "openai" else anthropic_for(server)
        session = Session(pack, narrator, sleep=no_sleep)
        with Journal.create(tmp_path / "s.jsonl", SaveHeader.for_session(pack, narrator)) as journal:
            async for event in session.play("take lamp"):
                journal.record(event)
    assert isinstance(event, TurnCommitted)
    save = load_save(tmp_path / "s.jsonl")
    finished = [r.data for r in save.records if r.kind == "attempt_finished"]
    assert "\ufffd" in finished[0]["text"]
    assert verify_save(tmp_path / "s.jsonl", pack).sound
    tally("size and shape: lone surrogates from the wire")


@pytest.mark.parametrize("name", list(IGNORED))
async def test_an_odd_event_a_narrator_skips_changes_nothing(name, pack, tmp_path):
    which, event = IGNORED[name]
    answer = _o(event) if which == "openai" else _a(event)
    with WireServer() as server:
        server.script(answer, answer, answer)
        narrator = openai_for(server) if which == "openai" else anthropic_for(server)
        session = Session(pack, narrator, sleep=no_sleep)
        with Journal.create(tmp_path / "s.jsonl", SaveHeader.for_session(pack, narrator)) as journal:
            async for event in session.play("take lamp"):
                journal.record(event)
    assert isinstance(event, TurnCommitted) and session.state["items"]["lamp"] == "player"
    assert verify_save(tmp_path / "s.jsonl", pack).sound
    tally("narrator faults: odd events skipped")


@pytest.mark.parametrize("which", ["openai", "anthropic"])
async def test_a_server_streaming_without_end_is_cut_off_at_the_output_limit(which, pack):
    piece = "drip " * 30
    if which == "openai":
        head = [
            osse.chunk(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "report_turn", "arguments": ""},
                        }
                    ],
                }
            )
        ]
        body = [osse.chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})]
    else:
        head = [asse.message_start(), *asse.tool_block(0, '{"narrative": "')[:2]]
        body = [
            asse.event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                },
            )
        ]
    endless = Stream([*head, *body * 3000], then="stall")  # 450,000 characters, then nothing, never an end
    with WireServer() as server:
        server.script(endless, Stream(osse.tool_stream(GOOD) if which == "openai" else asse.turn_stream(GOOD)))
        narrator = openai_for(server) if which == "openai" else anthropic_for(server)
        session = Session(pack, narrator, sleep=no_sleep, budget=1)
        events = [e async for e in session.play("take lamp")]
        assert server.wait_closed() is not None  # the engine hung up on the endless stream
    finished = next(e for e in events if e.event == "attempt_finished")
    assert finished.stop_reason == "output_limit" and finished.issues[0].rule == "output.too_large"
    assert isinstance(events[-1], TurnCommitted)  # the correction wrote a proper turn
    tally("size and shape: a server streaming without end (cut at the output limit)")
