"""Streaming stays cheap: what the transcript does per streamed chunk, counted (never timed).

A layout of the screen walks every mounted widget and, when a line is added to the
bottom-anchored transcript, scrolls it and repaints the whole view. These tests
count layouts and repainted lines while prose streams into a turn message, so a
change that brings back a layout (or a full repaint) per chunk fails here, on any
machine, whatever its speed.
"""

from __future__ import annotations

from typing import Any

from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.screen import Screen

from storyloom.engine.events import ProseDelta, TurnCommitted, TurnStarted
from storyloom.engine.lifecycle import Session
from storyloom.engine.packs import parse_pack
from storyloom.tui._textual_internals import RowCroppedCompositor, RowDiffScrollBar, crop_repaints_to_rows
from storyloom.tui.app import StoryloomApp
from storyloom.tui.testing.narrators import GatedNarrator
from storyloom.tui.widgets.prose import AHEAD, Prose
from storyloom.tui.widgets.transcript import Transcript
from storyloom.tui.widgets.turn_message import TurnMessage
from tests.conftest import SHORE_PACK

WIDTH = 60
"""Terminal width; the prose is a little narrower (the message's border and padding)."""


class StreamApp(App[None]):
    """One turn message at the bottom of an anchored transcript, as in the game."""

    def compose(self) -> ComposeResult:
        with Transcript(id="transcript"):
            yield TurnMessage(1, "look")


def count_layouts(app: App[Any]) -> list[int]:
    """Count the screen's layout passes (`[0]`) and its scroll steps (`[1]`, reflows of what shows
    with nothing arranged again) from now on.

    A measurement, so it wraps Textual's private `Screen._refresh_layout` directly.
    """
    screen = app.screen
    calls = [0, 0]
    original = screen._refresh_layout

    def counted(size: Any = None, scroll: bool = False) -> None:
        calls[0 if not scroll or screen._layout_widgets else 1] += 1
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
    message.show(ProseDelta(turn=1, text="The "))
    await pilot.pause()
    await pilot.pause()
    return message


async def test_a_chunk_that_adds_no_line_triggers_no_layout_and_repaints_only_the_live_rows():
    app = StreamApp()
    async with app.run_test(size=(WIDTH, 20)) as pilot:
        message = await started(pilot)
        layouts = count_layouts(app)
        repaints = record_repaints(message.prose)
        for word in ("sea ", "is ", "wet ", "and ", "grey "):  # stays on the first line
            message.show(ProseDelta(turn=1, text=word))
            await pilot.pause()
        assert message.prose.line_count == 1
        assert layouts[0] == 0
        # only the live line is repainted, never the whole widget
        assert repaints and all(len(r) == 1 and r[0].y == 0 and r[0].height == 1 for r in repaints)


async def test_chunks_arriving_within_one_frame_ask_for_one_repaint_and_all_show():
    app = StreamApp()
    async with app.run_test(size=(WIDTH, 20)) as pilot:
        message = await started(pilot)
        repaints = record_repaints(message.prose)
        for word in ("sea ", "is ", "wet "):  # no frame in between
            message.show(ProseDelta(turn=1, text=word))
        assert len(repaints) == 1
        await pilot.pause()
        await pilot.pause()
        message.show(ProseDelta(turn=1, text="and "))  # painted since: asks again
        await pilot.pause()
        assert len(repaints) == 2
        assert message.prose.wrapped_lines[0].text.rstrip() == "The sea is wet and"


async def test_the_view_ends_one_row_under_the_text_and_a_layout_comes_once_in_eight_lines():
    """The anchored transcript rises by exactly the rows of text that arrive: the view ends one blank
    row under the newest line on every frame, though the prose is laid out `AHEAD` rows taller than its
    text while it streams (those rows stay below the view), so a layout comes once per `AHEAD` lines,
    not once per line. Settled, the prose is as tall as its text."""
    app = StreamApp()
    async with app.run_test(size=(WIDTH, 30)) as pilot:
        message = await started(pilot)
        layouts = count_layouts(app)
        view = app.query_one(Transcript)
        under: set[int] = set()
        hidden: set[int] = set()
        for _ in range(120):  # about 20 lines of text, a few words at a time
            message.show(ProseDelta(turn=1, text="wet rocks "))
            await pilot.pause()
            prose = message.prose
            under.add(view.scrollable_content_region.bottom - (prose.region.y + prose.line_count))
            hidden.add(prose.hidden)
        lines = message.prose.line_count
        assert lines >= 12
        assert under == {1}  # one blank row under the text, never the rows laid out ahead
        assert max(hidden) == AHEAD and min(hidden) == 0  # the rows below the view were there, and filled
        assert layouts[0] <= lines // AHEAD + 1, (layouts[0], lines)
        message.show(TurnCommitted(turn=1, state_hash="x", narrative=message.prose.text))
        await pilot.pause()
        await pilot.pause()
        assert message.prose.size.height == message.prose.line_count and message.prose.hidden == 0
        assert view.scrollable_content_region.bottom - message.status.region.bottom == 0  # its status row, last


