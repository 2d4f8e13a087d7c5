"""The Anthropic narrator against a loopback server speaking the Messages streaming format byte for byte.

Every test drives a real `Session` with the real SDK client; the server records the
request bodies, so each test checks both what the player sees and what went on the wire.
Faults of the wire itself (resets, stalls, silence, cancels, cut-off streams) are tested for
both narrators at once in `test_narrator_wire_faults.py`.
"""

from __future__ import annotations

import json

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.narration import NarratorError
from storyloom.engine.narrators._shared import Timeouts
from storyloom.engine.narrators.anthropic import AnthropicNarrator
from tests.conftest import event_names, prose_on_screen, turn_json
from tests.wire import anthropic_sse as sse
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
    narrator = AnthropicNarrator(
        api_key="sk-ant-test-key", base_url=server.url, timeouts=options.pop("timeouts", Timeouts(read=2.0)), **options
    )

    async def record_sleep(seconds: float) -> None:
        if sleeps is not None:
            sleeps.append(seconds)

    return Session(pack, narrator, budget=budget, sleep=record_sleep)


async def play(session, command="take lamp"):
    return [event async for event in session.play(command)]


def all_text(message):
    return " ".join(block.get("text", "") if isinstance(block, dict) else "" for block in message["content"])


async def test_the_narrative_streams_word_by_word_while_the_tool_input_is_written(pack, server):
    server.script(Stream(sse.turn_stream(GOOD)))
    session = session_for(pack, server)
    events = await play(session)
    deltas = [e.text for e in events if e.event == "prose_delta"]
    assert len(deltas) >= 10
    assert event_names(events).index("prose_delta") < event_names(events).index("attempt_finished")
    assert "".join(deltas) == LAMP_PROSE
    assert event_names(events)[-1] == "turn_committed"
    assert session.state["items"]["lamp"] == "player"
    body = server.requests[0].body
    assert server.requests[0].path == "/v1/messages"
    assert body["stream"] is True
    assert body["tool_choice"] == {"type": "tool", "name": "report_turn"}
    # the patch always; the narrative too in every turn, but a correction may leave it out to keep the prose
    assert body["tools"][0]["input_schema"]["required"] == ["state_patch"]
    headers = server.requests[0].headers
    assert "sk-ant-test-key" in (headers.get("x-api-key", "") + headers.get("authorization", ""))


async def test_the_system_prompt_carries_the_rules_and_the_world_under_a_cache_breakpoint(pack, server):
    server.script(Stream(sse.turn_stream(GOOD)))
    await play(session_for(pack, server))
    system = server.requests[0].body["system"]
    assert system[-1]["cache_control"] == {"type": "ephemeral"}
    text = system[0]["text"]
    for word in ("Rocky Shore", "Cliff Path", "brass lamp", '"gates": {"up": "door_open"}', '"min": 0, "max": 10'):
        assert word in text
    current = server.requests[0].body["messages"][-1]
    assert current["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "take lamp" in all_text(current) and '"lamp": "shore"' in all_text(current)


async def test_committed_turns_are_sent_back_as_tool_calls_with_a_breakpoint_on_the_last(pack, server):
    server.script(Stream(sse.turn_stream(GOOD)), Stream(sse.turn_stream(turn_json("You look at the sea."))))
    session = session_for(pack, server)
    await play(session)
    await play(session, "look")
    messages = server.requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    call = messages[1]["content"][-1]
    assert call["type"] == "tool_use" and call["input"]["narrative"] == LAMP_PROSE
    assert call["cache_control"] == {"type": "ephemeral"}
    assert messages[2]["content"][0] == {"type": "tool_result", "tool_use_id": call["id"], "content": "Committed."}
    assert "look" in all_text(messages[2])
    breakpoints = json.dumps(server.requests[1].body).count('"cache_control"')
    assert breakpoints <= 4  # the API allows four


async def test_a_text_only_answer_gets_the_corrective_request_then_commits(pack, server):
    server.script(Stream(sse.text_stream("You pick up the lamp. It is heavy.")), Stream(sse.turn_stream(GOOD)))
    session = session_for(pack, server)
    events = await play(session)
    failed = next(e for e in events if e.event == "validation_failed")
    assert failed.issues[0].rule == "output.missing"
    assert event_names(events)[-1] == "turn_committed"
    assert session.state["items"]["lamp"] == "player"
    messages = server.requests[1].body["messages"]
    assert messages[-2] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "You pick up the lamp. It is heavy."}],
    }
    assert messages[-1] == {"role": "user", "content": [{"type": "text", "text": MISSING_WORDS}]}


