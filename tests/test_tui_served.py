"""The app served to a browser tab (`storyloom serve`): every key it offers is one a browser lets
through. Browsers keep some keys for themselves before the page sees them (ctrl+t opens a tab and
ctrl+w closes one in every browser; Firefox quits on ctrl+q), so in a browser the footer, the
palette's "Keys" and the game's own words name browser-safe keys instead, and those keys work.
(`Textual.App.is_web` is what textual-serve's driver reports; here it is set as that driver would.)
"""

from __future__ import annotations

from typing import Any

import pytest

from storyloom.tui.app import StoryloomApp
from storyloom.tui.screens.keys import KeysScreen
from storyloom.tui.screens.new_branch import NewBranchScreen
from storyloom.tui.screens.story_tree import StoryTreeScreen
from storyloom.tui.testing.narrators import GatedReply, turn_text
from storyloom.tui.testing.pilot import until
from tests.test_story_end import CLIMB, TO_THE_PATH, TOWER, UP_THE_TOWER, ending_shown, painted, shore_app
from tests.test_tui_branches import _app, _played_and_branched

TAKEN_BY_BROWSERS = {"ctrl+q", "ctrl+t", "ctrl+w", "ctrl+n", "ctrl+tab", "ctrl+shift+tab"}


@pytest.fixture
def served(monkeypatch) -> None:
    monkeypatch.setattr(StoryloomApp, "is_web", property(lambda self: True))


def _footer(app: Any) -> dict[str, str]:
    from textual.widgets import Footer

    return {key.key: str(key.description) for key in app.screen.query_one(Footer).query("FooterKey")}


async def _keys_listed(pilot: Any) -> list[str]:
    pilot.app.action_keys()
    await until(pilot, lambda: isinstance(pilot.app.screen, KeysScreen))
    listed = [keys for keys, what in pilot.app.screen._lines if what]
    await pilot.press("escape")
    return listed


async def test_in_a_browser_the_footer_and_the_keys_list_name_keys_the_browser_lets_through(served) -> None:
    app = _app()
    async with app.run_test(size=(100, 30)) as pilot:
        await _played_and_branched(pilot)
        await pilot.pause()
        footer = _footer(app)
        assert not TAKEN_BY_BROWSERS & set(footer), footer
        assert footer.get("f10") == "Quit" and footer.get("f2") == "Story tree", footer
        listed = await _keys_listed(pilot)
        assert not TAKEN_BY_BROWSERS & {key.strip() for keys in listed for key in keys.split(",")}, listed
        assert "f2" in listed and "f10" in listed
        await pilot.press("f2")
        await until(pilot, lambda: isinstance(app.screen, StoryTreeScreen))
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, StoryTreeScreen))

        app.game.message(1).focus(scroll_visible=False)  # the question before a branch names the tree's key
        await pilot.press("ctrl+g")
        await until(pilot, lambda: isinstance(app.screen, NewBranchScreen))
        assert "f2 shows every branch" in app.screen.question() and "ctrl+t" not in app.screen.question()
        await pilot.press("escape")

        await pilot.press("f10")
        await pilot.pause()
        assert app.return_code == 0  # quit, as ctrl+q does in a terminal


async def test_in_a_terminal_the_keys_are_the_terminal_ones() -> None:
    app = _app()
    async with app.run_test(size=(100, 30)) as pilot:
        await _played_and_branched(pilot)
        await pilot.pause()
        footer = _footer(app)
        assert footer.get("ctrl+q") == "Quit" and footer.get("ctrl+t") == "Story tree", footer
        assert "f10" not in footer and "f2" not in footer
        listed = await _keys_listed(pilot)
        assert "ctrl+t" in listed and "ctrl+q" in listed and "f2" not in listed and "f10" not in listed


async def test_in_a_browser_the_ending_says_what_a_tab_can_do_now(served) -> None:
    """A tab has no "new game" or "open save" (a new tab is a new story) and quits with f10."""
    app = shore_app(GatedReply(turn_text(CLIMB, TO_THE_PATH)), GatedReply(turn_text(TOWER, UP_THE_TOWER)))
    async with app.run_test(size=(100, 40)) as pilot:
        from tests.test_tui_snapshots import send

        await send(pilot, "climb")
        await until(pilot, lambda: app.game.latest_message() is not None and not app.game.running)
        await send(pilot, "go up")
        await until(pilot, lambda: ending_shown(app))
        await pilot.pause()
        screen = " ".join(word for word in painted(app).split() if word not in ("▊", "▏"))  # lines joined
        assert "The story is over. ctrl+z takes back" in screen
        assert "f10 quits, and a new tab starts a new story." in screen
        assert "ctrl+q" not in screen and "new game" not in screen and "another save" not in screen
        assert app.game.command_input.placeholder == "The story is over · ctrl+z undo · ctrl+p export · f10 quit"
