"""Frame geometry: while the engine corrects a turn, the player's message stays put.

Each test plays one scripted turn whose first answer breaks a rule, records
every frame the app paints (the `frame_recorder` fixture of tui.testing.frames),
and checks what a player would see from `correction_started` on: the message
does not move or resize, the input and side panel never move, and the prose
changes in exactly one frame or not at all. The sequences of distinct states are
compared with JSON baselines in snapshots/frames/ (rewrite: --frames-update).
"""

from __future__ import annotations

import asyncio
from typing import Any

from engine import Session, parse_pack
from tests.conftest import SHORE_PACK
from tui.app import StoryloomApp
from tui.testing.frames import FrameRecorder
from tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from tui.testing.pilot import until

SIZE = (100, 30)
TAKE_BOTH = [{"op": "replace", "path": "/items/lamp", "value": "player"},
             {"op": "replace", "path": "/items/boulder", "value": "player"}]
TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
FIRST_PROSE = "You lift the brass lamp from the rocks. Its glass is cold and crusted with salt."
NEW_PROSE = ("You lift the brass lamp from the rocks. The boulder beside it does not move, however hard "
             "you push.\n\nThe lamp's glass is cold and crusted with salt.")

REGIONS = {"message": "#turn-1", "input": "#command", "side": "#side-panel"}
TEXTS = {"prose": "#turn-1 Prose", "status": "#turn-1 StatusRow"}


async def play_correction(frame_recorder: Any, correction: GatedReply | None, *, budget: int = 2,
                          cancel: bool = False, later: list[GatedReply] = (), earlier: int = 0,
                          size: tuple[int, int] = SIZE) -> tuple[FrameRecorder, StoryloomApp]:
    """Play "take lamp": a first answer that takes the boulder too, then `correction` (held by its gate).

    With `earlier`, that many turns are played first, so the transcript is full and scrolled.
    """
    replies = [GatedReply(turn_text(f"You wait. The rain goes on, turn {i}.\n\nNothing else happens."))
               for i in range(earlier)]
    replies.append(GatedReply(turn_text(FIRST_PROSE, TAKE_BOTH)))
    if correction is not None:
        replies.append(correction)
    replies += list(later)
    holder: list[FrameRecorder] = []
    session = Session(parse_pack(SHORE_PACK, "shore.toml"), GatedNarrator(replies), budget=budget)
    app = StoryloomApp(session, on_event=lambda event: holder[0].mark(event.event), blink=False)
    turn = earlier + 1
    async with app.run_test(size=size) as pilot:
        for i in range(earlier):
            await pilot.press(*"wait", "enter")
            await until(pilot, lambda i=i: app.game.latest_message() is not None
                        and app.game.latest_message().turn == i + 1 and not app.game.running)
        holder.append(frame_recorder(app, regions={**REGIONS, "message": f"#turn-{turn}"},
                                     texts={"prose": f"#turn-{turn} Prose", "status": f"#turn-{turn} StatusRow"}))
        await pilot.press(*"take lamp", "enter")
        await until(pilot, lambda: "correction_started" in holder[0].all_marks())
        await pilot.pause()
        await pilot.pause()
        if cancel:
            await pilot.press("escape")
        elif correction is not None and correction.before is not None:
            correction.before.set()
        await until(pilot, lambda: not app.game.running)
        await pilot.pause()
        await pilot.pause()
    return holder[0], app


def assert_still(frames: list, name: str, kind: str = "regions") -> None:
    values = {repr(getattr(f, kind)[name]) for f in frames}
    assert len(values) == 1, f"{name} changed across frames: {sorted(values)}"


async def test_kept_prose_is_never_repainted_and_the_message_never_moves(frame_recorder, frame_baselines):
    gate = asyncio.Event()
    recorder, _ = await play_correction(frame_recorder, GatedReply(turn_text(None, TAKE_LAMP), before=gate))

    window = recorder.between("correction_started")
    assert recorder.frames[-1].texts["status"] == ""  # committed: the status row is empty again
    assert_still(window, "message")
    assert_still(recorder.frames, "input")
    assert_still(recorder.frames, "side")
    assert_still(window, "prose", "texts")
    assert FIRST_PROSE.split(".")[0] in window[0].texts["prose"]
    statuses = recorder.sequences(window)["texts.status"]
    assert statuses == ["correcting (1/2)…", ""]
    frame_baselines.check("correction_prose_kept", recorder.sequences(window))