async def test_a_thinking_only_answer_with_thinking_on_gets_the_corrective_request(pack, server):
    thinking_only = [
        sse.message_start(),
        *sse.thinking_block(0, "The player wants the lamp. I should"),
        *sse.message_end("end_turn"),
    ]
    server.script(
        Stream(thinking_only),
        Stream(
            [
                sse.message_start(),
                *sse.thinking_block(0, "Report it."),
                *sse.tool_block(1, GOOD),
                *sse.message_end("tool_use"),
            ]
        ),
    )
    session = session_for(pack, server, thinking=True)
    events = await play(session)
    assert [e.issues[0].rule for e in events if e.event == "validation_failed"] == ["output.missing"]
    assert event_names(events)[-1] == "turn_committed"
    first, second = (r.body for r in server.requests)
    assert first["tool_choice"] == {"type": "auto"}
    assert first["thinking"] == {"type": "adaptive"}  # the default model thinks adaptively
    assert [m["role"] for m in second["messages"]] == ["user"]
    assert second["messages"][-1]["content"][-1] == {"type": "text", "text": MISSING_WORDS}


async def test_older_models_think_with_a_token_budget(pack, server):
    server.script(Stream(sse.turn_stream(GOOD)))
    await play(session_for(pack, server, thinking=True, model="claude-haiku-4-5-20251001", max_tokens=1000))
    body = server.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 3048 and body["tool_choice"] == {"type": "auto"}


async def test_a_turn_cut_off_at_max_tokens_is_an_issue_and_the_correction_commits(pack, server):
    cut = sse.tool_block(0, GOOD)[:-6]  # the input stops mid-narrative, no content_block_stop
    server.script(
        Stream([sse.message_start(), *cut, *sse.message_end("max_tokens")]),
        Stream(sse.turn_stream(turn_json("You take the lamp.", TAKE_LAMP))),
    )
    session = session_for(pack, server)
    events = await play(session)
    attempt = next(e for e in events if e.event == "attempt_finished")
    assert attempt.stop_reason == "max_tokens"
    assert [e.issues[0].rule for e in events if e.event == "validation_failed"] == ["output.truncated"]
    assert event_names(events)[-1] == "turn_committed"
    assert prose_on_screen(events) == "You take the lamp."
    correction = server.requests[1].body["messages"]
    assert "output.truncated" in all_text(correction[-1])
    assert GOOD[:40] in all_text(correction[-2])  # the cut-off output, as the model wrote it


async def test_a_refusal_fails_the_turn_at_once_without_corrections(pack, server):
    refusal = [
        sse.message_start(),
        *sse.text_block(0, "I can't"),
        *sse.message_end("refusal", stop_details={"type": "refusal", "category": None, "explanation": "policy"}),
    ]
    server.script(Stream(refusal))
    session = session_for(pack, server)
    before = session.state
    events = await play(session)
    assert event_names(events)[-1] == "turn_failed"
    assert events[-1].issues[0].rule == "narrator.refusal"
    assert "declined" in events[-1].issues[0].message
    assert "correction_started" not in event_names(events)
    assert len(server.requests) == 1
    assert session.state == before and session.history == ()