class CroppedStreamApp(App[None]):
    """`StreamApp` on a screen that paints as the game's screens do (`crop_repaints_to_rows`)."""

    def get_default_screen(self) -> Screen[Any]:
        screen: Screen[Any] = Screen()
        crop_repaints_to_rows(screen)
        return screen

    def compose(self) -> ComposeResult:
        with Transcript(id="transcript"):
            yield TurnMessage(1, "look")


async def test_a_new_line_in_a_full_view_repaints_the_view_once():
    """A new line lifts every row of a full, anchored transcript: one repaint of the view, in the
    frame of its scroll step (or of its layout, once per `AHEAD` lines). The widgets a layout resized
    (the prose, its turn, the scroll bar) ask for a repaint of their whole selves too; the frame
    after must not paint those same rows again."""
    app = CroppedStreamApp()
    async with app.run_test(size=(WIDTH, 20)) as pilot:
        message = await started(pilot)
        for _ in range(240):  # more lines than the view holds
            message.show(ProseDelta(turn=1, text="wet rocks "))
        await pilot.pause()
        await pilot.pause()
        compositor = app.screen._compositor  # a measurement: reads what each partial update paints
        painted: list[int] = []
        original = compositor.render_partial_update

        def counted() -> Any:
            rows = {region.y + dy for region in compositor._dirty_regions for dy in range(region.height)}
            painted.append(len(rows))
            return original()

        compositor.render_partial_update = counted  # type: ignore[method-assign]
        layouts = count_layouts(app)
        lines = message.prose.line_count
        for _ in range(120):  # about 20 new lines, a few words at a time
            message.show(ProseDelta(turn=1, text="wet rocks "))
            await pilot.pause()
        await pilot.pause()
        new_lines = message.prose.line_count - lines
        whole_view = [rows for rows in painted if rows > 10]
        assert new_lines >= 12 and layouts[0] <= new_lines // AHEAD + 1
        assert len(whole_view) <= new_lines, (len(whole_view), new_lines, painted)


async def test_the_scroll_bar_restyles_only_rows_that_changed_and_paints_what_it_would_afresh():
    """While lines stream in, the transcript's scroll bar paints on every frame what a bar drawn
    afresh paints (its thumb moves), though each layout restyles only the rows whose cells changed."""
    app = CroppedStreamApp()
    async with app.run_test(size=(WIDTH, 20)) as pilot:
        message = await started(pilot)
        bar = app.query_one(Transcript).vertical_scrollbar
        assert isinstance(bar, RowDiffScrollBar)
        styles_cache = bar._styles_cache  # a measurement: counts the rows styled anew
        original = styles_cache.render_line
        restyled = [0]

        def counted(*args: Any, **kwargs: Any) -> Any:
            restyled[0] += 1
            return original(*args, **kwargs)

        styles_cache.render_line = counted  # type: ignore[method-assign]
        layouts = count_layouts(app)
        shown: set[tuple[Any, ...]] = set()
        checked = 0
        for _ in range(400):  # past the view: the bar appears, then its thumb shrinks and moves down
            message.show(ProseDelta(turn=1, text="wet rocks "))
            await pilot.pause()
            if not bar.display or not bar.size:
                continue
            whole = Region(0, 0, *bar.size)
            painted = bar.render_lines(whole)
            counted_so_far = restyled[0]
            bar._styles_cache.clear()  # the same bar drawn with nothing kept
            bar._render_content()
            assert bar.render_lines(whole) == painted
            restyled[0] = counted_so_far
            shown.add(tuple(tuple(strip) for strip in painted))
            checked += 1
        assert checked > 20 and len(shown) > 3  # the thumb moved
        # at most two rows a layout or scroll step (the thumb's ends), where a whole bar is 20 rows
        assert restyled[0] <= 2 * sum(layouts) + bar.size.height, (restyled[0], layouts)


async def test_a_growing_turn_message_restyles_only_its_new_rows_and_paints_what_it_would_afresh():
    """The streaming turn message grows (by `AHEAD` rows at a time): its own rows (border and padding
    beside the prose) are styled anew only at its foot, and read on every frame as drawn afresh."""
    app = CroppedStreamApp()
    async with app.run_test(size=(WIDTH, 20)) as pilot:
        message = await started(pilot)
        message.add_class("-apart")  # a blank row above its command: its top row differs from the rest
        styles_cache = message._styles_cache  # a measurement: counts the rows styled anew
        original = styles_cache.render_line
        restyled = [0]

        def counted(*args: Any, **kwargs: Any) -> Any:
            restyled[0] += 1
            return original(*args, **kwargs)

        styles_cache.render_line = counted  # type: ignore[method-assign]
        await pilot.pause()
        layouts = count_layouts(app)
        heights = set()
        for _ in range(240):  # more lines than the view holds
            message.show(ProseDelta(turn=1, text="wet rocks "))
            await pilot.pause()
            whole = Region(0, 0, *message.size)
            painted = message.render_lines(whole)
            counted_so_far = restyled[0]
            message._styles_cache.clear()  # the same message drawn with nothing kept
            assert message.render_lines(whole) == painted
            restyled[0] = counted_so_far
            heights.add(message.size.height)
        assert len(heights) >= 240 // 6 // AHEAD  # it grew in steps of `AHEAD` rows
        # styled anew: the last row and the new one per layout (and the whole, once, at the start)
        assert restyled[0] <= 3 * layouts[0] + 2 * max(heights), (restyled[0], layouts[0])


