"""The Anthropic narrator: Claude through the official `anthropic` SDK, streamed, the turn as a tool call.

Why it is built the way it is:

- The turn schema is the one tool, and `tool_choice` forces it (unless extended
  thinking is on, which the API allows only with `auto`). The tool input is
  passed on as it streams (`input_json_delta.partial_json`), so the engine can
  show the narrative word by word; the SDK's own parsed snapshot of the input
  drops an unfinished string, and its higher-level `messages.stream()` helper
  re-parses the whole input on every delta and raises on malformed JSON, which
  would hide the raw output from the engine's judge. So this narrator reads the
  SDK's raw event stream (`messages.create(stream=True)`) and never validates.
- Prompt caching: breakpoints on the system prompt (rules + world), on the last
  committed history message and on the player's current message, so a correction
  request re-reads almost everything from the cache.
- The SDK's own retries are off (`max_retries=0`): the engine retries transient
  faults itself, visibly, without spending the correction budget.
- Closing the iterator (the engine does so on cancel) leaves the `async with`
  around the stream, which closes the HTTP response at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import anthropic

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
from storyloom.engine.narrators._http_internals import frame_paced_transport, sdk_http_package
from storyloom.engine.narrators._shared import (
    MAX_CONTINUATIONS,
    Timeouts,
    connection_fault,
    context_window_error,
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
from storyloom.engine.turns import turn_json_schema

DEFAULT_MODEL = "claude-sonnet-5-5"
"""A current Claude model (claude-sonnet-4-5 reaches end of life on 2026-11-30)."""
KEY_VAR = "ANTHROPIC_API_KEY"
THINKING_BUDGET = 2048
"""Extra output tokens allowed per request for thinking when `--thinking` is on (the API's minimum is 1024)."""
_MANUAL_THINKING = re.compile(r"claude-(3-|(sonnet|opus|haiku)-4(-[0-5])?(-\d{8})?$)")
"""Models that only know manual thinking with a budget; later ones think adaptively."""
_CACHE = {"type": "ephemeral"}
_PROVIDER = "Anthropic"


_http = sdk_http_package(anthropic.DefaultAsyncHttpxClient)
"""The httpx package the SDK is built on (its own fork, httpx2, since 2.x; httpx before)."""


class AnthropicNarrator:
    """Claude as the game master.

    Args:
        api_key: the key (from `ANTHROPIC_API_KEY`); never stored anywhere else.
        model: a Claude model id.
        base_url: another endpoint speaking the Messages API (a proxy, a test server).
        max_tokens: the output limit per request; a turn cut off there is an `output.truncated` issue.
        thinking: extended thinking on (tool choice `auto`; a reply without the tool gets the
            engine's corrective request).
        timeouts: connect/read limits; a read timeout is how a stalled stream is noticed.
    """

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None,
        model: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 1024,
        thinking: bool = False,
        timeouts: Timeouts = Timeouts(),
    ):
        if not api_key:
            raise NarratorError(f"The anthropic narrator needs an API key: set {KEY_VAR}.")
        self.model = model or DEFAULT_MODEL
        self.max_tokens = max_tokens
        self.thinking = thinking
        self.timeouts = timeouts
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            http_client=anthropic.DefaultAsyncHttpxClient(transport=frame_paced_transport(_http.__name__)),
            timeout=anthropic.Timeout(
                connect=timeouts.connect, read=timeouts.read, write=timeouts.write, pool=timeouts.pool
            ),
        )
        self._where = str(self._client.base_url)

    def __repr__(self) -> str:
        return f"AnthropicNarrator(model={self.model!r}, base_url={self._where!r})"

    async def narrate(self, request: NarrationRequest) -> AsyncIterator[Chunk]:
        """Stream one answer; see the module docstring. Raises `NarratorError` subclasses on faults."""
        params = self.request_params(request)
        usage = {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0}
        for _ in range(MAX_CONTINUATIONS + 1):
            answer = _Answer()
            try:
                stream = await self._client.messages.create(**params, stream=True)
                async with stream:
                    async for event in _readable(stream):
                        try:
                            chunks = answer.feed(event)
                        except (AttributeError, KeyError, TypeError, ValueError):  # an event of the wrong shape
                            raise TransientNarratorError(f"{_PROVIDER} sent a malformed stream event") from None
                        for chunk in chunks:
                            yield chunk
            except (anthropic.APIStatusError, anthropic.APIConnectionError, _http.TransportError) as exc:
                raise self._fault(exc) from None
            _check_stop(answer, self.model)
            for key in usage:
                usage[key] += answer.usage[key]
            if answer.stop_reason != "pause_turn":
                break
            params = {**params, "messages": [*params["messages"], {"role": "assistant", "content": answer.blocks()}]}
        yield Finish(answer.stop_reason or "end", usage)

    def _fault(self, exc: Exception) -> NarratorError:
        """What a failed request means for the turn (the SDK's errors and the HTTP library's own)."""
        if isinstance(exc, anthropic.APIStatusError):
            kind, message = error_fields(exc.body)
            kind = getattr(exc, "type", None) or kind
            return status_fault(
                _PROVIDER,
                exc.status_code,
                kind,
                message or exc.message,
                exc.response.headers,
                key_var=KEY_VAR,
                model=self.model,
                secret=self._client.api_key,
            )
        if isinstance(exc, anthropic.APITimeoutError | _http.TimeoutException):
            return stall_fault(_PROVIDER, self.timeouts.read)
        cause = (exc.__cause__ or exc) if isinstance(exc, anthropic.APIConnectionError) else exc
        if isinstance(exc, anthropic.APIConnectionError) and isinstance(cause, _http.ConnectError):
            return TransientNarratorError(
                f"cannot connect to {_PROVIDER} at {self._where} ({cause or type(cause).__name__})"
            )
        return connection_fault(_PROVIDER, self._where, cause)

    def request_params(self, request: NarrationRequest) -> dict[str, Any]:
        """The Messages API request for a narration request (public so tests can read it)."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": [{"type": "text", "text": system_prompt(request.pack), "cache_control": _CACHE}],
            "tools": [{"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": turn_json_schema()}],
            "messages": self.messages(request),
        }
        if self.thinking:
            params["thinking"] = (
                {"type": "enabled", "budget_tokens": THINKING_BUDGET}
                if _MANUAL_THINKING.match(self.model)
                else {"type": "adaptive"}
            )
            params["max_tokens"] = self.max_tokens + THINKING_BUDGET
            params["tool_choice"] = {"type": "auto"}
        else:
            params["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        return params

    def messages(self, request: NarrationRequest) -> list[dict[str, Any]]:
        """The conversation: committed history, the player's command, and the latest rejection if any.

        Committed turns are tool calls answered by a tool result. With extended thinking,
        the API demands the thinking block of the last assistant tool call, which history
        does not keep, so there the turns are written as plain JSON text instead.
        """
        messages: list[dict[str, Any]] = []
        pending_result: dict[str, Any] | None = None
        for index, exchange in enumerate(request.history):
            command = _text(command_message(exchange.player_input))
            messages.append({"role": "user", "content": [*_opt(pending_result), command]})
            assistant, pending_result = self._committed(exchange, index)
            messages.append({"role": "assistant", "content": [assistant]})
        if messages:
            messages[-1]["content"][-1]["cache_control"] = _CACHE
        current = [*_opt(pending_result), _text(player_message(request.player_input, request.state, request.pack))]
        current[-1]["cache_control"] = _CACHE
        if request.is_regeneration:  # after the cached prefix: the turn's own request still hits the cache
            current.append(_text(regenerate_message(request)))
        messages.append({"role": "user", "content": current})
        if request.correction is not None:
            self._append_correction(messages, request)
        return messages

    def _committed(self, exchange: Exchange, index: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
        data = exchange.turn.to_json()
        if self.thinking:
            return _text(json.dumps(data, ensure_ascii=False)), None
        tool_id = f"toolu_turn{index + 1}"
        return (
            {"type": "tool_use", "id": tool_id, "name": TOOL_NAME, "input": data},
            {"type": "tool_result", "tool_use_id": tool_id, "content": "Committed."},
        )

    def _append_correction(self, messages: list[dict[str, Any]], request: NarrationRequest) -> None:
        rejection = request.correction
        assert rejection is not None
        message = correction_message(request)
        parsed = _json_object(rejection.raw)
        said = [_text(rejection.text)] if rejection.text.strip() else []
        if parsed is not None and not self.thinking:
            tool_id = f"toolu_rejected{request.attempt - 1}"
            call = {"type": "tool_use", "id": tool_id, "name": TOOL_NAME, "input": rejected_turn(parsed, request)}
            messages.append(
                {
                    "role": "assistant",
                    "content": [*said, call],
                }
            )
            messages.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": tool_id, "is_error": True, "content": message}],
                }
            )
            return
        if parsed is not None:  # as plain JSON text (with extended thinking): what it keeps is referenced too
            said.append(_text(json.dumps(rejected_turn(parsed, request), ensure_ascii=False)))
        elif rejection.raw and rejection.raw.strip():
            said.append(_text(rejection.raw))
        if said:
            messages.append({"role": "assistant", "content": said})
            messages.append({"role": "user", "content": [_text(message)]})
        else:  # nothing was said at all (a thinking-only answer): the correction joins the command
            messages[-1]["content"].append(_text(message))


def _check_stop(answer: _Answer, model: str) -> None:
    """An answer that ended broken, refused, or past the context window ends the turn."""
    if answer.stop_reason is None:  # the body ended without message_delta: a broken stream
        raise TransientNarratorError(f"{_PROVIDER}'s answer stopped before it was complete")
    if answer.stop_reason == "refusal":
        raise NarratorRefusal(answer.refusal_message())
    if answer.stop_reason == "model_context_window_exceeded":
        raise context_window_error(model)


class _Answer:
    """One streamed response, read event by event from the SDK's raw stream."""

    def __init__(self) -> None:
        self.stop_reason: str | None = None
        self.stop_details: Any = None
        self.usage = {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0}
        self._input = {"input_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._turn_block: int | None = None

    def feed(self, event: Any) -> list[Chunk]:
        """Take one stream event; return the chunks it carries for the engine."""
        kind = event.type
        if kind == "message_start":
            self._read_usage(event.message.usage)
        elif kind == "content_block_start":
            block = event.content_block.to_dict()
            self._blocks[event.index] = block
            if block.get("type") == "tool_use" and block.get("name") == TOOL_NAME and self._turn_block is None:
                self._turn_block = event.index
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason
            self.stop_details = getattr(event.delta, "stop_details", None)
            self._read_usage(event.usage)
        return []

    def _delta(self, index: int, delta: Any) -> list[Chunk]:
        block = self._blocks.get(index, {})
        if delta.type == "text_delta":
            block["text"] = block.get("text", "") + delta.text
            return [TextDelta(delta.text)] if delta.text else []
        if delta.type == "input_json_delta":
            self._json.setdefault(index, []).append(delta.partial_json)
            if index == self._turn_block and delta.partial_json:
                return [StructuredDelta(delta.partial_json)]
        elif delta.type == "citations_delta":  # the sources a text block cites (after a web search)
            block["citations"] = [*(block.get("citations") or []), delta.citation.to_dict()]
        elif delta.type == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.thinking
        elif delta.type == "signature_delta":
            block["signature"] = delta.signature
        return []

    def _read_usage(self, usage: Any) -> None:
        """Usage counts are running totals: a later non-null value replaces an earlier one."""
        for key in self._input:
            value = getattr(usage, key, None)
            if value is not None:
                self._input[key] = value
        output = getattr(usage, "output_tokens", None)
        if output is not None:
            self.usage["output_tokens"] = output
        self.usage["input_tokens"] = sum(self._input.values())
        self.usage["cached_tokens"] = self._input["cache_read_input_tokens"]

    def refusal_message(self) -> str:
        explanation = getattr(self.stop_details, "explanation", None) if self.stop_details else None
        detail = f" ({explanation})" if isinstance(explanation, str) and explanation else ""
        return f"The model declined to write this turn{detail}. Try a different command."

    def blocks(self) -> list[dict[str, Any]]:
        """The content so far, to send back when a paused answer is continued.

        The API wants the paused answer back as it was sent, so every block whose input
        streamed as `input_json_delta` pieces (`tool_use`, and the server's own tools'
        `server_tool_use`, whose start carries `input: {}`) goes back with its input whole,
        and a text block with the citations its `citations_delta` events gave it.
        """
        blocks = []
        for index in sorted(self._blocks):
            block = dict(self._blocks[index])
            pieces = "".join(self._json.get(index, []))
            if pieces.strip():
                block["input"] = _json_object(pieces) or block.get("input") or {}
            if block.get("type") == "text" and not block.get("text"):
                continue
            blocks.append(block)
        return blocks


async def _readable(stream: Any) -> AsyncIterator[Any]:
    """The stream's events, with garbled ones (bytes that are not UTF-8, an event without a type)
    turned into a transient fault the engine retries, instead of an exception nobody expects."""
    events = aiter(stream)
    while True:
        try:
            event = await anext(events)
        except StopAsyncIteration:
            return
        except (AttributeError, KeyError, TypeError, ValueError, RecursionError):
            raise TransientNarratorError(f"{_PROVIDER} sent a malformed stream event") from None
        if not isinstance(getattr(event, "type", None), str):
            raise TransientNarratorError(f"{_PROVIDER} sent a malformed stream event")
        yield event


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _opt(block: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [block] if block is not None else []


def _json_object(raw: str | None) -> dict[str, Any] | None:
    """The raw output as a JSON object, or None if it is not one (cut off, malformed, an array,
    nested deeper than the parser goes)."""
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
