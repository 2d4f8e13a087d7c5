"""The OpenAI-compatible narrator: chat completions over `httpx`, streamed, parsed with `httpx-sse`.

One client for every server that speaks `POST {base_url}/chat/completions` with
`stream: true`: Ollama, llama.cpp's server, vLLM, LM Studio, OpenRouter, OpenAI.
The turn comes back either as a function call (`output="tools"`, the default) or as
the message content constrained by a `json_schema` response format (`output="json"`)
for servers whose tool calling is weak. Either way the JSON text is passed on as it
streams, and the engine judges it whole; this module never validates a turn.

`strict` is off in the response format because the turn schema has an untyped patch
`value` (any JSON), which OpenAI's strict mode cannot express; the engine's judge is
the strict part.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import httpx_sse

from storyloom.engine.narration import (
    Chunk,
    Exchange,
    Finish,
    NarrationRequest,
    NarratorError,
    NarratorRefusal,
    StructuredDelta,
    TextDelta,
    TransientNarratorError,
)
from storyloom.engine.narrators._http_internals import frame_paced_transport
from storyloom.engine.narrators._shared import (
    Timeouts,
    connection_fault,
    error_fields,
    stall_fault,
    status_fault,
)
from storyloom.engine.narrators.prompts import (
    TOOL_DESCRIPTION,
    TOOL_NAME,
    command_message,
    correction_message,
    player_message,
    regenerate_message,
    rejected_turn,
    system_prompt,
)
from storyloom.engine.rules import OUTPUT_MAX_CHARS
from storyloom.engine.turns import turn_json_schema

DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"
"""Ollama's OpenAI-compatible endpoint on its default port."""
DEFAULT_MODEL = "llama3.1"
KEY_VAR = "OPENAI_API_KEY"
OUTPUTS = ("tools", "json")
_TOOL_CHANNEL = f"the `{TOOL_NAME}` function"
_JSON_CHANNEL = "a single JSON object as your whole reply, matching the response format"