async def test_changed_prose_is_swapped_in_exactly_one_frame(frame_recorder, frame_baselines):
    gate = asyncio.Event()
    recorder, app = await play_correction(frame_recorder, GatedReply(turn_text(NEW_PROSE, TAKE_LAMP), before=gate))

    assert_still(recorder.between("correction_started", "prose_replaced"), "message")
    assert_still(recorder.frames, "input")
    assert_still(recorder.frames, "side")
    window = recorder.between("correction_started")
    swaps = recorder.changes(window, "prose")
    assert len(swaps) == 1, f"the prose changed in frames {swaps}"
    assert "The boulder beside it" in recorder.frames[-1].texts["prose"]
    assert app.session.state["items"]["lamp"] == "player"
    frame_baselines.check("correction_prose_changed", recorder.sequences(window))


async def test_cancel_during_correction_keeps_message_and_prose_still(frame_recorder, frame_baselines):
    gate = asyncio.Event()  # never opened: the correction is still running when the player presses Esc
    recorder, app = await play_correction(frame_recorder, GatedReply(turn_text(None, TAKE_LAMP), before=gate),
                                          cancel=True)

    window = recorder.between("correction_started")
    assert "turn_cancelled" in recorder.all_marks()
    assert_still(window, "message")
    assert_still(recorder.frames, "input")
    assert_still(recorder.frames, "side")
    assert_still(window, "prose", "texts")
    assert recorder.frames[-1].texts["status"] == "cancelled · r retry"
    assert app.session.state["items"]["lamp"] == "shore"
    frame_baselines.check("correction_cancelled", recorder.sequences(window))


async def test_failed_turn_keeps_message_and_prose_still(frame_recorder, frame_baselines):
    gate = asyncio.Event()
    still_wrong = GatedReply(turn_text(None, TAKE_BOTH), before=gate)
    recorder, app = await play_correction(frame_recorder, still_wrong, budget=1)

    window = recorder.between("correction_started")
    assert "turn_failed" in recorder.all_marks()
    assert_still(window, "message")
    assert_still(recorder.frames, "input")
    assert_still(recorder.frames, "side")
    assert_still(window, "prose", "texts")
    assert recorder.frames[-1].texts["status"] == "couldn't make this turn consistent · r retry · d details"
    frame_baselines.check("correction_failed", recorder.sequences(window))


async def test_status_updates_never_trigger_a_layout(frame_recorder):
    """The status row is one line, so a status change repaints without laying out the screen."""
    gate = asyncio.Event()
    session = Session(parse_pack(SHORE_PACK, "shore.toml"),
                      GatedNarrator([GatedReply(turn_text(FIRST_PROSE, TAKE_BOTH)),
                                     GatedReply(turn_text(None, TAKE_LAMP), before=gate)]))
    app = StoryloomApp(session, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"take lamp", "enter")
        await until(pilot, lambda: app.game.latest_message() is not None
                     and app.game.latest_message().status.kind == "correcting")
        await pilot.pause()
        message = app.game.latest_message()
        before = message.region
        layouts: list[int] = []
        original = app.screen._refresh_layout

        def counting(*args: Any, **kwargs: Any) -> None:
            layouts.append(1)
            original(*args, **kwargs)

        app.screen._refresh_layout = counting  # type: ignore[method-assign]
        message.status.retrying(2)
        await pilot.pause()
        message.status.correcting(1, 2)
        await pilot.pause()
        del app.screen._refresh_layout
        gate.set()
        await until(pilot, lambda: not app.game.running)
        assert layouts == []
        assert message.region == before


async def test_a_full_scrolled_transcript_at_80x24_keeps_the_corrected_message_still(frame_recorder, frame_baselines):
    gate = asyncio.Event()
    recorder, app = await play_correction(frame_recorder, GatedReply(turn_text(NEW_PROSE, TAKE_LAMP), before=gate),
                                          earlier=6, size=(80, 24))

    assert app.session.next_turn == 8
    assert_still(recorder.between("correction_started", "prose_replaced"), "message")
    assert_still(recorder.frames, "input")
    window = recorder.between("correction_started")
    assert len(recorder.changes(window, "prose")) == 1
    frame_baselines.check("correction_prose_changed_80x24_scrolled", recorder.sequences(window))
