"""The Anthropic Messages streaming format, as documented (event: name / data: JSON / blank line).

https://docs.anthropic.com/en/docs/build-with-claude/streaming — a stream is
message_start, then per content block content_block_start / content_block_delta… /
content_block_stop, then message_delta (stop_reason, usage) and message_stop; `ping`
may appear anywhere; an `error` event may interrupt it.
"""

from __future__ import annotations

import json
import re
from typing import Any

MODEL = "claude-sonnet-4-5-20250929"


def event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def message_start(*, input_tokens: int = 2100, cache_read: int = 0, cache_write: int = 0) -> bytes:
    return event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": MODEL,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": 1,
                },
            },
        },
    )


def ping() -> bytes:
    return event("ping", {"type": "ping"})


def words(text: str) -> list[str]:
    """Split text into word-sized pieces (each keeps its trailing spaces), as a model streams it."""
    return re.findall(r"\S+\s*|\s+", text)


def tool_block(index: int, turn_json: str, *, name: str = "report_turn") -> list[bytes]:
    """A tool_use block whose input arrives in many small input_json_delta pieces."""
    out = [
        event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": f"toolu_01T1x1fJ34qAmk2tNTrN7Up{index}",
                    "name": name,
                    "input": {},
                },
            },
        ),
        event(
            "content_block_delta",
            {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ""}},
        ),
    ]
    for piece in words(turn_json):
        out.append(
            event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                },
            )
        )
    out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out


def text_block(index: int, text: str) -> list[bytes]:
    out = [
        event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        )
    ]
    for piece in words(text):
        out.append(
            event(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}},
            )
        )
    out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out


def thinking_block(index: int, thinking: str) -> list[bytes]:
    out = [
        event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        )
    ]
    for piece in words(thinking):
        out.append(
            event(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": piece}},
            )
        )
    out.append(
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {
                    "type": "signature_delta",
                    "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
                },
            },
        )
    )
    out.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out


def message_end(
    stop_reason: str, *, output_tokens: int = 180, stop_details: dict[str, Any] | None = None
) -> list[bytes]:
    delta: dict[str, Any] = {"stop_reason": stop_reason, "stop_sequence": None}
    if stop_details is not None:
        delta["stop_details"] = stop_details
    return [
        event("message_delta", {"type": "message_delta", "delta": delta, "usage": {"output_tokens": output_tokens}}),
        event("message_stop", {"type": "message_stop"}),
    ]


def turn_stream(
    turn_json: str, *, stop_reason: str = "tool_use", cache_read: int = 0, preamble: str | None = None
) -> list[bytes]:
    """A whole answer reporting a turn through the tool (optionally after some text)."""
    out = [message_start(cache_read=cache_read), ping()]
    index = 0
    if preamble:
        out += text_block(0, preamble)
        index = 1
    out += tool_block(index, turn_json)
    return out + message_end(stop_reason)


def text_stream(text: str, *, stop_reason: str = "end_turn") -> list[bytes]:
    return [message_start(), *text_block(0, text), *message_end(stop_reason)]


def error_event(kind: str = "overloaded_error", message: str = "Overloaded") -> bytes:
    return event("error", {"type": "error", "error": {"type": kind, "message": message}})


def error_body(kind: str, message: str) -> dict[str, Any]:
    """The JSON body of an HTTP error answer."""
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}
