"""The OpenAI-compatible narrator against a loopback server speaking the chat completions chunk format.

The same server stands in for Ollama, llama.cpp's server, vLLM or OpenAI: a real
`Session` plays through real `httpx` streaming, and the request bodies are checked.
Faults of the wire itself (resets, stalls, silence, cancels, cut-off streams) are tested for
both narrators at once in `test_narrator_wire_faults.py`.
"""

from __future__ import annotations

import json

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.narration import NarratorError
from storyloom.engine.narrators._shared import Timeouts
from storyloom.engine.narrators.openai import OpenAINarrator
from tests.conftest import event_names, prose_on_screen, turn_json
from tests.wire import openai_sse as sse
from tests.wire.server import Status, Stream, WireServer

TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
LAMP_PROSE = "You crouch on the wet rocks and lift the brass lamp. Its glass is cracked but the wick is dry."
GOOD = turn_json(LAMP_PROSE, TAKE_LAMP)
MISSING_WORDS = (
    "Report your final answer through the structured output (the tool) now. "
    "Do not redo any work and do not add explanations."
)


@pytest.fixture
def server():
    with WireServer() as wire:
        yield wire


def session_for(pack, server, *, sleeps=None, budget=2, **options):
    narrator = OpenAINarrator(
        base_url=f"{server.url}/v1", timeouts=options.pop("timeouts", Timeouts(read=2.0)), **options
    )

    async def record_sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)

    return Session(pack, narrator, budget=budget, sleep=record_sleep)


async def play(session, command="take lamp"):
    return [event async for event in session.play(command)]


async def test_tools_mode_streams_the_narrative_from_the_function_arguments(pack, server):
    server.script(Stream(sse.tool_stream(GOOD, cached=1200)))
    session = session_for(pack, server, model="qwen2.5:7b")
    events = await play(session)
    assert event_names(events).count("prose_delta") >= 10
    assert event_names(events).index("prose_delta") < event_names(events).index("attempt_finished")
    assert prose_on_screen(events) == LAMP_PROSE
    assert event_names(events)[-1] == "turn_committed"
    assert session.state["items"]["lamp"] == "player"
    usage = next(e for e in events if e.event == "attempt_finished").usage
    assert usage == {"input_tokens": 1500, "output_tokens": 160, "cached_tokens": 1200}
    request = server.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    body = request.body
    assert body["model"] == "qwen2.5:7b" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tool_choice"] == "required"
    assert body["tools"][0]["function"]["name"] == "report_turn"
    assert "response_format" not in body
    assert body["messages"][0]["role"] == "system" and "Rocky Shore" in body["messages"][0]["content"]
    assert "authorization" not in request.headers  # no key: a local server needs none


async def test_json_mode_streams_the_narrative_from_the_content(pack, server):
    server.script(Stream(sse.content_stream(GOOD)))
    session = session_for(pack, server, output="json")
    events = await play(session)
    assert event_names(events).count("prose_delta") >= 10
    assert event_names(events)[-1] == "turn_committed"
    body = server.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "turn"
    # the patch always; the narrative too in every turn, but a correction may leave it out to keep the prose
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["state_patch"]
    assert "tools" not in body


async def test_a_server_that_ignores_the_json_schema_gets_told_so(pack, server):
    server.script(
        Stream(sse.content_stream("You pick up the lamp and feel its weight.")), Stream(sse.content_stream(GOOD))
    )
    session = session_for(pack, server, output="json")
    events = await play(session)
    assert [e.issues[0].rule for e in events if e.event == "validation_failed"] == ["output.json"]
    assert event_names(events)[-1] == "turn_committed"
    messages = server.requests[1].body["messages"]
    assert messages[-2] == {"role": "assistant", "content": "You pick up the lamp and feel its weight."}
    assert messages[-1]["role"] == "user"
    assert "probably ignored the JSON schema" in messages[-1]["content"]
    assert '"rule": "output.json"' in messages[-1]["content"]


async def test_a_cut_off_json_answer_is_not_blamed_on_the_schema(pack, server):
    server.script(Stream(sse.content_stream(GOOD[:50], finish_reason="length")), Stream(sse.content_stream(GOOD)))
    events = await play(session_for(pack, server, output="json"))
    assert [e.issues[0].rule for e in events if e.event == "validation_failed"] == ["output.truncated"]
    assert "ignored the JSON schema" not in json.dumps(server.requests[1].body)
    assert event_names(events)[-1] == "turn_committed"


