"""Frame geometry while the player asks for other versions of the latest turn, and browses them.

Recorded from the key press (ctrl+g, or left/right on the focused message) to a second after
things settle, in a full bottom-anchored transcript, at four terminal sizes, and checked frame by
frame with the same rules as a turn (`tests/test_frames.py`): another version streams into the
same message, so nothing above it moves down; lines move up only by the rows the story grew; once
a status shows (correcting, a lost version, `‹ n/N ›` while browsing) nothing moves except in the
frame of a swap to a longer prose; the input, side panel, header and footer never move.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.packs import parse_pack
from storyloom.tui.app import StoryloomApp
from storyloom.tui.testing.frames import FrameRecorder, Line, assert_no_shift
from storyloom.tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from tests.conftest import SHORE_PACK
from tests.test_frames import HISTORY, SETTLE_SECONDS, history, prose, record_turn, size_params, until_true

TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
TAKE_BOTH = [*TAKE_LAMP, {"op": "replace", "path": "/items/boulder", "value": "player"}]
FIXED = ("input", "side", "header", "footer")
SETTLING = ("correcting (", "narrator busy", "another version")
"""Statuses that, once shown during another version, freeze everything above the input."""

VERSIONS: dict[str, Any] = {
    "longer": lambda gate, n: [GatedReply(turn_text(prose(n + 3, "b"), []))],
    "shorter": lambda gate, n: [GatedReply(turn_text(prose(1, "c"), []))],
    "corrected": lambda gate, n: [
        GatedReply(turn_text(prose(n, "d"), TAKE_BOTH)),
        GatedReply(turn_text(prose(n + 2, "f"), []), before=gate),
    ],
    "failed": lambda gate, n: [
        GatedReply(turn_text(prose(n + 2, "g"), TAKE_BOTH)),
        GatedReply(turn_text(None, TAKE_BOTH), before=gate),
    ],
    "cancelled": lambda gate, n: [
        GatedReply(turn_text(prose(n + 3, "h"), []), pause=gate, pause_at=len(turn_text(prose(n + 3, "h"))) // 2)
    ],
}


async def regenerate(
    frame_recorder: Any, name: str, size: tuple[int, int], *, browse: bool = False
) -> tuple[FrameRecorder, Any, list[Line]]:
    """Resume a full story, play "take lamp" (version 1), then record ctrl+g (version 2) to a second
    after it ends; with `browse`, record instead left then right on the focused message after it."""
    gate = asyncio.Event()
    first = GatedReply(turn_text(prose(6, "a"), TAKE_LAMP))
    replies = VERSIONS[name](gate, 3)
    narrator = GatedNarrator([first, *replies], chunk=16, delay=0.006)
    pack = parse_pack(SHORE_PACK, "shore.toml")
    session = Session(pack, narrator, budget=1 if name == "failed" else 2, history=history(), next_turn=HISTORY + 1)
    holder: list[FrameRecorder] = []
    app = StoryloomApp(session, on_event=lambda event: holder and holder[0].mark(event.event), blink=False)
    turn = HISTORY + 1
    lines = [f"› wait {i:02d}" for i in range(1, HISTORY + 1)] + [f"[h{i:02d}]" for i in range(1, HISTORY + 1)]
    lines += ["› take lamp", "another version", "‹ "]
    lines += list(dict.fromkeys(re.findall(r"\[[a-z]\d\]", first.text + "".join(r.text for r in replies))))
    lines = [Line.containing(text, optional=True) for text in lines]  # each may be out of a window's view
    async with app.run_test(size=size) as pilot:
        await pilot.press(*"take lamp", "enter")
        await until_true(pilot, lambda: app.game.message(turn) is not None and not app.game.running)
        await pilot.pause(0.1)
        recorder = record_turn(
            frame_recorder,
            app,
            turn,
            following=lambda app: app.game.transcript.following,
            closed=lambda app: app.game.message(turn).prose.closed,
        )
        holder.append(recorder)
        if browse:
            await pilot.press("ctrl+g")
            await until_true(pilot, lambda: not app.game.running)
            await pilot.press("end")  # back to the foot of the message, where `‹ 2/2 ›` is
            await pilot.pause(0.3)
            app.game.message(turn).focus(scroll_visible=False)  # as a click does
            await pilot.pause(0.3)
            recorder.mark("key")
            await pilot.press("left")
            await pilot.pause(0.4)
            await pilot.press("right")
        else:
            recorder.mark("key")
            await pilot.press("ctrl+g")
            if name == "cancelled":
                await until_true(pilot, lambda: replies[-1].waiting)
                await pilot.pause(0.1)
                await pilot.press("escape")
            else:
                await until_true(pilot, lambda: any(r.waiting for r in replies) or not app.game.running)
                await pilot.pause(0.15)
                gate.set()
        await until_true(pilot, lambda: not app.game.running)
        await pilot.pause(SETTLE_SECONDS)
        recorder.stop()
        game = app.game
    return recorder, game, lines


@pytest.mark.parametrize("size", size_params())
@pytest.mark.parametrize("name", list(VERSIONS))
async def test_another_version_streams_into_the_same_message_and_nothing_moves_down(
    frame_recorder: Any, name: str, size: tuple[int, int]
) -> None:
    recorder, game, lines = await regenerate(frame_recorder, name, size)
    frames = recorder.since("key")
    # A version that settles shorter than the prose it replaced gives back the blank rows under it in
    # the frame it settles, while the view follows its foot: the one frame anything moves down, by
    # exactly those rows. Before and after it, the rules below hold.
    closes = [k for k in range(1, len(frames)) if frames[k].texts["closed"] != frames[k - 1].texts["closed"]]
    assert len(closes) <= 1, f"the gap closed in frames {closes}"
    # scrolled up to the message's first line (ctrl+g brought it there), the reader reads on there: no move
    followed = all(f.texts["following"] == "True" for f in frames)
    assert (closes != []) == (name in ("shorter", "corrected") and followed), closes
    for k in closes:
        before, after = frames[k - 1], frames[k]
        drop = after.row_of("› take lamp") - before.row_of("› take lamp")
        shrank = before.regions["message"][3] - after.regions["message"][3]
        assert 0 < drop == shrank, f"moved down {drop} rows where the message gave back {shrank}"
        assert after.texts["status"] == "‹ 2/2 ›" or after.index == frames[-1].index or "prose_replaced" in after.marks
    for part in [frames[: closes[0]], frames[closes[0] :]] if closes else [frames]:
        check_version_frames(part, lines)
    assert_no_shift(recorder.frames, [], fixed=FIXED)
    assert all(f.regions["status"] is not None and f.regions["status"][3] == 1 for f in frames)
    message = game.message(HISTORY + 1)
    kept = name in ("failed", "cancelled")
    assert message.prose.text == (prose(6, "a") if kept else message.versions[-1][0])
    assert message.status.plain_text.startswith("another version" if kept else "‹ 2/2 ›")
    assert game.play.story.state["items"]["lamp"] == ("player" if kept else "shore")
    heights = [f.regions["message"][3] for f in frames[closes[0] if closes else 0 :] if f.regions["message"]]
    assert heights == sorted(heights), "the newest message shrank other than once, by the gap it closed"
    heights = [f.regions["message"][3] for f in frames[: closes[0] if closes else None] if f.regions["message"]]
    assert heights == sorted(heights), "the newest message shrank while a version was written"


def check_version_frames(frames: list[Any], lines: list[Line]) -> None:
    """When the message's first line is above the view, ctrl+g brings it to the top of the view in one
    step (else the new version would stream out of sight); from the next frame nothing moves at all."""
    scrolled = next((k for k, f in enumerate(frames) if f.texts["following"] == "False"), None)
    before = frames if scrolled is None else frames[:scrolled]
    assert_no_shift(
        before,
        lines,
        content="content",
        swap="prose",
        fixed=FIXED,
        settled=lambda frame: (frame.texts["status"] or "").startswith(SETTLING),
    )
    if scrolled is not None:
        assert frames[scrolled].row_of("› take lamp") == 2, "the message's first line is not at the view's top"
        assert_no_shift(frames[scrolled:], lines, fixed=FIXED, settled=lambda frame: True)


@pytest.mark.parametrize("size", size_params())
async def test_browsing_versions_moves_nothing_above_the_message(frame_recorder: Any, size: tuple[int, int]) -> None:
    recorder, game, lines = await regenerate(frame_recorder, "longer", size, browse=True)
    frames = recorder.since("key")
    assert_no_shift(frames, lines, content="content", swap="prose", fixed=FIXED, settled=lambda frame: True)
    seen = [text for f in frames if (text := f.texts["status"]) is not None]
    assert "‹ 1/2 ›" in seen and seen[-1] == "‹ 2/2 ›"
    assert game.play.story.state["items"]["lamp"] == "shore"
