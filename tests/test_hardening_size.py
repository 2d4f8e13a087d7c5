"""Answers of absurd size and shape become an issue or a clear failure, in bounded time and memory.

Bounds (engine constants): the engine reads at most `OUTPUT_MAX_CHARS` (200,000) characters of an
answer, then stops reading (the stream is closed) and rejects it as `output.too_large`; partial JSON
is re-parsed for streaming prose only over the first `PROSE_STREAM_MAX_CHARS` (32,000); an attempt
still writing after `Session.attempt_timeout` (default `ATTEMPT_MAX_SECONDS`, 600 s) fails the turn
with a clear message. Nothing here may commit, crash, or reach the save as unwritable text.
"""

from __future__ import annotations

import asyncio
import json
import time
import tracemalloc
from collections.abc import AsyncIterator

import pytest

from storyloom.engine.events import TurnCommitted, TurnFailed
from storyloom.engine.lifecycle import PROSE_STREAM_MAX_CHARS, Session
from storyloom.engine.narration import Finish, NarrationRequest, StructuredDelta, TextDelta
from storyloom.engine.rules import OUTPUT_MAX_CHARS
from storyloom.engine.state import initial_state
from tests.conftest import Reply, ScriptedNarrator, turn_json
from tests.hardening.figures import tally
from tests.hardening.play import play_into_save

LOOK = "You look around the shore."
TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


SHAPES: dict[str, tuple[str, set[str]]] = {
    # name: (raw output, the rules that may reject it)
    "narrative over the limit (4,001 chars)": (turn_json("x" * 4001), {"turn.schema"}),
    "narrative of a million chars": (turn_json("word " * 200_000), {"output.too_large"}),
    "patch of 100,000 operations": (
        turn_json(LOOK, [{"op": "test", "path": "/location", "value": "shore"}] * 100_000),
        {"output.too_large"},
    ),
    "patch of 3,500 operations (under the size limit)": (
        turn_json(LOOK, [{"op": "test", "path": "/location", "value": "shore"}] * 3500),
        {"turn.schema"},
    ),
    "JSON nested 10,000 deep in a patch value": (
        '{"narrative": "You look.", "state_patch": [{"op": "test", "path": "/location", "value": '
        + _deep(10_000)
        + "}]}",
        {"output.json"},
    ),
    "JSON nested 10,000 deep as the whole answer": (_deep(10_000), {"output.json"}),
    "JSON nested 900 deep (parses) in a test op": (
        '{"narrative": "You look.", "state_patch": [{"op": "test", "path": "/location", "value": ' + _deep(900) + "}]}",
        {"patch.apply", "output.json"},
    ),
    "number 1e400 as a stat": (
        turn_json(LOOK, [{"op": "replace", "path": "/stats/health", "value": 1}]).replace(
            '"value": 1', '"value": 1e400'
        ),
        {"state.schema"},
    ),
    "number -1e400 in a test op": (
        turn_json(LOOK, [{"op": "test", "path": "/stats/health", "value": 1}]).replace('"value": 1', '"value": -1e400'),
        {"patch.apply"},
    ),
    "integer of 5,000 digits": (
        turn_json(LOOK, [{"op": "replace", "path": "/stats/health", "value": 1}]).replace(
            '"value": 1', '"value": ' + "9" * 5000
        ),
        {"output.json"},
    ),
    "integer of 4,000 digits": (
        turn_json(LOOK, [{"op": "replace", "path": "/stats/health", "value": 1}]).replace(
            '"value": 1', '"value": ' + "9" * 4000
        ),
        {"stat.bounds"},
    ),
    "NaN": (
        '{"narrative": "You look.", "state_patch": [{"op": "replace", "path": "/stats/health", "value": NaN}]}',
        {"output.json"},
    ),
    "Infinity": (
        '{"narrative": "You look.", "state_patch": [{"op": "test", "path": "/stats/health", "value": -Infinity}]}',
        {"output.json"},
    ),
    "lone surrogate escape in prose": ('{"narrative": "You look \\ud800 around.", "state_patch": []}', {"output.json"}),
    "lone surrogate escape in a test op": (
        '{"narrative": "You look.", "state_patch": [{"op": "test", "path": "/location", "value": "\\udfff"}]}',
        {"output.json"},
    ),
    "lone surrogate escape as a key": ('{"narrative": "You look.", "\\udc80": 1}', {"output.json"}),
    "a string of 150,000 chars in a patch value": (
        turn_json(LOOK, [{"op": "test", "path": "/location", "value": "y" * 150_000}]),
        {"patch.apply"},
    ),
    "a top-level array": ("[1, 2, 3]", {"output.json"}),
    "a bare huge float": ("1e400", {"output.json"}),
}