async def test_text_instead_of_a_tool_call_gets_the_corrective_request(pack, server):
    server.script(Stream(sse.content_stream("You take the lamp.")), Stream(sse.tool_stream(GOOD)))
    session = session_for(pack, server)
    events = await play(session)
    assert [e.issues[0].rule for e in events if e.event == "validation_failed"] == ["output.missing"]
    assert event_names(events)[-1] == "turn_committed"
    messages = server.requests[1].body["messages"]
    assert messages[-2:] == [
        {"role": "assistant", "content": "You take the lamp."},
        {"role": "user", "content": MISSING_WORDS},
    ]


async def test_a_correction_carries_only_the_last_rejected_call(pack, server):
    wrong_room = turn_json(
        "You hurl the brass lamp far out to sea.", [{"op": "replace", "path": "/items/lamp", "value": "sea"}]
    )
    wrong_item = turn_json(
        "You grab the brass sword from the rock.", [{"op": "replace", "path": "/items/sword", "value": "player"}]
    )
    server.script(
        Stream(sse.tool_stream(wrong_room)), Stream(sse.tool_stream(wrong_item)), Stream(sse.tool_stream(GOOD))
    )
    session = session_for(pack, server)
    events = await play(session)
    assert event_names(events)[-1] == "turn_committed"
    second, third = server.requests[1], server.requests[2]
    assert "sea" in second.body["messages"][-2]["tool_calls"][0]["function"]["arguments"]
    assert "/items/sword" not in json.dumps(second.body) and '\\"value\\": \\"sea\\"' not in json.dumps(third.body)
    # the prose the player has read is referenced by the correction, not repeated
    assert "far out to sea" not in json.dumps(second.body) and "brass sword" not in json.dumps(third.body)
    assert len(second.body["messages"]) == len(third.body["messages"])
    assert abs(len(third.raw_body) - len(second.raw_body)) < 200
    call, result = third.body["messages"][-2:]
    assert json.loads(call["tool_calls"][0]["function"]["arguments"]) == {
        key: value for key, value in json.loads(wrong_item).items() if key != "narrative"
    }
    assert result["role"] == "tool" and result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert "patch.path" in result["content"] and "leave `narrative` out" in result["content"]


async def test_a_correction_keeps_the_prose_on_screen_when_it_sends_only_the_patch(pack, server):
    wrong_room = turn_json(LAMP_PROSE, [{"op": "replace", "path": "/items/lamp", "value": "sea"}])
    server.script(Stream(sse.tool_stream(wrong_room)), Stream(sse.tool_stream(json.dumps({"state_patch": TAKE_LAMP}))))
    session = session_for(pack, server)
    events = await play(session)
    assert event_names(events)[-1] == "turn_committed" and events[-1].narrative == LAMP_PROSE
    assert [e.changed for e in events if e.event == "prose_replaced"] == [False]
    assert prose_on_screen(events) == LAMP_PROSE
    assert LAMP_PROSE not in json.dumps(server.requests[1].body), "the correction references the prose, not repeats it"


async def test_a_correction_asks_for_the_whole_turn_when_no_prose_can_be_kept(pack, server):
    listed = json.dumps({"narrative": ["You lift", "the lamp."], "state_patch": TAKE_LAMP})
    server.script(Stream(sse.tool_stream(listed)), Stream(sse.tool_stream(GOOD)))
    session = session_for(pack, server)
    events = await play(session)
    assert event_names(events)[-1] == "turn_committed"
    call, result = server.requests[1].body["messages"][-2:]
    assert call["tool_calls"][0]["function"]["arguments"] == listed, "nothing to keep: the rejected call as written"
    assert "`narrative` too" in result["content"] and "leave `narrative` out" not in result["content"]


async def test_committed_turns_are_replayed_as_function_calls(pack, server):
    server.script(Stream(sse.tool_stream(GOOD)), Stream(sse.tool_stream(turn_json("You look at the sea."))))
    session = session_for(pack, server)
    await play(session)
    await play(session, "look")
    messages = server.requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert json.loads(messages[2]["tool_calls"][0]["function"]["arguments"])["narrative"] == LAMP_PROSE
    assert messages[3]["tool_call_id"] == messages[2]["tool_calls"][0]["id"]


