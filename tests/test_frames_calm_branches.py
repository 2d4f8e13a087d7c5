"""Calm reading while a story branches: play turns, continue from an earlier turn (ctrl+b), play on
that branch, switch back from the story tree, and play on. A branch or a switch shows another path
from the intro (as a new game or a resumed save is shown), so the one pair of frames across that
redraw is not compared by the rules about rows moving (1-4); every other frame, before and after,
obeys every rule, and the frames with the tree over the transcript are not the transcript's."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pytest_frame_geometry.calm import Sheet, assert_calm, sheets_of

from storyloom.tui.screens.story_tree import StoryTreeScreen
from storyloom.tui.testing.narrators import GatedReply, turn_text
from tests.test_frames import until_true
from tests.test_frames_calm import HINT, MARKS, STATUSES, Game, make_app, story, view

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40", marks=pytest.mark.slow)]
REDRAWS = {"branch_started", "branch_switched"}
"""The events after which the transcript shows another path, drawn anew."""


def sheets(game: Game) -> list[Sheet]:
    """The transcript's frames, those under the story tree left out; a redraw's first frame flagged."""
    frames = [f for f in game.recorder.frames if f.texts["modal"] == "False"]
    redraws: set[int] = set()
    for k, frame in enumerate(game.recorder.frames):
        if REDRAWS & set(frame.marks):  # the tree's frames are left out: the redraw is the next one kept
            redraws.add(next(f.index for f in game.recorder.frames[k:] if f.texts["modal"] == "False"))
    found = sheets_of(frames, view, clock="time", flags=("busy", "following"))
    for sheet in found:
        sheet.flags["redraw"] = sheet.index in redraws
    return found


@pytest.mark.parametrize("size", SIZES)
async def test_branching_and_switching_back_read_calmly(frame_recorder: Any, size: tuple[int, int]) -> None:
    replies = [GatedReply(turn_text(story(n, tag), [])) for n, tag in [(3, "a"), (2, "b"), (4, "c"), (3, "d")]]
    replies += [GatedReply(turn_text(story(n, tag), [])) for n, tag in [(2, "e"), (5, "f"), (2, "g")]]
    app, narrator = make_app(replies)
    async with app.run_test(size=size) as pilot:
        recorder = frame_recorder(
            app,
            screen=True,
            regions={"story": "#transcript"},
            texts={
                "time": lambda app: f"{time.monotonic():.4f}",
                "busy": lambda app: app.game.running,
                "following": lambda app: app.game.transcript.following,
                "modal": lambda app: app.screen is not app.game,
            },
        )
        MARKS[id(app)] = recorder
        game = Game(app, pilot, recorder, narrator)
        for command in ("look", "wait", "listen", "rest"):
            await game.send(command)
        session = app.game.play.story
        app.game.message(2).focus(scroll_visible=False)
        recorder.mark("ctrl+b")
        await pilot.press("ctrl+b")
        await until_true(pilot, lambda: session.ledger.branch == 2, 20)
        await pilot.pause(0.6)
        assert [i for i, _ in app.game.committed_exchanges()] == ["look", "wait"]
        await game.send("go on")
        await game.send("sing")
        recorder.mark("ctrl+t")
        await pilot.press("ctrl+t")
        await until_true(pilot, lambda: isinstance(app.screen, StoryTreeScreen), 20)
        await pilot.pause(0.3)
        await pilot.press("up", "enter")
        await until_true(pilot, lambda: session.ledger.branch == 1 and app.screen is app.game, 20)
        await pilot.pause(0.6)
        assert [i for i, _ in app.game.committed_exchanges()] == ["look", "wait", "listen", "rest"]
        await game.send("sleep")  # the frames after the switch: playing on
        recorder.stop()
    found = sheets(game)
    assert sum(s.flags["redraw"] for s in found) == 2, "the branch and the switch each drew the path once"
    last = found[-1].rows
    assert any("g2:" in row for row in last), "the turn played after the switch is not in view"
    assert_calm(
        found,
        statuses=STATUSES,
        ignore=HINT,
        idle=lambda s: s.flags["busy"] == "False" and s.flags["following"] == "True",
        reset=lambda before, after: after.flags["redraw"],
    )
