"""What the real narrators share: reading retry hints, naming faults, and the timeouts they use.

Both providers fail in the same few ways (overloaded, rate limited, connection lost,
stream stalled, key rejected, conversation too long); the words the player reads for
each live here so they stay the same whichever model is playing.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from storyloom.engine.narration import NarratorError, TransientNarratorError

RETRY_AFTER_MAX = 120.0
"""Seconds: a server asking for a longer wait than this is treated as a plain failure to retry later."""
TRANSIENT_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
MAX_CONTINUATIONS = 3
"""How many times a paused answer (`pause_turn`) is continued before it counts as finished."""


@dataclass(frozen=True)
class Timeouts:
    """How long to wait for a server, in seconds.

    `read` is the longest silence tolerated in the middle of a stream: a stalled
    stream is a transient fault, retried like an overloaded server.
    """

    connect: float = 10.0
    read: float = 60.0
    write: float = 30.0
    pool: float = 10.0


def retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """The wait a server asked for, from `retry-after-ms` or `retry-after` (seconds or an HTTP date).

    Returns None when the server named no wait (the engine then backs off on its own),
    or when the wait is unreadable or absurdly long.
    """
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return _bounded(float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return _bounded(float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return _bounded(when.timestamp() - (time.time() if now is None else now))


def _bounded(seconds: float) -> float | None:
    if seconds != seconds or seconds > RETRY_AFTER_MAX:  # NaN or too long
        return None
    return max(0.0, seconds)


def status_fault(
    provider: str,
    status: int,
    error_type: str | None,
    message: str | None,
    headers: Mapping[str, str] | None,
    *,
    key_var: str | None,
    model: str,
    secret: str | None = None,
) -> NarratorError:
    """The narrator error for an HTTP error answer (or an error event in a stream).

    Args:
        provider: "Anthropic", or the OpenAI-compatible server's address, for the message.
        error_type: the provider's error type or code ("overloaded_error", "context_length_exceeded").
        key_var: the environment variable that holds the key, named when the key is refused.
        secret: the API key, cut out of the server's message should the server echo it back.
    """
    detail = _clean(redact(message or "", secret))
    kind = (error_type or "").lower()
    if status == 401 or kind in ("authentication_error", "invalid_api_key"):
        where = f"set {key_var} to a valid key" if key_var else "check the server's API key"
        return NarratorError(f"{provider} rejected the API key: {where}. ({detail or 'unauthorized'})")
    if status == 403 or kind == "permission_error":
        return NarratorError(
            f"{provider} refused access with this key ({detail or 'forbidden'}); "
            f"check the key's permissions or set {key_var or 'the key'} to another key."
        )
    if context_exceeded(kind, detail):
        return context_window_error(model)
    if kind in ("insufficient_quota", "billing_error"):
        return NarratorError(
            f"{provider} says the account is out of credit ({detail or kind}); add credit or use another key."
        )
    if status == 404 or kind in ("not_found_error", "model_not_found"):
        return NarratorError(
            f"{provider} does not know model {model!r} ({detail or 'not found'}); choose another with --model."
        )
    if kind in ("overloaded_error", "rate_limit_error", "api_error", "server_error") or status in TRANSIENT_STATUSES:
        reason = {429: "rate limited", 529: "overloaded", 503: "unavailable"}.get(status)
        if kind == "overloaded_error":
            reason = "overloaded"
        elif kind == "rate_limit_error":
            reason = "rate limited"
        return TransientNarratorError(
            f"{provider} is {reason or 'having trouble'} ({detail or f'HTTP {status}'})",
            retry_after=retry_after(headers),
        )
    if status == 413 or kind == "request_too_large":
        return context_window_error(model)
    return NarratorError(f"{provider} refused the request: {detail or f'HTTP {status}'}")


def context_exceeded(kind: str, detail: str) -> bool:
    """Whether an error says the conversation no longer fits the model's context window."""
    text = detail.lower()
    return (
        kind in ("context_length_exceeded", "model_context_window_exceeded")
        or "prompt is too long" in text
        or "context length" in text
        or "context window" in text
        or "maximum context" in text
        or "exceeds the available context size" in text
    )


def context_window_error(model: str) -> NarratorError:
    """The story no longer fits the model: retrying or correcting cannot help."""
    return NarratorError(
        f"The story so far no longer fits {model!r}'s context window. Summarise it into a "
        f"shorter story to continue, or play on with a model that has a larger context "
        f"window (--model)."
    )


def connection_fault(provider: str, where: str, exc: BaseException) -> TransientNarratorError:
    """A refused, reset or dropped connection: worth retrying; say where we tried to connect."""
    name = type(exc).__name__
    return TransientNarratorError(
        f"lost the connection to {provider} at {where} ({name}: {_clean(str(exc))})"
        if str(exc)
        else f"lost the connection to {provider} at {where} ({name})"
    )


def stall_fault(provider: str, seconds: float) -> TransientNarratorError:
    """No data for longer than the read timeout, mid-stream or before it began."""
    return TransientNarratorError(f"{provider} stopped sending (no data for {seconds:g} s)")


def error_fields(body: Any) -> tuple[str | None, str | None]:
    """(type or code, message) from a provider's error body, whatever its exact shape.

    Anthropic: {"type": "error", "error": {"type", "message"}}; OpenAI: {"error": {"message",
    "type", "code"}}; some local servers: {"error": "text"} or {"message": ...}.
    """
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested deeper than the parser goes
            return None, _clean(body.decode("utf-8", "replace") if isinstance(body, bytes) else body)
    if not isinstance(body, dict):
        return None, None
    error = body.get("error", body)
    if isinstance(error, str):
        return None, _clean(error)
    if not isinstance(error, dict):
        return None, None
    kind = error.get("code") if isinstance(error.get("code"), str) else None
    kind = kind or (error.get("type") if isinstance(error.get("type"), str) else None)
    message = error.get("message")
    return kind, _clean(message) if isinstance(message, str) else None


def redact(text: str, secret: str | None) -> str:
    """The text with the key (or any long piece of it) replaced, so an echoed key is never shown."""
    if not secret or len(secret) < 8:
        return text
    text = text.replace(secret, "***")
    for size in (16, 12, 8):  # a server may echo a prefix or a suffix of the key
        for piece in {secret[:size], secret[-size:]}:
            text = text.replace(piece, "***")
    return text


def _clean(text: str | None, limit: int = 300) -> str:
    """A server's words, shortened and stripped of control characters before a player sees them."""
    if not text:
        return ""
    text = "".join(ch if ch.isprintable() else " " for ch in str(text)).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