async def test_a_refusal_fails_the_turn_at_once(pack, server):
    server.script(Stream(sse.refusal_stream("I can't help with that.")))
    session = session_for(pack, server, output="json")
    events = await play(session)
    assert event_names(events)[-1] == "turn_failed"
    assert events[-1].issues[0].rule == "narrator.refusal"
    assert "I can't help with that." in events[-1].issues[0].message
    assert len(server.requests) == 1 and session.history == ()


async def test_a_429_waits_as_long_as_retry_after_says(pack, server):
    server.script(
        Status(
            429,
            sse.error_body("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
            {"retry-after": "5"},
        ),
        Stream(sse.tool_stream(GOOD)),
    )
    sleeps: list[float] = []
    events = await play(session_for(pack, server, sleeps=sleeps))
    assert sleeps == [5.0]
    assert next(e for e in events if e.event == "narrator_retrying").delay == 5.0
    assert event_names(events)[-1] == "turn_committed"


async def test_an_exhausted_quota_is_not_retried(pack, server):
    server.script(
        Status(429, sse.error_body("You exceeded your current quota", "insufficient_quota", "insufficient_quota"))
    )
    events = await play(session_for(pack, server, sleeps=[]))
    assert event_names(events)[-1] == "turn_failed" and "out of credit" in events[-1].issues[0].message
    assert len(server.requests) == 1


async def test_an_error_chunk_mid_stream_is_retried(pack, server):
    broken = [
        *sse.tool_stream(GOOD)[:6],
        sse.data(
            {"error": {"message": "The server is overloaded", "type": "server_error", "param": None, "code": None}}
        ),
    ]
    server.script(Stream(broken), Stream(sse.tool_stream(GOOD)))
    events = await play(session_for(pack, server, sleeps=[]))
    assert "overloaded" in next(e for e in events if e.event == "narrator_retrying").reason
    assert event_names(events)[-1] == "turn_committed" and prose_on_screen(events) == LAMP_PROSE


async def test_a_503_while_the_model_loads_is_retried_and_nothing_broken_is_committed(pack, server):
    # Resets, stalls, silence and cut-off streams are tested for both narrators in test_narrator_wire_faults.py.
    server.script(Status(503, {"error": "model is loading"}), Stream(sse.tool_stream(GOOD)))
    session = session_for(pack, server, sleeps=[])
    events = await play(session)
    assert event_names(events).count("narrator_retrying") == 1
    assert event_names(events).count("attempt_finished") == 1
    assert event_names(events)[-1] == "turn_committed"


async def test_a_key_is_sent_as_a_bearer_token_and_a_refused_one_names_the_variable(pack, server):
    key = "sk-proj-PLANTEDkey0123456789abcdef"
    server.script(
        Status(
            401,
            sse.error_body(
                f"Incorrect API key provided: {key[:12]}...{key[-6:]} or {key}",
                "invalid_request_error",
                "invalid_api_key",
            ),
        )
    )
    events = await play(session_for(pack, server, api_key=key))
    assert server.requests[0].headers["authorization"] == f"Bearer {key}"
    message = events[-1].issues[0].message
    assert "OPENAI_API_KEY" in message and "Incorrect API key provided" in message
    assert key not in message and key[:12] not in message


async def test_an_unknown_model_says_to_choose_another(pack, server):
    server.script(
        Status(404, {"error": {"message": 'model "llama9" not found, try pulling it first', "type": "api_error"}})
    )
    events = await play(session_for(pack, server, model="llama9"))
    assert "--model" in events[-1].issues[0].message and "llama9" in events[-1].issues[0].message


async def test_a_context_length_error_suggests_summarising_or_a_larger_model(pack, server):
    server.script(
        Status(
            400,
            sse.error_body(
                "This model's maximum context length is 8192 tokens", "invalid_request_error", "context_length_exceeded"
            ),
        )
    )
    events = await play(session_for(pack, server))
    assert "context window" in events[-1].issues[0].message and "Summarise" in events[-1].issues[0].message


def test_an_unknown_output_mode_is_refused():
    with pytest.raises(NarratorError, match="tools, json"):
        OpenAINarrator(output="xml")


def test_headless_play_with_an_openai_compatible_server_end_to_end(server, tmp_path, monkeypatch, capsys):
    from storyloom.tui.cli import main
    from tests.conftest import SHORE_PACK

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for var in ("STORYLOOM_NARRATOR", "STORYLOOM_MODEL", "STORYLOOM_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    story = tmp_path / "shore.toml"
    story.write_text(SHORE_PACK, encoding="utf-8")
    commands = tmp_path / "commands.txt"
    commands.write_text("take lamp\ngo north\n", encoding="utf-8")
    north = turn_json("You climb north onto the Cliff Path.", [{"op": "replace", "path": "/location", "value": "path"}])
    server.script(
        Stream(sse.content_stream(GOOD)),
        Stream(sse.content_stream("Sure! You go north.")),
        Stream(sse.content_stream(north)),
    )
    code = main(
        [
            "play",
            "--headless",
            "--narrator",
            "openai",
            "--base-url",
            f"{server.url}/v1",
            "--model",
            "llama3.1",
            "--output",
            "json",
            "--story",
            str(story),
            "--commands",
            str(commands),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert LAMP_PROSE in out and "Cliff Path" in out
    assert "rejected (output.json)" in err
    assert "probably ignored the JSON schema" in server.requests[2].body["messages"][-1]["content"]
    assert {r.body["model"] for r in server.requests} == {"llama3.1"}


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after": "12"}, 12.0),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "Thu, 01 Jan 2026 00:00:05 GMT"}, 5.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "86400"}, None),  # a day: not worth waiting for; the engine backs off and then fails
        ({}, None),
    ],
)
def test_the_wait_a_server_asks_for_is_read_from_its_headers(headers, wait):
    from storyloom.engine.narrators._shared import retry_after

    assert retry_after(headers, now=1767225600.0) == wait


async def test_old_llama_cpp_error_field_before_done_is_retried_then_named(pack, server):
    # llama.cpp builds of 2025 reported a mid-stream failure as a non-standard `error:` field
    # and then sent `data: [DONE]`; the half-written turn must not be judged.
    failing = [
        *sse.tool_stream(GOOD)[:6],
        b'error: {"code":500,"message":"context shift is disabled","type":"server_error"}\n\n',
        sse.DONE,
    ]
    server.script(*[Stream(failing)] * 5)
    sleeps: list[float] = []
    events = await play(session_for(pack, server, sleeps=sleeps))
    assert "validation_failed" not in event_names(events)
    assert event_names(events).count("narrator_retrying") == 4 and sleeps == [1.0, 2.0, 4.0, 8.0]
    assert all("context shift is disabled" in e.reason for e in events if e.event == "narrator_retrying")
    failed = events[-1]
    assert failed.event == "turn_failed" and failed.issues[0].rule == "narrator.unavailable"
    assert "context shift is disabled" in failed.issues[0].message
    assert len(server.requests) == 5


async def test_half_a_turn_then_done_is_a_broken_stream_not_a_turn(pack, server):
    # A gateway that closes the stream with `[DONE]` after an upstream error: the call's JSON is
    # not complete, so nothing is judged (a whole call then `[DONE]` is: see the vLLM recording).
    cut = [*sse.tool_stream(GOOD)[:6], sse.DONE]
    server.script(Stream(cut), Stream(sse.tool_stream(GOOD)))
    events = await play(session_for(pack, server, sleeps=[], budget=0))
    assert "before it was complete" in next(e for e in events if e.event == "narrator_retrying").reason
    assert "validation_failed" not in event_names(events)
    assert event_names(events)[-1] == "turn_committed" and prose_on_screen(events) == LAMP_PROSE


NESTED = '{"narrative": "You look.", "state_patch": ' + "[" * 3000 + "]" * 3000 + "}"
"""A turn nested deeper than Python's JSON parser goes: it raises RecursionError, not ValueError."""


async def test_a_turn_nested_too_deep_then_done_is_retried_not_a_crash(pack, server):
    # `[DONE]` without a finish reason asks whether the turn's JSON is whole; JSON too deep to
    # read is not known to be whole: a broken stream, retried (it crashed the session).
    deep = [sse.chunk({"role": "assistant", "content": NESTED[:-3001]}), sse.DONE]
    server.script(Stream(deep), Stream(sse.content_stream(GOOD)))
    events = await play(session_for(pack, server, sleeps=[], budget=0, output="json"))
    assert "before it was complete" in next(e for e in events if e.event == "narrator_retrying").reason
    assert event_names(events)[-1] == "turn_committed" and prose_on_screen(events) == LAMP_PROSE


async def test_a_call_nested_too_deep_is_corrected_not_a_crash(pack, server):
    # The rejected arguments go back in the correction request: as text, since they cannot be read
    # as an object (building that request crashed the session).
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "report_turn", "arguments": NESTED}}
    deep = [sse.chunk({"role": "assistant", "tool_calls": [call]}), sse.chunk({}, "tool_calls"), sse.DONE]
    server.script(Stream(deep), Stream(sse.tool_stream(GOOD)))
    events = await play(session_for(pack, server, sleeps=[]))
    assert [e.issues[0].rule for e in events if e.event == "validation_failed"] == ["output.json"]
    assert event_names(events)[-1] == "turn_committed" and len(server.requests) == 2
    assert server.requests[1].body["messages"][-2] == {"role": "assistant", "content": NESTED}