@pytest.mark.parametrize("name", list(SHAPES))
async def test_an_absurd_answer_is_rejected_with_an_issue_and_nothing_is_committed(name, tmp_path):
    raw, rules = SHAPES[name]
    narrator = ScriptedNarrator([Reply(structured=raw)], chunk=4096)
    save, out, err, code = await play_into_save(tmp_path, lambda pack: narrator, ["look"], budget=0)
    assert code == 3, err
    found = set(err.split("rejected (", 1)[1].split(")", 1)[0].split(", "))
    assert found <= rules and found, f"{name}: rejected for {found}, expected {rules}"
    assert "turn 1 failed" in err and "committed" not in out
    assert b"turn_committed" not in save.read_bytes()
    tally("size and shape: absurd answers (engine + save)")


async def test_every_absurd_answer_in_one_session_leaves_the_state_and_history_untouched(pack):
    replies = [Reply(structured=raw) for raw, _ in SHAPES.values()]
    session = Session(pack, ScriptedNarrator(replies, chunk=4096), budget=len(replies))
    events = [e async for e in session.play("look")]
    assert not any(isinstance(e, TurnCommitted) for e in events)
    assert isinstance(events[-1], TurnFailed)
    assert session.state == initial_state(pack) and session.history == ()


class Endless:
    """A narrator that never stops writing (a model stuck in a loop, or a server that drips forever)."""

    name, model = "endless", "loop-1"

    def __init__(self, kind: str = "s", chunk: str = "drip ", pause: float = 0.0):
        self.kind, self.chunk, self.pause = kind, chunk, pause
        self.closed = 0
        self.sent = 0

    async def narrate(self, request: NarrationRequest) -> AsyncIterator[object]:
        make = StructuredDelta if self.kind == "s" else TextDelta
        try:
            if self.kind == "s":
                yield StructuredDelta('{"narrative": "')
            while True:
                self.sent += len(self.chunk)
                yield make(self.chunk)
                await asyncio.sleep(self.pause)
        finally:
            self.closed += 1


@pytest.mark.parametrize("kind", ["s", "t"])
async def test_an_answer_that_never_ends_is_cut_off_at_the_output_limit(pack, kind):
    narrator = Endless(kind, chunk="drip " * 20)
    session = Session(pack, narrator, budget=0)
    tracemalloc.start()
    started = time.monotonic()
    events = [e async for e in session.play("look")]
    elapsed = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert isinstance(events[-1], TurnFailed) and events[-1].issues[0].rule == "output.too_large"
    assert narrator.closed == 1 and narrator.sent <= OUTPUT_MAX_CHARS + 200
    assert elapsed < 30 and peak < 40 * OUTPUT_MAX_CHARS  # a few copies of the text, never more
    finished = next(e for e in events if e.event == "attempt_finished")
    assert finished.stop_reason == "output_limit"
    tally("size and shape: never-ending answer (cut at the output limit)")


