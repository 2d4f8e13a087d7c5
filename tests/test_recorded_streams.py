"""Real servers' streams, played through the real narrators over a loopback socket.

Each recording in `tests/wire/recorded/` is the first answer to "take lamp"; what the
player must see is written beside it here: how the turn ends, how many corrections and
"narrator busy" retries it took, and the usage recorded for the first judged attempt.
Any request after the first is answered by a well-formed stream, so a recording that
needs a correction, a retry or a continuation is seen to recover.

The whole suite plays twice more with the server's re-chunking mode (`WireServer(rechunk=seed)`):
the same bytes cut anywhere, joined, split inside UTF-8 characters and between CR and LF; and once
more a byte at a time (`WireServer(bytewise=True)`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators._http_internals import READ_INTERVAL
from storyloom.engine.narrators._shared import Timeouts
from storyloom.engine.narrators.anthropic import AnthropicNarrator
from storyloom.engine.narrators.openai import OpenAINarrator
from tests.conftest import event_names, prose_on_screen, turn_json
from tests.wire import anthropic_sse, openai_sse, recordings
from tests.wire.server import Stream, WireServer, rechunked

PROSE = "You crouch on the wet rocks and lift the brass lamp. Its glass is cracked but the wick is dry."
SEPARATED_PROSE = (
    "You crouch on the wet rocks\u2028and lift the brass lamp.\u2029Its glass is cracked\u0085but the wick is dry."
)
NON_ASCII_PROSE = (
    "You crouch on the wet rocks \u2014 \u201cthe lamp,\u201d you whisper \u2014 and lift it: "
    "caf\u00e9-brown brass, na\u00efve little flame \U0001f3ee."
)
ANTHROPIC_NON_ASCII_PROSE = (
    "You crouch on the wet rocks \u2014 \u201cthe lamp,\u201d you whisper\u2028\u2014 and lift it: "
    "caf\u00e9-brown brass, na\u00efve little flame \U0001f3ee."
)
CRLF_PROSE = (
    "You crouch on the wet rocks and lift the brass lamp \u2014 its glass is cracked, but the wick is dry; "
    "\u201cstill good,\u201d you murmur."
)
SEEDS = (None, 1, 2)
"""Plain (one event per chunk), then re-chunked with two seeds."""
CUTS = {
    "plain": {},
    **{f"rechunked-{seed}": {"rechunk": seed} for seed in SEEDS[1:]},
    "byte-by-byte": {"bytewise": True},
}
"""How the server cuts a recording's bytes (`WireServer`'s keywords): the seeds, then one byte a piece."""
GOOD = turn_json(PROSE, [{"op": "replace", "path": "/items/lamp", "value": "player"}])


def tokens(inp: int = 0, out: int = 0, cached: int = 0) -> dict[str, int]:
    return {"input_tokens": inp, "output_tokens": out, "cached_tokens": cached}


@dataclass(frozen=True)
class Expect:
    """What a player sees when the recording is the first answer to a turn."""

    narrator: str
    """"openai" or "anthropic"."""
    output: str = "tools"
    """The openai narrator's --output the recording answers."""
    ends: str = "turn_committed"
    rule: str | None = None
    """The rule of the failure, or of the issue that made the first attempt be corrected."""
    says: str = ""
    """Words the failure (or the retry notice) must contain: the server's or the model's own."""
    corrections: int = 0
    retries: int = 0
    continued: int = 0
    """Requests that continued a paused answer (`pause_turn`)."""
    prose: str = PROSE
    """The committed narrative, as the recording writes it."""
    usage: dict[str, int] | None = field(default=None)
    """Usage of the first judged attempt, as the recording reports it."""


SYNTHETIC_USAGE_OPENAI = tokens(1500, 160)
SYNTHETIC_USAGE_ANTHROPIC = tokens(2100, 180)