async def test_calls_without_an_index_are_told_apart_by_their_ids(pack, server):
    # Gemini's OpenAI-compatible endpoint: no `index`, each call whole and with its own `id`.
    second = turn_json("You leave the lamp where it is.")

    def call(call_id: str, arguments: str) -> bytes:
        return sse.chunk(
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "report_turn", "arguments": arguments}}
                ],
            }
        )

    server.script(
        Stream(
            [
                call("function-call-1", GOOD),
                call("function-call-2", second),
                sse.chunk({}, "stop"),
                sse.usage_chunk(),
                sse.DONE,
            ]
        )
    )
    session = session_for(pack, server, budget=0)
    events = await play(session)
    assert event_names(events)[-1] == "turn_committed"
    assert prose_on_screen(events) == LAMP_PROSE and session.state["items"]["lamp"] == "player"


async def test_whole_calls_all_at_index_0_are_told_apart_by_their_ids(pack, server):
    # Ollama 0.20 (ollama#15457): every call at `index` 0, each whole with its own `id`; here another
    # tool's call comes first, so the turn is the second (the recording has the turn first).
    def call(call_id: str, name: str, arguments: str) -> bytes:
        tool = {"id": call_id, "index": 0, "type": "function", "function": {"name": name, "arguments": arguments}}
        return sse.chunk({"role": "assistant", "content": "", "tool_calls": [tool]})

    server.script(
        Stream(
            [
                call("call_a", "run_command", '{"command": "ls -l"}'),
                call("call_b", "report_turn", GOOD),
                sse.chunk({}, "tool_calls"),
            ]
        )
    )
    session = session_for(pack, server, budget=0)
    events = await play(session)
    assert event_names(events)[-1] == "turn_committed"
    assert prose_on_screen(events) == LAMP_PROSE and session.state["items"]["lamp"] == "player"


