"""The OpenAI chat completions streaming format: `data: {chat.completion.chunk}` lines, then `data: [DONE]`.

Each chunk carries `choices[0].delta` (role, content, tool_calls with argument pieces,
refusal) and finally a `finish_reason`; with `stream_options.include_usage` one more
chunk with empty `choices` carries the usage.
"""

from __future__ import annotations

import json
from typing import Any

from tests.wire.anthropic_sse import words

MODEL = "llama3.1:8b"


def data(payload: dict[str, Any] | str) -> bytes:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {text}\n\n".encode()


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    return data(
        {
            "id": "chatcmpl-9Qa8Hrt8GmZk4XCk1Zh2bT9oY",
            "object": "chat.completion.chunk",
            "created": 1718000000,
            "model": MODEL,
            "system_fingerprint": "fp_ollama",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            "usage": None,
        }
    )  # with include_usage, every chunk but the last carries "usage": null


def usage_chunk(prompt: int = 1500, completion: int = 160, cached: int = 0) -> bytes:
    return data(
        {
            "id": "chatcmpl-9Qa8Hrt8GmZk4XCk1Zh2bT9oY",
            "object": "chat.completion.chunk",
            "created": 1718000000,
            "model": MODEL,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }
    )


DONE = data("[DONE]")


def tool_stream(turn_json: str, *, finish_reason: str = "tool_calls", cached: int = 0) -> list[bytes]:
    """The turn as a function call whose arguments arrive in many small pieces."""
    out = [
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_Xn3pDhA1oV0aKQ",
                        "type": "function",
                        "function": {"name": "report_turn", "arguments": ""},
                    }
                ],
            }
        )
    ]
    for piece in words(turn_json):
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    return [*out, chunk({}, finish_reason), usage_chunk(cached=cached), DONE]


def content_stream(text: str, *, finish_reason: str = "stop") -> list[bytes]:
    """Plain content in word pieces: the turn in json mode, or stray text in tools mode."""
    out = [chunk({"role": "assistant", "content": ""})]
    for piece in words(text):
        out.append(chunk({"content": piece}))
    return [*out, chunk({}, finish_reason), usage_chunk(), DONE]


def refusal_stream(text: str) -> list[bytes]:
    out = [chunk({"role": "assistant", "content": None, "refusal": ""})]
    for piece in words(text):
        out.append(chunk({"refusal": piece}))
    return [*out, chunk({}, "stop"), usage_chunk(), DONE]


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
