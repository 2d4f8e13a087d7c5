"""One attempt of a turn, between the narrator and the judge: what it delivered (`_Attempt`), the
prose readable from its partial JSON as it streams (`_ProseStream`), what the screen shows once it
is judged, the record of it, and the correction request that follows a rejected one.

These are `engine/lifecycle.Session._run`'s own steps, kept apart so the lifecycle reads as the
turn's sequence; nothing else uses them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import pydantic_core

from storyloom.engine.committed import PendingTurn
from storyloom.engine.events import AttemptFinished, Event, ProseDelta, ProseReplaced
from storyloom.engine.narration import Finish, NarrationRequest, Rejection
from storyloom.engine.rules import Verdict

OUTPUT_LIMIT = "output_limit"
"""The stop reason the engine records when it stops reading an answer over `OUTPUT_MAX_CHARS`."""
REJECTED_ECHO_MAX_CHARS = 4_000
"""An answer cut off at the output limit goes back to the model in a correction only this far (it
would otherwise cost some 50,000 tokens, more than a small local model's whole context)."""
PROSE_STREAM_MAX_CHARS = 32_000
"""Partial JSON is re-parsed per chunk only this far; prose written later shows when the turn is judged."""


@dataclass(frozen=True)
class _Attempt:
    """What one attempt delivered, read whole: the structured output, plain text, how it stopped."""

    raw: str | None
    text: str
    finish: Finish
    deltas: tuple[tuple[int, str, str], ...]
    shown: str
    """Prose streamed to the screen during this attempt (only a first attempt streams any)."""


@dataclass(frozen=True)
class _TurnState:
    """A turn in flight, between the steps of `Session._run`: what the narrator is asked now and
    what the player sees. Each step reads it and returns a new one; nothing else carries over."""

    request: NarrationRequest
    """The request of the attempt being made: the first, or a correction of the one before."""
    retry: int
    """How many times the player has retried this turn (0 for a new one)."""
    shown: str = ""
    """The prose on screen: what the first attempt streamed, then its judged narrative."""

    @property
    def pending(self) -> PendingTurn | None:
        """This turn as the player may retry it once it fails or is cancelled (a failed or cancelled
        other version is not pending: the chosen one stands, and the player regenerates again)."""
        if self.request.is_regeneration:
            return None
        return PendingTurn(self.request.turn, self.request.player_input, self.retry)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    """Text a narrator decoded from JSON may hold lone surrogates (an escape such as \\ud800), which
    no UTF-8 file or terminal can take: each becomes U+FFFD before the text goes anywhere."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _sound_finish(finish: Finish) -> Finish:
    """A narrator's finish with a short text stop reason and whole-number usage (servers send anything)."""
    reason = finish.stop_reason if isinstance(finish.stop_reason, str) else "unknown"
    usage = finish.usage if isinstance(finish.usage, dict) else {}
    counts = {str(k): v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 10**15}
    return Finish(_encodable(reason)[:64], counts)


def _attempt_finished(request: NarrationRequest, attempt: _Attempt, verdict: Verdict) -> AttemptFinished:
    """The record of one attempt: everything the narrator sent, and what the judge found."""
    return AttemptFinished(
        turn=request.turn,
        attempt=request.attempt,
        kind="correction" if request.is_correction else "turn",
        raw=attempt.raw,
        text=attempt.text,
        stop_reason=attempt.finish.stop_reason,
        usage=dict(attempt.finish.usage),
        deltas=attempt.deltas,
        issues=verdict.issues,
    )


def _show_judged(state: _TurnState, attempt: _Attempt, verdict: Verdict) -> tuple[_TurnState, tuple[Event, ...]]:
    """The prose on screen once an attempt is judged, and the events that bring the screen there.

    Only a first attempt is on screen: what it streamed stays, and a narrative written past
    the stream (or differently from it) shows now. A correction shows only if it commits.
    """
    if state.request.is_correction:
        return state, ()
    shown = attempt.shown
    events: tuple[Event, ...] = ()
    if verdict.turn is not None:
        narrative = verdict.turn.narrative
        if not narrative.startswith(shown):
            events = (ProseReplaced(turn=state.request.turn, changed=True, text=narrative),)
        elif narrative != shown:
            events = (ProseDelta(turn=state.request.turn, text=narrative[len(shown) :]),)
        shown = narrative
    return replace(state, shown=shown), events


def _next_correction(state: _TurnState, attempt: _Attempt, verdict: Verdict) -> _TurnState:
    """The turn asking the narrator to correct its rejected attempt.

    The request carries only this latest rejection, and the narrative a correction may keep:
    the rejected turn's own, else the prose on screen if the first attempt finished writing
    it, else what the previous correction could keep.
    """
    request = state.request
    kept: str | None
    if verdict.turn is not None:
        kept = verdict.turn.narrative
    elif not request.is_correction:
        kept = _complete_narrative(attempt.raw, state.shown)
    else:
        kept = request.kept_narrative
    raw, text = attempt.raw, attempt.text
    if attempt.finish.stop_reason == OUTPUT_LIMIT:  # show the model its loop, not 200,000 characters
        raw, text = _head(raw), _head(text) or ""
    rejection = Rejection(raw=raw, text=text, issues=verdict.issues)
    return replace(
        state, request=replace(request, attempt=request.attempt + 1, correction=rejection, kept_narrative=kept)
    )


def _head(text: str | None) -> str | None:
    if text is None or len(text) <= REJECTED_ECHO_MAX_CHARS:
        return text
    return text[:REJECTED_ECHO_MAX_CHARS] + f"… [{len(text) - REJECTED_ECHO_MAX_CHARS} more characters cut]"


def _complete_narrative(raw: str | None, shown: str) -> str | None:
    """The prose on screen, if the rejected output finished writing it (its string closed).

    A truncated or otherwise broken output may still have delivered its whole
    narrative; a correction may then keep it rather than write it again.
    """
    if not raw or not shown:
        return None
    try:
        partial = pydantic_core.from_json(raw, allow_partial=True)
    except ValueError:
        return None
    narrative = partial.get("narrative") if isinstance(partial, dict) else None
    return shown if narrative == shown else None


class _ProseStream:
    """Extracts the narrative from partial JSON as it grows, append-only."""

    def __init__(self) -> None:
        self._buffer: list[str] = []
        self._size = 0
        self.shown = ""

    def feed(self, chunk: str) -> str:
        """Add a chunk of JSON text; return the prose newly readable, if any.

        Each chunk re-parses the whole buffer, so past `PROSE_STREAM_MAX_CHARS`
        this stops (a turn is far shorter) and the cost of an answer stays linear.
        """
        self._size += len(chunk)
        if self._size > PROSE_STREAM_MAX_CHARS:
            return ""
        self._buffer.append(chunk)
        try:
            partial = pydantic_core.from_json("".join(self._buffer), allow_partial="trailing-strings")
        except ValueError:
            return ""
        narrative = partial.get("narrative") if isinstance(partial, dict) else None
        if not isinstance(narrative, str) or not narrative.startswith(self.shown) or narrative == self.shown:
            return ""
        new = narrative[len(self.shown) :]
        self.shown = narrative
        return new
