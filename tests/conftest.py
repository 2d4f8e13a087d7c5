"""Shared fixtures: a small story and a scripted narrator that streams canned replies."""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.narration import Finish, NarrationRequest, NarratorError, StructuredDelta, TextDelta
from storyloom.engine.packs import parse_pack

SHORE_PACK = """
id = "shore"
title = "The Shore"
intro = "Grey water, black rocks."
style = "second person, present tense"
start = "shore"

[rooms.shore]
name = "Rocky Shore"
description = "Waves break on black rocks."
exits = { north = "path" }

[rooms.path]
name = "Cliff Path"
description = "A narrow path climbs the cliff."
exits = { south = "shore", up = "tower" }
gates = { up = "door_open" }

[rooms.tower]
name = "Lamp Room"
description = "The great lens waits, dark."
exits = { down = "path" }

[items.lamp]
name = "brass lamp"
aliases = ["lamp", "lantern"]
at = "shore"

[items.boulder]
name = "boulder"
at = "shore"
portable = false

[items.key]
name = "iron key"
aliases = ["key"]
at = "path"

[stats.health]
initial = 10
min = 0
max = 10

[flags]
door_open = false

[endings.lit]
title = "Light"
text = "The lamp burns over the sea."
when = { location = "tower", items = { lamp = "player" } }

[free]                          # no actions: the narrator opens the door and spends health as it likes
flags = ["door_open"]
stats = ["health"]
"""


@pytest.fixture(autouse=True)
def _own_temp_folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test has its own temp folder: a save that stops taking writes is rescued there, and
    `storyloom saves` lists the rescues it finds there, so no test sees another's rescues (nor leaves
    any in the machine's /tmp)."""
    folder = tmp_path_factory.mktemp("tmp")
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder / "cache"))  # resume records: each test its own


@pytest.fixture
def pack():
    return parse_pack(SHORE_PACK, "shore.toml")


def turn_json(
    narrative: str | None = "You look around.", patch: list[dict[str, Any]] | None = None, **extra: Any
) -> str:
    data: dict[str, Any] = {}
    if narrative is not None:
        data["narrative"] = narrative
    data["state_patch"] = patch or []
    data.update(extra)
    return json.dumps(data)


@dataclass
class Reply:
    """One scripted model answer: structured JSON text and/or plain text."""

    structured: str | None = None
    text: str = ""
    stop_reason: str = "end"
    raise_after: BaseException | None = None
    hang: bool = False


@dataclass
class ScriptedNarrator:
    """A narrator that plays back a list of replies, each streamed in small chunks."""

    replies: list[Reply]
    chunk: int = 7
    name: str = "scripted"
    model: str = "script-1"
    requests: list[NarrationRequest] = field(default_factory=list)
    closed: int = 0

    async def narrate(self, request: NarrationRequest) -> AsyncIterator[Any]:
        import asyncio

        self.requests.append(request)
        if not self.replies:
            raise NarratorError("the script has no more replies")
        reply = self.replies.pop(0)
        try:
            if reply.text:
                yield TextDelta(reply.text)
            if reply.structured is not None:
                for i in range(0, len(reply.structured), self.chunk):
                    yield StructuredDelta(reply.structured[i : i + self.chunk])
                    await asyncio.sleep(0)
            if reply.raise_after is not None:
                raise reply.raise_after
            if reply.hang:
                await asyncio.Event().wait()
            yield Finish(reply.stop_reason, {"input_tokens": 10, "output_tokens": 5, "cached_tokens": 0})
        finally:
            self.closed += 1


def structured(
    narrative: str | None = "You look around.", patch: list[dict[str, Any]] | None = None, **extra: Any
) -> Reply:
    return Reply(structured=turn_json(narrative, patch, **extra))


@pytest.fixture
def script():
    def make(pack, *replies: Reply, budget: int = 2) -> tuple[Session, ScriptedNarrator]:
        narrator = ScriptedNarrator(list(replies))

        async def no_sleep(_: float) -> None:
            return None

        return Session(pack, narrator, budget=budget, sleep=no_sleep), narrator

    return make


async def collect(events) -> list:
    return [e async for e in events]


def event_names(events) -> list[str]:
    return [e.event for e in events]


def prose_on_screen(events) -> str:
    """What the turn message shows after these events: streamed deltas, then any swap."""
    text = ""
    for e in events:
        if e.event == "prose_delta":
            text += e.text
        elif e.event == "prose_replaced" and e.changed:
            text = e.text
    return text