EXPECTED: dict[str, Expect] = {
    "openai_tool_call_id_and_name_first": Expect("openai", usage=tokens(44, 16)),
    "openai_json_cut_at_length": Expect(
        "openai", output="json", rule="output.truncated", corrections=1, usage=tokens(79, 1)
    ),
    "openai_refusal": Expect(
        "openai",
        output="json",
        ends="turn_failed",
        rule="narrator.refusal",
        says="I'm sorry, I can't assist with that request.",
    ),
    "openai_text_instead_of_call": Expect("openai", rule="output.missing", corrections=1, usage=tokens(14, 47)),
    "openai_two_parallel_calls": Expect("openai", usage=tokens(149, 60)),
    "anthropic_tool_use_after_text_and_ping": Expect("anthropic", usage=tokens(377, 65)),
    "anthropic_cut_at_max_tokens": Expect("anthropic", rule="output.truncated", corrections=1, usage=tokens(450, 124)),
    "anthropic_thinking_signature_refusal": Expect(
        "anthropic", ends="turn_failed", rule="narrator.refusal", says="declined to write this turn"
    ),
    "anthropic_refusal_with_explanation": Expect(
        "anthropic", ends="turn_failed", rule="narrator.refusal", says="This request was refused due to policy."
    ),
    "anthropic_text_only_end_turn": Expect("anthropic", rule="output.missing", corrections=1, usage=tokens(11, 6)),
    "xai_grok_usage_in_every_chunk": Expect(
        "openai", output="json", rule="output.truncated", corrections=1, usage=tokens(38, 200)
    ),
    "mistral_usage_in_the_finish_chunk": Expect(
        "openai", output="json", rule="output.truncated", corrections=1, usage=tokens(34, 100)
    ),
    "deepinfra_spaced_json_and_estimated_cost": Expect("openai", output="json", usage=tokens(48, 189)),
    "openai_usage_omitted": Expect("openai", output="json", usage=tokens()),
    "ollama_whole_calls_in_one_chunk_each": Expect("openai", usage=tokens()),
    "openrouter_processing_comments_then_cut": Expect(
        "openai",
        output="json",
        retries=1,
        says="stopped the answer before it was complete",
        usage=SYNTHETIC_USAGE_OPENAI,
    ),
    "llama_cpp_error_field_then_done": Expect(
        "openai", ends="turn_failed", rule="narrator.error", says="no longer fits"
    ),
    "anthropic_overloaded_error_event": Expect(
        "anthropic", retries=1, says="overloaded", usage=SYNTHETIC_USAGE_ANTHROPIC
    ),
    "anthropic_text_padded_lines": Expect("anthropic", rule="output.missing", corrections=1, usage=tokens(36, 265)),
    "anthropic_compaction_block_then_text": Expect(
        "anthropic", rule="output.missing", corrections=1, usage=tokens(30, 8)
    ),
    "xai_reasoning_content_then_whole_call": Expect("openai", usage=tokens(307, 26, 306)),
    "azure_prompt_filter_results_first": Expect("openai", output="json", usage=tokens(15, 5)),
    "mistral_content_as_a_list_of_parts": Expect("openai", output="json", usage=tokens(28, 139)),
    "openai_tool_call_finished_with_stop": Expect("openai", usage=tokens(44, 16)),
    "openrouter_reasoning_then_error_chunk": Expect(
        "openai", output="json", ends="turn_failed", rule="narrator.error", says="Token limit reached"
    ),
    "llama_cpp_data_error_after_call_pieces": Expect(
        "openai", retries=1, says="Failed to parse input", usage=SYNTHETIC_USAGE_OPENAI
    ),
    "openrouter_reasoning_details_then_content": Expect("openai", output="json", usage=tokens(43, 36)),
    "groq_reasoning_then_tool_use_failed_error_event": Expect(
        "openai", retries=1, says="Tool call validation failed", usage=SYNTHETIC_USAGE_OPENAI
    ),
    "gemini_whole_call_without_index": Expect("openai", usage=tokens(108, 19)),
    "vllm_tools_done_without_finish_reason": Expect("openai", usage=tokens()),
    "vllm_raw_line_separators_in_content": Expect("openai", output="json", prose=SEPARATED_PROSE, usage=tokens()),
    "poolside_tool_call_id_changes_on_later_deltas": Expect("openai", usage=tokens()),
    "openrouter_finish_reason_error_without_error_object": Expect(
        "openai", retries=1, says="MALFORMED_FUNCTION_CALL", usage=SYNTHETIC_USAGE_OPENAI
    ),
    "anthropic_pause_turn_after_server_tool_use": Expect("anthropic", continued=1, usage=tokens(2100 + 42, 40 + 180)),
    "openai_non_ascii_prose": Expect("openai", prose=NON_ASCII_PROSE, usage=tokens(44, 31)),
    "xinference_crlf_line_ends": Expect("openai", output="json", prose=CRLF_PROSE, usage=tokens(52, 48)),
    "anthropic_non_ascii_prose": Expect("anthropic", prose=ANTHROPIC_NON_ASCII_PROSE, usage=tokens(377, 65)),
    "portkey_bedrock_half_call_then_unknown_event": Expect(
        "openai", retries=1, says="stopped the answer before it was complete", usage=SYNTHETIC_USAGE_OPENAI
    ),
    "ollama_parallel_calls_all_at_index_0": Expect("openai", usage=tokens()),
    "one_api_half_call_then_done": Expect(
        "openai", retries=1, says="stopped the answer before it was complete", usage=SYNTHETIC_USAGE_OPENAI
    ),
}