class OpenAINarrator:
    """A model behind an OpenAI-compatible chat completions endpoint as the game master.

    Args:
        base_url: the API root, up to and including `/v1` (default: a local Ollama).
        api_key: sent as a bearer token when given (`OPENAI_API_KEY`); local servers need none.
        model: the model name the server knows.
        output: "tools" (a function call, tool choice required) or "json" (`response_format` json_schema).
        max_tokens: the output limit per request; a turn cut off there is an `output.truncated` issue.
        timeouts: connect/read limits; a read timeout is how a stalled stream is noticed.
        transport: an httpx transport to use instead of the network (tests).
    """

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        output: str = "tools",
        max_tokens: int = 1024,
        timeouts: Timeouts = Timeouts(),
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        if output not in OUTPUTS:
            raise NarratorError(f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.model = model or DEFAULT_MODEL
        self.output = output
        self.max_tokens = max_tokens
        self.timeouts = timeouts
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            headers=headers,
            transport=transport or frame_paced_transport(),
            timeout=httpx.Timeout(
                connect=timeouts.connect, read=timeouts.read, write=timeouts.write, pool=timeouts.pool
            ),
        )
        self._has_key = bool(api_key)
        self._secret = api_key

    def __repr__(self) -> str:
        return f"OpenAINarrator(model={self.model!r}, base_url={self.base_url!r}, output={self.output!r})"

    async def aclose(self) -> None:
        """Close the connection pool (when the story ends)."""
        await self._client.aclose()

    async def narrate(self, request: NarrationRequest) -> AsyncIterator[Chunk]:
        """Stream one answer; see the module docstring. Raises `NarratorError` subclasses on faults."""
        answer = _Answer(json_mode=self.output == "json")
        url = f"{self.base_url}/chat/completions"
        try:
            async with httpx_sse.aconnect_sse(self._client, "POST", url, json=self.request_body(request)) as source:
                if source.response.status_code >= 400:
                    await source.response.aread()
                    raise self._status_fault(source.response)
                _require_event_stream(source.response, self.base_url)
                async for event in _events(source.response):
                    if event.error is not None:  # old llama.cpp: `error: {...}` then `data: [DONE]`
                        raise self._stream_fault(event.error)
                    if event.data.strip() == "[DONE]":  # the server's own end of the answer
                        answer.done = True
                        break
                    if not event.data.strip():
                        continue
                    try:
                        chunks = answer.feed(self._parse(event.data))
                    except (AttributeError, KeyError, TypeError, ValueError):  # JSON, but not a chunk's shape
                        raise TransientNarratorError(f"{self.base_url} sent a malformed stream event") from None
                    for chunk in chunks:
                        yield chunk
        except httpx.TransportError as exc:
            raise self._transport_fault(exc) from None
        self._check_finish(answer)
        yield Finish(answer.stop_reason(), answer.usage)

    def _transport_fault(self, exc: httpx.TransportError) -> NarratorError:
        """A connection that failed, stalled or dropped."""
        if isinstance(exc, httpx.ConnectError):
            return TransientNarratorError(
                f"cannot connect to {self.base_url} ({exc or type(exc).__name__}); is the model server running?"
            )
        if isinstance(exc, httpx.TimeoutException):
            return stall_fault(self.base_url, self.timeouts.read)
        return connection_fault("the model server", self.base_url, exc)

    def _check_finish(self, answer: _Answer) -> None:
        """An answer cut off, failed on the server's side, refused or filtered ends the turn."""
        if answer.finish_reason is None and not answer.whole_at_done():  # cut off mid-answer: a broken stream
            raise TransientNarratorError(f"{self.base_url} stopped the answer before it was complete")
        if answer.finish_reason == "error":  # the server failed mid-answer (OpenRouter: `native_finish_reason`)
            raise self._finish_fault(answer)
        if answer.refusal:
            raise NarratorRefusal(
                f"The model declined to write this turn ({answer.refusal_text()}). Try a different command."
            )
        if answer.finish_reason == "content_filter":
            raise NarratorRefusal("The server's content filter stopped this turn. Try a different command.")

    def _finish_fault(self, answer: _Answer) -> NarratorError:
        """`finish_reason: "error"`: a fault on the server's side, never a turn to judge; with the
        choice's own `error` object when it sent one, in its words, else a transient fault."""
        if answer.choice_error is not None:
            return self._stream_fault({"error": answer.choice_error})
        native = f", {answer.native_finish_reason}" if answer.native_finish_reason else ""
        return TransientNarratorError(f"{self.base_url} reported an error in its answer (finish_reason error{native})")

    def _parse(self, data: str) -> dict[str, Any]:
        """One chunk's JSON; an `error` object in the stream is a fault like an HTTP error."""
        try:
            payload = json.loads(data)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
            raise TransientNarratorError(f"{self.base_url} sent a malformed stream event") from None
        if not isinstance(payload, dict):
            raise TransientNarratorError(f"{self.base_url} sent a malformed stream event")
        if payload.get("error"):
            raise self._stream_fault(payload)
        return payload

    def _stream_fault(self, body: Any) -> NarratorError:
        """The fault for an error the server reported inside a 200 stream, named in the server's words.

        `body` is `{"error": {...}}` (OpenAI, OpenRouter, current llama.cpp), the error object
        itself (old llama.cpp's `error:` field), or text that is not JSON at all.
        """
        if isinstance(body, str):
            try:
                body = json.loads(body)
            except (ValueError, RecursionError):
                pass
        kind, message = error_fields(body)
        error = body.get("error", body) if isinstance(body, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        status = code if isinstance(code, int) and not isinstance(code, bool) else 500
        return status_fault(
            self.base_url, status, kind, message, None, key_var=KEY_VAR, model=self.model, secret=self._secret
        )

    def _status_fault(self, response: httpx.Response) -> NarratorError:
        kind, message = error_fields(response.content)
        key_var = KEY_VAR if not self._has_key or response.status_code in (401, 403) else None
        return status_fault(
            self.base_url,
            response.status_code,
            kind,
            message,
            response.headers,
            key_var=key_var,
            model=self.model,
            secret=self._secret,
        )

    def request_body(self, request: NarrationRequest) -> dict[str, Any]:
        """The chat completions request for a narration request (public so tests can read it)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": self.messages(request),
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": self.max_tokens,
        }
        if self.output == "tools":
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": turn_json_schema()},
                }
            ]
            body["tool_choice"] = "required"
        else:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "turn", "schema": turn_json_schema(), "strict": False},
            }
        return body

    def messages(self, request: NarrationRequest) -> list[dict[str, Any]]:
        """System prompt, committed history, the player's command, and the latest rejection if any."""
        channel = _JSON_CHANNEL if self.output == "json" else _TOOL_CHANNEL
        messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(request.pack, channel=channel)}]
        for index, exchange in enumerate(request.history):
            messages.append({"role": "user", "content": command_message(exchange.player_input)})
            messages.extend(self._committed(exchange, index))
        current = player_message(request.player_input, request.state, request.pack)
        if request.is_regeneration:  # after the turn's own request, so a prefix cache still serves it
            current += "\n\n" + regenerate_message(request)
        messages.append({"role": "user", "content": current})
        if request.correction is not None:
            self._append_correction(messages, request, channel)
        return messages

    def _committed(self, exchange: Exchange, index: int) -> list[dict[str, Any]]:
        arguments = json.dumps(exchange.turn.to_json(), ensure_ascii=False)
        if self.output == "json":
            return [{"role": "assistant", "content": arguments}]
        call_id = f"call_turn{index + 1}"
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": TOOL_NAME, "arguments": arguments}}
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "Committed."},
        ]

    def _append_correction(self, messages: list[dict[str, Any]], request: NarrationRequest, channel: str) -> None:
        rejection = request.correction
        assert rejection is not None
        message = correction_message(request, channel=channel, json_mode=self.output == "json")
        raw = rejection.raw if rejection.raw and rejection.raw.strip() else None
        text = rejection.text if rejection.text.strip() else None
        whole = raw is not None and _is_json_object(raw)
        if raw is not None and whole:
            parsed = json.loads(raw)
            if (shown := rejected_turn(parsed, request)) != parsed:  # what it keeps is referenced, not repeated
                raw = json.dumps(shown, ensure_ascii=False)
        if self.output == "tools" and raw is not None and whole:
            call_id = f"call_rejected{request.attempt - 1}"
            messages.append(
                {
                    "role": "assistant",
                    "content": text,
                    "tool_calls": [
                        {"id": call_id, "type": "function", "function": {"name": TOOL_NAME, "arguments": raw}}
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "content": message})
            return
        said = "\n\n".join(part for part in (text, raw) if part)
        if said:
            messages.append({"role": "assistant", "content": said})
            messages.append({"role": "user", "content": message})
        else:  # nothing was said at all; many chat templates insist that roles alternate
            messages[-1] = {**messages[-1], "content": f"{messages[-1]['content']}\n\n{message}"}


class _Answer:
    """One streamed completion, read chunk by chunk."""

    def __init__(self, *, json_mode: bool):
        self.json_mode = json_mode
        self.finish_reason: str | None = None
        self.native_finish_reason: str | None = None
        """OpenRouter's word from the model's own provider ("MALFORMED_FUNCTION_CALL")."""
        self.choice_error: dict[str, Any] | None = None
        """An `error` object inside the choice (beside `finish_reason: "error"`)."""
        self.done = False
        """The server sent `data: [DONE]`."""
        self._structured: list[str] = []
        """The turn's JSON text as it arrived: the turn call's arguments, or the content in json mode."""
        self.refusal: list[str] = []
        self.usage = {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0}
        self._call: _Call | None = None
        """The call the latest tool-call delta belonged to."""
        self._turn_call: _Call | None = None
        """The call whose arguments are the turn: the first call of the turn tool."""

    def feed(self, payload: dict[str, Any]) -> list[Chunk]:
        usage = payload.get("usage")
        if isinstance(usage, dict):
            self._read_usage(usage)
        choices = payload.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            return []
        choice = choices[0]
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]
        native = choice.get("native_finish_reason")
        if isinstance(native, str) and native:
            self.native_finish_reason = _printable(native)
        if isinstance(choice.get("error"), dict):
            self.choice_error = choice["error"]
        delta = choice.get("delta") or {}
        chunks: list[Chunk] = []
        content = _content_text(delta.get("content"))
        if content:
            chunks.append(StructuredDelta(content) if self.json_mode else TextDelta(content))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self.refusal.append(refusal)
        for call in delta.get("tool_calls") or []:
            chunks.extend(self._tool_call(call))
        self._structured.extend(chunk.text for chunk in chunks if isinstance(chunk, StructuredDelta))
        return chunks

    def whole_at_done(self) -> bool:
        """`[DONE]` without a finish reason (vLLM with tools, Snowflake Cortex) ends a whole answer
        when the turn's JSON arrived complete; half a turn and then `[DONE]` (a gateway closing the
        stream after an upstream error) is still a broken stream."""
        return self.done and _is_json_object("".join(self._structured))

    def _tool_call(self, delta: Any) -> list[Chunk]:
        """Argument pieces of the first call of the turn tool; any other call is ignored."""
        if not isinstance(delta, dict):
            return []
        function = delta.get("function") or {}
        call = self._call = self._call_of(delta)
        name = function.get("name")
        if call.name is None and isinstance(name, str) and name:
            call.name = name
        if self._turn_call is None and call.name in (None, TOOL_NAME):
            self._turn_call = call
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a few servers send the object itself, not its JSON text
            arguments = json.dumps(arguments, ensure_ascii=False)
        if not isinstance(arguments, str) or not arguments:
            return []
        call.take(arguments)
        return [StructuredDelta(arguments)] if call is self._turn_call else []

    def _call_of(self, delta: dict[str, Any]) -> _Call:
        """The call a tool-call delta continues, or a new one.

        OpenAI numbers calls with `index` and names each call's `id` in its first delta only;
        the `index` is what ties the deltas together (poolside sends one `id` with the name and
        another on every later delta of the same `index`). Gemini's endpoint sends no `index` and
        a whole call per delta, each with its own `id`: there a new `id` starts a new call. Ollama
        (0.20) sends each call whole with its own `id` but every one at `index` 0: a new `id` after
        a call whose arguments are already a whole JSON object starts a new call too. A delta with
        neither continues the current call.
        """
        index = delta.get("index")
        call_id = delta.get("id") if isinstance(delta.get("id"), str) and delta.get("id") else None
        current = self._call
        if current is None or (index is not None and index != current.index):
            return _Call(index=index, id=call_id)
        renamed = call_id is not None and current.id is not None and call_id != current.id
        if renamed and (index is None or current.whole()):
            return _Call(index=index, id=call_id)
        if current.id is None:
            current.id = call_id
        return current

    def _read_usage(self, usage: dict[str, Any]) -> None:
        details = usage.get("prompt_tokens_details") or {}
        for key, value in (
            ("input_tokens", usage.get("prompt_tokens")),
            ("output_tokens", usage.get("completion_tokens")),
            ("cached_tokens", details.get("cached_tokens") if isinstance(details, dict) else None),
        ):
            if isinstance(value, int):
                self.usage[key] = value

    def stop_reason(self) -> str:
        """The provider's own word, except that a cut-off answer is called what the engine knows."""
        if self.finish_reason == "length":
            return "max_tokens"
        return self.finish_reason or "end"

    def refusal_text(self) -> str:
        return _printable("".join(self.refusal)) or "no reason given"


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() else " " for ch in text).strip()[:300]