async def test_a_stream_that_drips_forever_fails_the_turn_at_the_attempt_deadline(pack):
    narrator = Endless("s", chunk="d", pause=0.01)  # one character every 10 ms: never silent, never done
    session = Session(pack, narrator, budget=2, attempt_timeout=0.3)
    events = [e async for e in session.play("look")]
    failed = events[-1]
    assert isinstance(failed, TurnFailed)
    assert "still writing after 0.3 s" in failed.issues[0].message
    assert narrator.closed == 1 and session.pending is not None and session.state == initial_state(pack)
    tally("size and shape: stream that drips forever (deadline)")


async def test_a_turn_stopped_at_its_deadline_can_be_retried(pack):
    class DripThenGood(Endless):
        dripping = True
        """Until the test says otherwise (not `closed`: the inner stream is closed when the collector
        finalizes it, which may come after the retry has started)."""

        async def narrate(self, request):
            if self.dripping:
                async for chunk in super().narrate(request):
                    yield chunk
            else:
                yield StructuredDelta(turn_json("You lift the brass lamp.", TAKE_LAMP))
                yield Finish("end")

    narrator = DripThenGood("s", chunk="d", pause=0.01)
    session = Session(pack, narrator, attempt_timeout=0.2)
    assert isinstance([e async for e in session.play("take lamp")][-1], TurnFailed)
    narrator.dripping = False
    assert isinstance([e async for e in session.retry()][-1], TurnCommitted)
    assert session.state["items"]["lamp"] == "player"


async def test_streaming_prose_stops_being_parsed_past_its_bound_but_shows_when_judged(pack):
    ops = ", ".join([json.dumps({"op": "test", "path": "/location", "value": "shore"})] * 100)
    raw = '{"state_patch": [' + ops + " " * PROSE_STREAM_MAX_CHARS + '], "narrative": "You look around."}'
    assert len(raw) > PROSE_STREAM_MAX_CHARS
    narrator = ScriptedNarrator([Reply(structured=raw)], chunk=64)
    session = Session(pack, narrator)
    events = [e async for e in session.play("look")]
    assert isinstance(events[-1], TurnCommitted)
    prose = "".join(e.text for e in events if e.event == "prose_delta")
    assert prose == "You look around."


@pytest.mark.parametrize("size", [OUTPUT_MAX_CHARS - 10_000, OUTPUT_MAX_CHARS + 1])
async def test_one_huge_chunk_is_judged_without_streaming_it_twice(pack, size):
    raw = turn_json("You look.", [{"op": "test", "path": "/location", "value": "z" * size}])
    session = Session(pack, ScriptedNarrator([Reply(structured=raw)], chunk=len(raw)), budget=0)
    events = [e async for e in session.play("look")]
    rule = events[-1].issues[0].rule
    assert rule == ("patch.apply" if size < OUTPUT_MAX_CHARS else "output.too_large")
    tally("size and shape: one chunk at and over the limit")


async def test_a_correction_shows_the_model_only_the_head_of_an_answer_cut_off_at_the_limit(pack):
    class EndlessThenGood(Endless):
        requests: list[NarrationRequest] = []

        async def narrate(self, request):
            self.requests.append(request)
            if len(self.requests) == 1:
                async for chunk in super().narrate(request):
                    yield chunk
            else:
                yield StructuredDelta(turn_json("You lift the brass lamp.", TAKE_LAMP))
                yield Finish("end")

    narrator = EndlessThenGood("s", chunk="loop " * 20)
    session = Session(pack, narrator)
    events = [e async for e in session.play("take lamp")]
    assert isinstance(events[-1], TurnCommitted)
    rejected = narrator.requests[1].correction
    assert rejected is not None and rejected.issues[0].rule == "output.too_large"
    assert len(rejected.raw) < 4100 and rejected.raw.startswith('{"narrative": "loop loop')
    finished = [e for e in events if e.event == "attempt_finished"]
    assert len(finished[0].raw) > OUTPUT_MAX_CHARS - 200  # the save keeps what was read, whole