def test_every_recording_has_its_expectation_and_cites_its_source():
    assert sorted(EXPECTED) == recordings.names()
    assert len(EXPECTED) >= 20
    for name in recordings.names():
        header = " ".join(recordings.header(name))
        assert "source:" in header and "changed:" in header and "quirks:" in header, name


def _narrator(expect: Expect, url: str):
    timeouts = Timeouts(read=2.0)
    if expect.narrator == "anthropic":
        return AnthropicNarrator(api_key="sk-ant-recorded", base_url=url, timeouts=timeouts)
    return OpenAINarrator(base_url=f"{url}/v1", output=expect.output, timeouts=timeouts)


def _well_formed(expect: Expect) -> Stream:
    if expect.narrator == "anthropic":
        return Stream(anthropic_sse.turn_stream(GOOD))
    return Stream(openai_sse.content_stream(GOOD) if expect.output == "json" else openai_sse.tool_stream(GOOD))


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("name", recordings.names())
async def test_a_recorded_stream_plays_as_the_player_should_see_it(pack, name, cut):
    expect = EXPECTED[name]
    later = expect.corrections + expect.retries + expect.continued
    with WireServer(**CUTS[cut]) as server:
        server.script(Stream(recordings.events(name)), *[_well_formed(expect)] * later)

        async def no_wait(_: float) -> None:
            return None

        session = Session(pack, _narrator(expect, server.url), sleep=no_wait)
        events = [event async for event in session.play("take lamp")]
    names = event_names(events)
    assert names[-1] == expect.ends, [getattr(e, "issues", None) for e in events if e.event == "turn_failed"]
    assert names.count("correction_started") == expect.corrections
    assert names.count("narrator_retrying") == expect.retries
    assert len(server.requests) == 1 + later
    if expect.corrections:
        assert next(e for e in events if e.event == "validation_failed").issues[0].rule == expect.rule
    retried = [e.reason for e in events if e.event == "narrator_retrying"]
    if expect.ends == "turn_failed":
        issue = events[-1].issues[0]
        assert issue.rule == expect.rule and expect.says in issue.message
        assert session.history == () and session.state["items"]["lamp"] == "shore"
    else:
        committed = events[-1]
        assert committed.narrative == expect.prose == prose_on_screen(events)
        assert session.state["items"]["lamp"] == "player"
        assert all(expect.says in reason for reason in retried)
    judged = [e.usage for e in events if e.event == "attempt_finished"]
    if expect.usage is not None:
        assert judged[0] == expect.usage


@pytest.mark.parametrize("cut", CUTS)
async def test_a_paused_answer_goes_back_with_its_server_tool_input_whole(pack, cut):
    """`pause_turn`: the continuation sends the paused answer back as received, the server tool's
    input assembled from its `input_json_delta` pieces (its start says `input: {}`), however the
    bytes were cut."""
    expect = EXPECTED["anthropic_pause_turn_after_server_tool_use"]
    with WireServer(**CUTS[cut]) as server:
        server.script(Stream(recordings.events("anthropic_pause_turn_after_server_tool_use")), _well_formed(expect))
        session = Session(pack, _narrator(expect, server.url))
        events = [event async for event in session.play("take lamp")]
    assert event_names(events)[-1] == "turn_committed"
    first, continuation = (request.body["messages"] for request in server.requests)
    assert continuation[:-1] == first
    assert continuation[-1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look that up."},
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01WebSearch",
                "name": "web_search",
                "input": {"query": "how to light an old brass lamp"},
            },
        ],
    }


def test_each_rechunked_run_cuts_characters_and_crlfs_with_a_pause_the_client_reads_apart():
    """What the re-chunked runs stand for, checked on the cuts the seeds make in the recordings: each
    seed cuts, somewhere in the suite, inside a two- or three-byte character, inside a four-byte one
    (an emoji of the non-ASCII prose cases) and between a CR and its LF (Xinference), each time
    pausing longer than the client waits between two reads, so the halves arrive in separate reads;
    and the pieces are the body byte for byte."""
    for seed in SEEDS[1:]:
        paused: dict[str, int] = {"inside a character": 0, "inside a four-byte character": 0, "between CR and LF": 0}
        for name in recordings.names():
            body = b"".join(recordings.events(name))
            pieces = rechunked(body, random.Random(seed))
            assert b"".join(piece for _, piece in pieces) == body
            at = 0
            for wait, piece in pieces:
                if at and wait > READ_INTERVAL:
                    if 0x80 <= body[at] < 0xC0:
                        lead = next(byte for byte in reversed(body[:at]) if not 0x80 <= byte < 0xC0)
                        paused["inside a four-byte character" if lead >= 0xF0 else "inside a character"] += 1
                    paused["between CR and LF"] += body[at - 1 : at + 1] == b"\r\n"
                at += len(piece)
        assert all(paused.values()), (seed, paused)