async def test_finish_reason_error_with_the_choices_own_error_is_retried_in_its_words(pack, server):
    failing = [
        sse.chunk({"role": "assistant", "content": ""}),
        sse.data(
            {
                "id": "gen-1",
                "object": "chat.completion.chunk",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": ""},
                        "finish_reason": "error",
                        "native_finish_reason": "MALFORMED_FUNCTION_CALL",
                        "error": {"code": 502, "message": "upstream produced an unparseable function call"},
                    }
                ],
            }
        ),
        sse.DONE,
    ]
    server.script(Stream(failing), Stream(sse.tool_stream(GOOD)))
    events = await play(session_for(pack, server, sleeps=[], budget=0))
    retry = next(e for e in events if e.event == "narrator_retrying")
    assert "upstream produced an unparseable function call" in retry.reason
    assert "validation_failed" not in event_names(events)
    assert event_names(events)[-1] == "turn_committed"


@pytest.mark.parametrize("seed", [3, 4])
async def test_lines_ending_in_a_lone_cr_after_a_byte_order_mark_are_lines(pack, seed):
    # The SSE standard's third line end (CR alone) and its optional BOM, with the bytes re-chunked
    # so that some CRs end a read: each must still end its line, and none may join two lines.
    events = [event.replace(b"\n", b"\r") for event in sse.tool_stream(GOOD)]
    events[0] = b"\xef\xbb\xbf" + events[0]
    with WireServer(rechunk=seed) as wire:
        wire.script(Stream(events))
        events_seen = await play(session_for(pack, wire, budget=0))
    assert event_names(events_seen)[-1] == "turn_committed"
    assert prose_on_screen(events_seen) == LAMP_PROSE
