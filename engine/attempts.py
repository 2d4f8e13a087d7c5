"""One attempt of a turn, between the narrator and the judge: what it delivered (`_Attempt`), the
prose readable from its partial JSON as it streams (`_ProseStream`), what the screen shows once it
is judged, the record of it, and the correction request that follows a rejected one.

These are `engine/lifecycle.Session._run`'s own steps, kept apart so the lifecycle reads as the
turn's sequence; nothing else uses them: reading one attempt from the narrator (`_read_attempt`,
transient faults retried), judging it (`_judged`), and what follows.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import pydantic_core

from storyloom.engine.committed import PendingTurn
from storyloom.engine.events import AttemptFinished, Event, NarratorRetrying, ProseDelta, ProseReplaced
from storyloom.engine.narration import (
    Finish,
    NarrationRequest,
    Narrator,
    NarratorError,
    Rejection,
    StructuredDelta,
    TextDelta,
    TransientNarratorError,
)
from storyloom.engine.packs import StoryPack
from storyloom.engine.rules import KEEPS_EVERY_FIELD, OUTPUT_MAX_CHARS, Verdict, judge, parse_output
from storyloom.engine.streaming import Expired, Reader
from storyloom.engine.turns import Issue, closed_narrative, kept_fields

OUTPUT_LIMIT = "output_limit"
"""The stop reason the engine records when it stops reading an answer over `OUTPUT_MAX_CHARS`."""
REJECTED_ECHO_MAX_CHARS = 4_000
"""An answer cut off at the output limit goes back to the model in a correction only this far (it
would otherwise cost some 50,000 tokens, more than a small local model's whole context)."""
PROSE_STREAM_MAX_CHARS = 32_000
"""Partial JSON is re-parsed per chunk only this far; prose written later shows when the turn is judged."""

MAX_TRANSIENT_RETRIES = 4
"""How many times an attempt is sent again after a transient fault (\"narrator busy\") before the turn fails."""


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


def _next_correction(state: _TurnState, attempt: _Attempt, verdict: Verdict, rules: int) -> _TurnState:
    """The turn asking the narrator to correct its rejected attempt.

    The request carries only this latest rejection, and the fields of it a correction keeps if it
    leaves them out (`kept_fields`: every field valid on its own, laid over what was kept before),
    so it is asked for only what was wrong. Under rule sets before 4 only the narrative is kept:
    the rejected turn's own, else the prose on screen if the first attempt finished writing it,
    else what the previous correction could keep.
    """
    request = state.request
    kept: Mapping[str, Any]
    if rules >= KEEPS_EVERY_FIELD:
        data = parse_output(attempt.raw)[0]
        kept = kept_fields(data, attempt.raw, request.kept, first=not request.is_correction)
    else:
        narrative: str | None
        if verdict.turn is not None:
            narrative = verdict.turn.narrative
        elif not request.is_correction:
            narrative = _complete_narrative(attempt.raw, state.shown)
        else:
            narrative = request.kept_narrative
        kept = {"narrative": narrative} if narrative is not None else {}
    raw, text = attempt.raw, attempt.text
    if attempt.finish.stop_reason == OUTPUT_LIMIT:  # show the model its loop, not 200,000 characters
        raw, text = _head(raw), _head(text) or ""
    rejection = Rejection(raw=raw, text=text, issues=verdict.issues)
    return replace(
        state, request=replace(request, attempt=request.attempt + 1, correction=rejection, kept=MappingProxyType(kept))
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
    if not shown:
        return None
    narrative = closed_narrative(raw)
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


async def _read_attempt(
    narrator: Narrator,
    request: NarrationRequest,
    cancel: asyncio.Future[None],
    *,
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[Any]],
    timeout: float,
) -> AsyncIterator[Event | _Attempt]:
    """One model attempt, with transient faults retried; yields prose events, then the `_Attempt`.

    Only a first attempt streams prose; a correction is read whole and judged.
    """
    stream_prose = not request.is_correction
    for retry in range(MAX_TRANSIENT_RETRIES + 1):
        started = clock()
        structured: list[str] = []
        text: list[str] = []
        deltas: list[tuple[int, str, str]] = []
        finish = Finish()
        prose = _ProseStream()
        stream = aiter(narrator.narrate(request))
        size = 0
        try:
            async with Reader(cancel, timeout) as reader:
                while (chunk := await reader.next(stream)) is not None:
                    if isinstance(chunk, Finish):
                        finish = _sound_finish(chunk)
                        continue
                    written = _encodable(chunk.text)
                    size += len(written)
                    if size > OUTPUT_MAX_CHARS:  # never read an endless answer into memory
                        finish = Finish(OUTPUT_LIMIT, dict(finish.usage))
                        break
                    at = chunk.at_ms if chunk.at_ms is not None else int((clock() - started) * 1000)
                    if isinstance(chunk, StructuredDelta):
                        structured.append(written)
                        deltas.append((at, "s", written))
                        if stream_prose and (new := prose.feed(written)):
                            yield ProseDelta(turn=request.turn, text=new)
                    elif isinstance(chunk, TextDelta):
                        text.append(written)
                        deltas.append((at, "t", written))
        except Expired:
            raise NarratorError(
                f"The narrator was still writing after {timeout:g} s; "
                f"the turn was stopped. Retry, or try another model."
            ) from None
        except TransientNarratorError as exc:
            if retry == MAX_TRANSIENT_RETRIES:
                raise
            delay = exc.retry_after if exc.retry_after is not None else float(2**retry)
            if stream_prose and prose.shown:
                yield ProseReplaced(turn=request.turn, changed=True, text="")
            yield NarratorRetrying(turn=request.turn, attempt=request.attempt, delay=delay, reason=str(exc))
            async with Reader(cancel, float("inf")) as pause:
                await pause.wait(sleep(delay))
            continue
        finally:
            with suppress(Exception):
                await stream.aclose()  # type: ignore[attr-defined]
        raw = "".join(structured) if structured else None
        yield _Attempt(raw, "".join(text), finish, tuple(deltas), prose.shown)
        return


def _judged(attempt: _Attempt, request: NarrationRequest, pack: StoryPack, rules: int) -> Verdict:
    """The judge's verdict on an attempt, against the committed state; an answer cut off (by the
    model's token limit or by the engine's own) is judged as that, whatever part of it parses."""
    verdict = judge(attempt.raw, request.state, pack, kept=request.kept, rules=rules)
    if attempt.finish.stop_reason == "max_tokens" and verdict.turn is None:
        cut = Issue(
            "",
            "output.truncated",
            "The turn was cut off at the output token limit before it was "
            "complete. Write a shorter turn: fewer paragraphs, same patch.",
        )
        verdict = Verdict(None, None, (cut,))
    if attempt.finish.stop_reason == OUTPUT_LIMIT:
        too_large = Issue(
            "",
            "output.too_large",
            f"The answer went on past {OUTPUT_MAX_CHARS} characters "
            f"and was cut off unread; a turn is far shorter (narrative "
            f"at most 4000 characters).",
        )
        verdict = Verdict(None, None, (too_large,))
    return verdict