async def test_rows_a_shorter_version_leaves_stay_until_the_next_turn_takes_them_once():
    """A swap to shorter prose keeps the message's height (a shorter message would drop every line
    above it): the rows stay blank at its foot and are handed to what is shown next, once."""
    app = StreamApp()
    async with app.run_test(size=(WIDTH, 20)) as pilot:
        message = await started(pilot)
        message.show(ProseDelta(turn=1, text="sea " * 40))
        message.show(TurnCommitted(turn=1, state_hash="x", narrative="The " + "sea " * 40))
        await pilot.pause()
        await pilot.pause()
        tall = message.prose.size.height
        assert tall == message.prose.line_count > 2
        message.prose.set_text("The sea.")
        await pilot.pause()
        await pilot.pause()
        assert message.prose.size.height == tall
        assert message.release_reserve() == tall - 1
        assert message.release_reserve() == 0  # handed on once


async def test_a_partial_repaint_paints_what_textual_would_and_renders_only_its_rows_of_the_front_widget():
    app = StoryloomApp(Session(parse_pack(SHORE_PACK, "shore.toml"), GatedNarrator([])), blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        # This test measures the compositor itself, so it reaches into Textual's privates directly.
        compositor = app.screen._compositor
        assert isinstance(compositor, RowCroppedCompositor)
        text = app.screen.query_one("#intro .-text").region
        crop = Region(text.x, text.y, text.width, 1)  # one line of the intro's prose

        def line(renders: Any) -> str:
            compositor._get_renders = renders  # type: ignore[method-assign]
            try:
                chops = compositor._render_chops(crop, lambda y: y == crop.y)
            finally:
                del compositor._get_renders
            # what a partial update writes: the row within the repainted columns
            return "".join(
                strip.text for x, strip in chops[crop.y].items() if strip is not None and crop.x <= x < crop.right
            )

        rendered: list[int] = []
        original = compositor._get_renders

        def counting(c: Region | None = None) -> Any:
            for region, clip, strips in original(c):
                rendered.append(len(strips))
                yield region, clip, strips

        ours = line(counting)
        theirs = line(Compositor._get_renders.__get__(compositor))
        await pilot.pause()
    assert "Grey water, black rocks." in ours
    assert ours == theirs
    assert rendered and max(rendered) == 1  # every widget rendered that one row, not its whole height
    assert len(rendered) == 1  # and only the one in front: the containers behind the text are not asked


async def test_text_selected_in_the_live_paragraph_is_that_paragraph_s_text():
    from textual.geometry import Offset
    from textual.selection import Selection

    app = StreamApp()
    async with app.run_test(size=(WIDTH, 20)) as pilot:
        message = await started(pilot)
        message.show(ProseDelta(turn=1, text=" first line.\n\nSecond paragraph here"))
        await pilot.pause()
        prose = message.prose
        live = prose.wrapped_lines[-1]
        offsets = {segment.style.meta["offset"] for segment in live if segment.style and segment.style.meta}
        assert {y for _, y in offsets} == {2}  # the third line of the prose: after "The first line." and a blank
        selected = prose.get_selection(Selection(Offset(0, 2), Offset(6, 2)))
        assert selected is not None and selected[0] == "Second"


async def test_a_streamed_word_is_painted_once_it_is_whole():
    """A half word painted at a row's end hops to the next row when its last letters no longer fit:
    a word shows once a space follows it, it ends in punctuation, or the stream ends."""
    app = StreamApp()
    async with app.run_test(size=(WIDTH, 20)) as pilot:
        message = await started(pilot)

        async def shown(chunk: str) -> str:
            message.show(ProseDelta(turn=1, text=chunk))
            await pilot.pause()
            return "\n".join(line.text.rstrip() for line in message.prose.wrapped_lines)

        assert await shown("sea is co") == "The sea is"
        assert await shown("ld and") == "The sea is cold"
        assert await shown(" grey.") == "The sea is cold and grey."
        assert await shown(" The keeper's lo") == "The sea is cold and grey. The keeper's"
        message.show(TurnCommitted(turn=1, state_hash="x", narrative=message.prose.text))
        await pilot.pause()
        assert message.prose.wrapped_lines[-1].text.rstrip().endswith("keeper's lo")  # the stream ended
