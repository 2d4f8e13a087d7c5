"""Streaming stays cheap: what the transcript does per streamed chunk, counted (never timed).

A layout of the screen walks every mounted widget and, when a line is added to the
bottom-anchored transcript, scrolls it and repaints the whole view. These tests
count layouts and repainted lines while prose streams into a turn message, so a
change that brings back a layout (or a full repaint) per chunk fails here, on any
machine, whatever its speed.
"""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.geometry import Region

from engine.events import ProseDelta, TurnCommitted, TurnStarted
from tui.widgets import Transcript, TurnMessage
from tui.widgets._prose import STREAM_STEP, Prose

WIDTH = 60
"""Terminal width; the prose is a little narrower (the message's border and padding)."""


class StreamApp(App[None]):
    """One turn message at the bottom of an anchored transcript, as in the game."""

    def compose(self) -> ComposeResult:
        with Transcript(id="transcript"):
            yield TurnMessage(1, "look")


def count_layouts(app: App[Any]) -> list[int]:
    """Count the screen's layout passes (not its scroll-only reflows) from now on."""
    screen = app.screen
    calls = [0]
    original = screen._refresh_layout

    def counted(size: Any = None, scroll: bool = False) -> None:
        if not scroll or screen._layout_widgets:
            calls[0] += 1
        original(size, scroll)

    screen._refresh_layout = counted  # type: ignore[method-assign]
    return calls


def record_repaints(prose: Prose) -> list[tuple[Region, ...]]:
    """The regions each `refresh` of the prose asked to repaint (() for the whole widget)."""
    seen: list[tuple[Region, ...]] = []
    original = prose.refresh

    def recorded(*regions: Region, **kwargs: Any) -> Prose:
        seen.append(regions)
        return original(*regions, **kwargs)

    prose.refresh = recorded  # type: ignore[method-assign]
    return seen


async def started(pilot: Any) -> TurnMessage:
    message = pilot.app.query_one(TurnMessage)
    message.show(TurnStarted(turn=1, attempt=1, player_input="look"))
    message.show(ProseDelta(turn=1, text="The"))
    await pilot.pause()
    await pilot.pause()
    return message


async def test_a_chunk_that_adds_no_line_triggers_no_layout_and_repaints_one_line():
    app = StreamApp()
    async with app.run_test(size=(WIDTH, 20)) as pilot:
        message = await started(pilot)
        layouts = count_layouts(app)
        repaints = record_repaints(message.prose)
        for word in (" sea", " is", " wet", " and", " grey"):  # stays on the first line
            message.show(ProseDelta(turn=1, text=word))
            await pilot.pause()
        assert message.prose.line_count == 1
        assert layouts[0] == 0
        assert repaints and all(len(r) == 1 and r[0].height == 1 and r[0].y == 0 for r in repaints)


async def test_new_lines_lay_out_once_per_step_not_once_per_line():
    app = StreamApp()
    async with app.run_test(size=(WIDTH, 30)) as pilot:
        message = await started(pilot)
        layouts = count_layouts(app)
        for _ in range(120):  # about 20 lines of text, a few words at a time
            message.show(ProseDelta(turn=1, text=" wet rocks"))
            await pilot.pause()
        lines = message.prose.line_count
        assert lines >= 4 * STREAM_STEP
        assert layouts[0] <= lines // STREAM_STEP + 1, (layouts[0], lines)


async def test_the_reserved_lines_are_given_back_when_the_turn_ends():
    app = StreamApp()
    async with app.run_test(size=(WIDTH, 20)) as pilot:
        message = await started(pilot)
        await pilot.pause()
        assert message.prose.size.height == STREAM_STEP  # room to grow while streaming
        message.show(TurnCommitted(turn=1, state_hash="x", narrative="The"))
        await pilot.pause()
        await pilot.pause()
        assert message.prose.size.height == 1
        assert message.size.height == 3  # the command, the prose, the status row