@dataclass
class _Call:
    """One tool call as its deltas arrive: how the server numbers it, its function's name, its arguments."""

    index: Any = None
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)
    """Its argument pieces, up to `OUTPUT_MAX_CHARS` (a call the turn ignores is never cut off by the engine)."""
    size: int = 0
    closed: bool = False
    """The last piece that was not blank ended in `}`."""

    def take(self, piece: str) -> None:
        self.size += len(piece)
        if self.size <= OUTPUT_MAX_CHARS:
            self.arguments.append(piece)
        if piece.strip():
            self.closed = piece.rstrip().endswith("}")

    def whole(self) -> bool:
        """Whether the arguments are a whole JSON object (parsed only when they end in `}`)."""
        return self.closed and self.size <= OUTPUT_MAX_CHARS and _is_json_object("".join(self.arguments))


@dataclass(frozen=True)
class _Event:
    """One server-sent event: its data, and the text of an `error` field if the server sent one."""

    data: str
    error: str | None


async def _events(response: httpx.Response) -> AsyncIterator[_Event]:
    """The response's server-sent events (WHATWG rules: comments skipped, `data` lines joined).

    httpx-sse drops fields the standard does not name, and with them old llama.cpp's
    `error: {...}` line, the only place that server said why it stopped; so the lines are
    read here and an `error` field is kept. An event still open when the body ends is
    dispatched too (the standard drops it, as a browser's long-lived EventSource must): a
    finished HTTP body whose last chunk lacks its blank line, as some servers' logs show,
    still reports its finish reason; a chunk cut mid-line fails to parse, a transient fault.
    """
    data: list[str] = []
    error: list[str] = []
    async for line in _lines(response):
        if not line:
            if data or error:
                yield _Event("\n".join(data), "\n".join(error) if error else None)
            data, error = [], []
            continue
        if line.startswith(":"):  # a comment: keep-alives, ": OPENROUTER PROCESSING"
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "error":
            error.append(value)
    if data or error:
        yield _Event("\n".join(data), "\n".join(error) if error else None)