async def test_an_overloaded_error_event_mid_stream_is_retried_without_spending_the_budget(pack, server):
    broken = [sse.message_start(), *sse.tool_block(0, GOOD)[:8], sse.error_event("overloaded_error", "Overloaded")]
    server.script(Stream(broken), Stream(sse.turn_stream(GOOD)))
    sleeps: list[float] = []
    session = session_for(pack, server, sleeps=sleeps, budget=0)
    events = await play(session)
    retrying = next(e for e in events if e.event == "narrator_retrying")
    assert "overloaded" in retrying.reason
    wiped = event_names(events).index("prose_replaced")
    assert event_names(events).index("prose_delta") < wiped < event_names(events).index("narrator_retrying")
    assert event_names(events)[-1] == "turn_committed"
    assert prose_on_screen(events) == LAMP_PROSE
    assert len(sleeps) == 1 and len(server.requests) == 2


async def test_a_429_waits_as_long_as_retry_after_says(pack, server):
    server.script(
        Status(
            429,
            sse.error_body("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
            {"retry-after": "7"},
        ),
        Stream(sse.turn_stream(GOOD)),
    )
    sleeps: list[float] = []
    session = session_for(pack, server, sleeps=sleeps)
    events = await play(session)
    retrying = next(e for e in events if e.event == "narrator_retrying")
    assert retrying.delay == 7.0 and "rate limited" in retrying.reason
    assert sleeps == [7.0]
    assert event_names(events)[-1] == "turn_committed"
    assert len(server.requests) == 2  # the SDK itself never retried


async def test_a_529_overloaded_answer_is_retried(pack, server):
    server.script(
        Status(529, sse.error_body("overloaded_error", "Overloaded"), {"retry-after": "3"}),
        Stream(sse.turn_stream(GOOD)),
    )
    sleeps: list[float] = []
    events = await play(session_for(pack, server, sleeps=sleeps))
    assert sleeps == [3.0]
    assert "overloaded" in next(e for e in events if e.event == "narrator_retrying").reason
    assert event_names(events)[-1] == "turn_committed"


async def test_a_correction_carries_only_the_last_rejection_and_stays_the_same_size(pack, server):
    wrong_room = turn_json(
        "You hurl the brass lamp far out to sea.", [{"op": "replace", "path": "/items/lamp", "value": "sea"}]
    )
    wrong_item = turn_json(
        "You grab the brass sword from the rock.", [{"op": "replace", "path": "/items/sword", "value": "player"}]
    )
    server.script(
        Stream(sse.turn_stream(wrong_room)),
        Stream(sse.turn_stream(wrong_item, cache_read=2000)),
        Stream(sse.turn_stream(GOOD, cache_read=2000)),
    )
    session = session_for(pack, server)
    events = await play(session)
    assert event_names(events)[-1] == "turn_committed"
    second, third = server.requests[1], server.requests[2]
    assert '"value": "sea"' in json.dumps(second.body) and "/items/sword" not in json.dumps(second.body)
    assert "/items/sword" in json.dumps(third.body) and '"value": "sea"' not in json.dumps(third.body)
    # the prose the player has read is referenced by the correction, not repeated
    assert "far out to sea" not in json.dumps(second.body) and "brass sword" not in json.dumps(third.body)
    assert third.body["messages"][-2]["content"][-1]["input"] == {
        "state_patch": [{"op": "replace", "path": "/items/sword", "value": "player"}]
    }
    assert len(second.body["messages"]) == len(third.body["messages"]) == 3
    assert abs(len(third.raw_body) - len(second.raw_body)) < 200
    result = third.body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["is_error"] is True
    issues = json.loads(result["content"].split("as JSON:", 1)[1].split("\n\n")[1])
    assert issues == [
        issue.to_json() for issue in next(e for e in events if e.event == "validation_failed" and e.attempt == 2).issues
    ]
    assert "leave `narrative` out" in result["content"] and "on the player's screen" in result["content"]
    usage = [e.usage for e in events if e.event == "attempt_finished"]
    assert usage[1] == {"input_tokens": 4100, "output_tokens": 180, "cached_tokens": 2000}


async def test_malformed_tool_json_reaches_the_judge_instead_of_crashing(pack, server):
    server.script(
        Stream(sse.turn_stream('{"narrative": "You take it."}} "state_patch": []')), Stream(sse.turn_stream(GOOD))
    )
    session = session_for(pack, server)
    events = await play(session)
    assert [e.issues[0].rule for e in events if e.event == "validation_failed"] == ["output.json"]
    assert event_names(events)[-1] == "turn_committed"


async def test_pause_turn_is_continued_with_the_partial_answer(pack, server):
    paused = [sse.message_start(), *sse.text_block(0, "Let me think about the shore."), *sse.message_end("pause_turn")]
    server.script(Stream(paused), Stream(sse.turn_stream(GOOD)))
    session = session_for(pack, server)
    events = await play(session)
    assert "validation_failed" not in event_names(events)
    assert event_names(events)[-1] == "turn_committed"
    assert server.requests[1].body["messages"][-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Let me think about the shore."}],
    }
    assert server.requests[1].body["messages"][:-1] == server.requests[0].body["messages"]


async def test_a_paused_answer_goes_back_with_its_text_blocks_citations(pack, server):
    # After a web search the text cites its sources in `citations_delta` events; the paused answer
    # goes back as it arrived, so the text block keeps them.
    citation = {
        "type": "web_search_result_location",
        "cited_text": "Trim the wick before lighting.",
        "url": "https://example.com/lamps",
        "title": "Oil lamps",
        "encrypted_index": "Eo8BCioIAhgBIiQ",
    }
    paused = [
        sse.message_start(),
        sse.event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        sse.event(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": citation}},
        ),
        sse.event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Trim the wick first."},
            },
        ),
        sse.event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        *sse.message_end("pause_turn"),
    ]
    server.script(Stream(paused), Stream(sse.turn_stream(GOOD)))
    events = await play(session_for(pack, server))
    assert event_names(events)[-1] == "turn_committed"
    assert server.requests[1].body["messages"][-1]["content"] == [
        {"type": "text", "text": "Trim the wick first.", "citations": [citation]}
    ]


