"""Frame geometry of a replayed correction: a replay shows the same correcting status, the same
still message and the same prose swap (or none) as the live session did, frame state by frame state."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.narration import Chunk, NarrationRequest
from storyloom.saves.format import SaveHeader
from storyloom.saves.reader import load_save
from storyloom.saves.replay import replay_plan
from storyloom.saves.writer import Journal
from storyloom.tui.app import StoryloomApp
from storyloom.tui.testing.frames import FrameRecorder, assert_no_shift
from storyloom.tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from storyloom.tui.testing.pilot import until
from tests.test_frames import transcript_height
from tests.test_saves_kit import shore_pack_file

SIZE = (100, 30)
TAKE_BOTH = [
    {"op": "replace", "path": "/items/lamp", "value": "player"},
    {"op": "replace", "path": "/items/boulder", "value": "player"},
]
TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
FIRST = "You lift the brass lamp from the rocks. Its glass is cold and crusted with salt."
CHANGED = "You lift the brass lamp from the rocks. The boulder beside it does not move, however hard you push."
REGIONS = {"message": "#turn-1", "input": "#command", "side": "#side-panel"}
TEXTS = {"prose": "#turn-1 Prose", "status": "#turn-1 StatusRow"}


class _HeldCorrections:
    """Wraps a narrator so every correction waits for a gate, as the live test's narrator did."""

    def __init__(self, inner: Any, gate: asyncio.Event):
        self.inner, self.gate = inner, gate
        self.name, self.model = inner.name, inner.model

    async def narrate(self, request: NarrationRequest) -> AsyncIterator[Chunk]:
        if request.is_correction:
            await self.gate.wait()
        async for chunk in self.inner.narrate(request):
            yield chunk


async def _play(
    frame_recorder: Any, session: Session, gate: asyncio.Event, journal: Journal | None = None
) -> FrameRecorder:
    """Type "take lamp", hold the correction while the status shows, then let it finish."""
    holder: list[FrameRecorder] = []

    def on_event(event: Any) -> None:
        if journal is not None:
            journal.record(event)
        holder[0].mark(event.event)

    app = StoryloomApp(session, on_event=on_event, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        holder.append(frame_recorder(app, regions=REGIONS, screen=True, texts={**TEXTS, "content": transcript_height}))
        holder[0].mark("key")
        await pilot.press(*"take lamp", "enter")
        await until(pilot, lambda: "correction_started" in holder[0].all_marks())
        await pilot.pause()
        await pilot.pause()
        gate.set()
        await until(pilot, lambda: not app.game.running)
        await pilot.pause(1.0)  # a second after the turn ends: nothing may move late either
        holder[0].stop()
    return holder[0]


@pytest.mark.parametrize("correction", [None, CHANGED], ids=["prose-kept", "prose-changed"])
async def test_a_replayed_correction_paints_the_same_frames_as_the_live_one(
    tmp_path: Path, frame_recorder: Any, correction: str | None
) -> None:
    pack, pack_path = shore_pack_file(tmp_path)
    gate = asyncio.Event()
    narrator = GatedNarrator(
        [GatedReply(turn_text(FIRST, TAKE_BOTH)), GatedReply(turn_text(correction, TAKE_LAMP), before=gate)]
    )
    path = tmp_path / "live.jsonl"
    with Journal.create(path, SaveHeader.for_session(pack, narrator, source=str(pack_path))) as journal:
        live = await _play(frame_recorder, Session(pack, narrator), gate, journal)

    plan = replay_plan(load_save(path))
    replay_gate = asyncio.Event()
    replayed = await _play(
        frame_recorder, Session(plan.pack, _HeldCorrections(plan.narrator, replay_gate)), replay_gate
    )

    live_window = live.sequences(live.between("correction_started", before=False))
    replay_window = replayed.sequences(replayed.between("correction_started", before=False))
    assert replay_window == live_window
    for recording in (live, replayed):  # the whole turn, from the key press on, live and replayed
        assert_no_shift(
            recording.since("key"),
            ["Grey water", "› take lamp", "You lift the brass lamp", "correcting ("],
            content="content",
            swap="prose",
            fixed=("input", "side"),
            settled=lambda frame: (frame.texts["status"] or "").startswith("correcting"),
        )
    said = "corrected" if correction is not None else ""  # a correction that changed the prose says so
    assert live_window["texts.status"] == ["correcting (1/2)…", said]
    assert len(live_window["regions.message"]) == 1  # the message never moved while it was corrected
    assert replayed.all_marks() == live.all_marks()