async def _lines(response: httpx.Response) -> AsyncIterator[str]:
    """The body's lines as the SSE standard cuts them: at CR, LF or CRLF and nowhere else.

    httpx's `aiter_lines` cuts at every line boundary `str.splitlines` knows, U+2028, U+2029
    and U+0085 among them, which JSON strings may hold raw (httpx-sse#34; httpx-sse's own reader
    has cut right since its pull 37, but it drops the `error` field, see `_events`). The cut is made in
    the bytes, before decoding, so a character split between two reads is whole again, and a
    CR at the end of one read waits for the next to say whether an LF follows it.
    """
    pending = b""
    first = True
    async for piece in response.aiter_bytes():
        pending += piece
        held = len(pending) - 1 if pending.endswith(b"\r") else len(pending)
        *lines, rest = _LINE_END.split(pending[:held])
        pending = rest + pending[held:]
        for line in lines:
            yield _decoded(line, first)
            first = False
    *lines, rest = _LINE_END.split(pending)
    for line in [*lines, rest] if rest else lines:
        yield _decoded(line, first)
        first = False


_LINE_END = re.compile(rb"\r\n|\r|\n")


def _decoded(line: bytes, first: bool) -> str:
    """One line's text: UTF-8, as the standard says, a bad byte read as U+FFFD (as httpx reads it, so
    stray bytes in text the narrator skips change nothing); a byte order mark opening the stream is dropped."""
    text = line.decode("utf-8", "replace")
    return text.removeprefix("\ufeff") if first else text


def _require_event_stream(response: httpx.Response, base_url: str) -> None:
    """A 200 answer that is not an event stream means --base-url points at something else."""
    content_type = response.headers.get("content-type", "").partition(";")[0].strip()
    if "text/event-stream" not in content_type:
        raise NarratorError(
            f"{base_url} did not answer with an event stream (content type "
            f"{content_type or 'none'!r}); check --base-url (it should end in /v1)."
        )


def _content_text(content: Any) -> str:
    """The text a delta's `content` carries: a string, or (Mistral's thinking models) a list of
    parts whose `text` parts are the answer and whose `thinking` parts are not."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        part["text"]
        for part in content
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
    )


def _is_json_object(raw: str) -> bool:
    """Whether the text reads as one JSON object (JSON nested deeper than the parser goes does not)."""
    try:
        return isinstance(json.loads(raw), dict)
    except (ValueError, RecursionError):
        return False