NESTED = '{"narrative": "You look.", "state_patch": ' + "[" * 3000 + "]" * 3000 + "}"
"""Input nested deeper than Python's JSON parser goes: it raises RecursionError, not ValueError."""


async def test_an_input_nested_too_deep_is_corrected_not_a_crash(pack, server):
    # The rejected input goes back as text, since it cannot be read as an object (building the
    # correction request crashed the session).
    server.script(Stream(sse.turn_stream(NESTED)), Stream(sse.turn_stream(GOOD)))
    events = await play(session_for(pack, server))
    assert [e.issues[0].rule for e in events if e.event == "validation_failed"] == ["output.json"]
    assert event_names(events)[-1] == "turn_committed" and len(server.requests) == 2
    assert NESTED in all_text(server.requests[1].body["messages"][-2])


async def test_a_paused_tool_input_nested_too_deep_goes_back_as_it_started_not_a_crash(pack, server):
    paused = [sse.message_start(), *sse.tool_block(0, NESTED, name="web_search"), *sse.message_end("pause_turn")]
    server.script(Stream(paused), Stream(sse.turn_stream(GOOD)))
    events = await play(session_for(pack, server))
    assert event_names(events)[-1] == "turn_committed"
    (block,) = server.requests[1].body["messages"][-1]["content"]
    assert block["name"] == "web_search" and block["input"] == {}


