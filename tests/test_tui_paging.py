"""Paging the story: every line shows exactly once, End follows the newest text again, and a command
sent while a turn is written is answered where it covers nothing."""

from __future__ import annotations

import asyncio
import re

from storyloom.engine.lifecycle import Session
from storyloom.engine.narration import Exchange
from storyloom.engine.packs import parse_pack
from storyloom.engine.turns import Turn
from storyloom.tui._textual_internals import screen_compositor
from storyloom.tui.app import StoryloomApp
from storyloom.tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from storyloom.tui.testing.pilot import until
from tests.conftest import SHORE_PACK

WORD = re.compile(r"t\d\dw\d\d")


def long_story(replies: list[GatedReply] | None = None) -> StoryloomApp:
    """A resumed story of 30 turns whose every line is unique: words t01w00 ... t30w39."""
    history = tuple(
        Exchange(f"wait {i:02d}", Turn(narrative=" ".join(f"t{i:02d}w{k:02d}" for k in range(40))))
        for i in range(1, 31)
    )
    session = Session(parse_pack(SHORE_PACK, "shore.toml"), GatedNarrator(replies or []), history=history, next_turn=31)
    return StoryloomApp(session, blink=False)


def page_words(app: StoryloomApp) -> list[str]:
    """The words the player can read in the transcript now (not those under the follow hint)."""
    region = app.game.transcript.region
    rows = [strip.text for strip in screen_compositor(app.screen).render_strips()][region.y : region.bottom]
    return [
        word for row in rows if "newer text below" not in row for word in WORD.findall(row[region.x : region.right])
    ]


async def test_paging_up_then_down_shows_every_line_exactly_once() -> None:
    app = long_story()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        transcript = app.game.transcript
        everything = {f"t{i:02d}w{k:02d}" for i in range(1, 31) for k in range(40)}
        for key, done in (("pageup", lambda: transcript.scroll_y <= 0), ("pagedown", lambda: transcript.following)):
            pages = [page_words(app)]
            while not done():
                await pilot.press(key)
                await pilot.pause()
                pages.append(page_words(app))
            seen: dict[str, int] = {}
            for page in pages:
                for word in set(page):
                    seen[word] = seen.get(word, 0) + 1
            assert set(seen) == everything, f"{key}: never shown: {sorted(everything - set(seen))[:8]}"
            twice = {word for word, count in seen.items() if count > 1}
            # only the last page, stopped at the top or the bottom, may show again what the one before showed
            assert twice <= set(pages[-1]) & set(pages[-2]), f"{key}: shown twice: {sorted(twice)[:8]}"
            lost = [w for w in everything if seen.get(w, 0) == 0]
            assert not lost


async def test_end_follows_the_newest_text_from_the_input_line_and_otherwise_moves_the_cursor() -> None:
    app = long_story()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        transcript, field = app.game.transcript, app.game.command_input
        await pilot.press("pageup", "pageup")
        await pilot.pause()
        assert not transcript.following and field.has_focus
        assert "newer text below" in "\n".join(s.text for s in screen_compositor(app.screen).render_strips())
        await pilot.press("end")
        await pilot.pause()
        assert transcript.following
        await pilot.press(*"look", "home", "end")
        assert field.value == "look" and field.cursor_position == 4  # End is the input's own key again


async def test_a_command_sent_while_a_turn_is_written_is_answered_on_the_input_border_not_over_the_prose() -> None:
    gate = asyncio.Event()
    app = long_story(
        [GatedReply(turn_text("You wait. The rain goes on.\n\nNothing happens."), pause_at=20, pause=gate)]
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"wait", "enter")
        await until(pilot, lambda: app.game.running and app.game.latest_message() is not None)
        await pilot.press(*"look", "enter")
        await pilot.pause()
        field = app.game.command_input
        assert field.value == "look"  # the command waits in the line
        assert "still being written" in str(field.border_subtitle)
        assert not app._notifications, "a toast would cover the prose being written"
        gate.set()
        await until(pilot, lambda: not app.game.running)
        await pilot.pause()
        assert not field.border_subtitle
