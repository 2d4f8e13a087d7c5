"""A narrator for UI tests that streams canned replies and can pause at exact points.

Snapshot and frame tests must be deterministic: instead of timing, a reply can
wait on an `asyncio.Event` before it starts (so a correction can be held
"in progress" while the test looks at the screen) or after part of its text has
streamed (so a turn can be held mid-stream).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from storyloom.engine.narration import Chunk, Finish, NarrationRequest, StructuredDelta, TextDelta


def turn_text(
    narrative: str | None, patch: list[dict[str, Any]] | None = None, suggestions: list[str] | None = None
) -> str:
    """A turn as a narrator would write it (JSON text); `narrative=None` keeps the shown prose."""
    data: dict[str, Any] = {}
    if narrative is not None:
        data["narrative"] = narrative
    data["state_patch"] = patch or []
    if suggestions:
        data["suggestions"] = suggestions
    return json.dumps(data)


@dataclass
class GatedReply:
    """One canned answer.

    Attributes:
        text: the structured output (JSON text).
        before: if set, the reply waits for it before writing anything.
        pause_at: with `pause`, how many characters to stream before waiting.
        pause: if set, the reply waits for it after `pause_at` characters.
        error: raised once the text is written (e.g. a transient narrator fault).
        plain: write the text as plain text, not as the structured output (a model that
            answered without calling the tool: `output.missing`).
    """

    text: str
    before: asyncio.Event | None = None
    pause_at: int = 0
    pause: asyncio.Event | None = None
    error: BaseException | None = None
    plain: bool = False
    waiting: bool = False
    """True while the reply is held by one of its gates (tests wait for this)."""


@dataclass
class GatedNarrator:
    """Plays back `GatedReply`s in order, in chunks of `chunk` characters, `delay` seconds apart
    (0: only yielding to the event loop; a few milliseconds lets frames paint mid-stream)."""

    replies: list[GatedReply]
    chunk: int = 8
    delay: float = 0.0
    name: str = "scripted"
    model: str = "gated-1"
    requests: list[NarrationRequest] = field(default_factory=list)

    async def narrate(self, request: NarrationRequest) -> AsyncIterator[Chunk]:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if reply.before is not None:
            await _hold(reply, reply.before)
        for start in range(0, len(reply.text), self.chunk):
            if reply.pause is not None and start >= reply.pause_at and not reply.pause.is_set():
                await _hold(reply, reply.pause)
            piece = reply.text[start : start + self.chunk]
            yield TextDelta(piece) if reply.plain else StructuredDelta(piece)
            await asyncio.sleep(self.delay)
        if reply.error is not None:
            raise reply.error
        yield Finish("end", {"input_tokens": 10, "output_tokens": 5, "cached_tokens": 0})


async def _hold(reply: GatedReply, gate: asyncio.Event) -> None:
    reply.waiting = True
    try:
        await gate.wait()
    finally:
        reply.waiting = False