async def test_a_rejected_key_says_which_variable_to_set(pack, server):
    server.script(Status(401, sse.error_body("authentication_error", "invalid x-api-key: sk-ant-test-key")))
    events = await play(session_for(pack, server))
    assert event_names(events)[-1] == "turn_failed"
    assert "ANTHROPIC_API_KEY" in events[-1].issues[0].message
    assert "sk-ant-test-key" not in events[-1].issues[0].message
    assert len(server.requests) == 1


async def test_a_context_window_overflow_suggests_summarising_or_a_larger_model(pack, server):
    server.script(
        Stream([sse.message_start(), *sse.tool_block(0, GOOD)[:4], *sse.message_end("model_context_window_exceeded")])
    )
    events = await play(session_for(pack, server))
    message = events[-1].issues[0].message
    assert event_names(events)[-1] == "turn_failed"
    assert "context window" in message and "Summarise" in message and "--model" in message


async def test_a_prompt_too_long_error_gets_the_same_advice(pack, server):
    server.script(
        Status(400, sse.error_body("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"))
    )
    events = await play(session_for(pack, server))
    assert "context window" in events[-1].issues[0].message


def test_no_key_is_a_clear_error_naming_the_variable():
    with pytest.raises(NarratorError, match="ANTHROPIC_API_KEY"):
        AnthropicNarrator(api_key=None)


@pytest.fixture
def story_files(tmp_path, monkeypatch):
    """A story file and a commands file, with config and data folders kept inside tmp_path."""
    from tests.conftest import SHORE_PACK

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for var in ("STORYLOOM_NARRATOR", "STORYLOOM_MODEL", "STORYLOOM_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    story = tmp_path / "shore.toml"
    story.write_text(SHORE_PACK, encoding="utf-8")
    commands = tmp_path / "commands.txt"
    commands.write_text("take lamp\ngo north\n", encoding="utf-8")
    return story, commands


def test_headless_play_with_the_anthropic_narrator_end_to_end(server, story_files, monkeypatch, capsys):
    from storyloom.tui.cli import main

    story, commands = story_files
    north = turn_json(
        "You climb north onto the Cliff Path, the lamp swinging.",
        [{"op": "replace", "path": "/location", "value": "path"}],
    )
    server.script(
        Stream(sse.turn_stream(GOOD)),
        Stream(sse.text_stream("You walk north.")),
        Stream(sse.turn_stream(north, cache_read=1900)),
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-e2e-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    events_path = story.parent / "events.jsonl"
    code = main(
        [
            "play",
            "--headless",
            "--narrator",
            "anthropic",
            "--story",
            str(story),
            "--commands",
            str(commands),
            "--events",
            str(events_path),
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert LAMP_PROSE in out and "Cliff Path" in out
    assert "rejected (output.missing)" in err
    assert "sk-ant-e2e-key" not in out + err + events_path.read_text()
    events = [json.loads(line) for line in events_path.read_text().splitlines()]
    assert [e["event"] for e in events].count("turn_committed") == 2
    assert [len(r.body["messages"]) for r in server.requests] == [1, 3, 5]
    assert server.requests[2].body["messages"][-1]["content"][-1]["text"] == MISSING_WORDS


async def test_with_thinking_on_history_is_sent_as_text_so_no_thinking_block_is_demanded(pack, server):
    # The API insists that the last assistant tool call keep its thinking block when thinking is on;
    # history keeps no thinking, so committed turns go back as their JSON text instead.
    think = [
        sse.message_start(),
        *sse.thinking_block(0, "Easy."),
        *sse.tool_block(1, GOOD),
        *sse.message_end("tool_use"),
    ]
    server.script(Stream(think), Stream(think))
    session = session_for(pack, server, thinking=True)
    await play(session)
    await play(session, "look")
    messages = server.requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][0]["type"] == "text"
    assert json.loads(messages[1]["content"][0]["text"])["narrative"] == LAMP_PROSE
    assert "tool_use" not in json.dumps(messages) and "tool_result" not in json.dumps(messages)
