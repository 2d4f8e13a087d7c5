"""The rough edges a newcomer met in the first hour of play, each as the player meets it."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.widgets._toast import Toast

from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import parse_pack
from storyloom.tui.app import StoryloomApp
from storyloom.tui.screens.issue_details import IssueDetailsScreen
from storyloom.tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from storyloom.tui.testing.pilot import until
from storyloom.tui.widgets.command_input import CommandInput
from storyloom.tui.widgets.turn_message import TurnMessage
from tests.conftest import SHORE_PACK
from tests.test_tui_app import PROSE, TAKE_LAMP, finished, painted, send


def _app(*replies: GatedReply, pack: str = SHORE_PACK, budget: int = 2) -> StoryloomApp:
    session = Session(parse_pack(pack, "shore.toml"), GatedNarrator(list(replies)), budget=budget)
    return StoryloomApp(session, blink=False)


def _field(app: StoryloomApp) -> CommandInput:
    return app.game.query_one(CommandInput)


async def _details_after(pilot: Any, app: StoryloomApp, command: str) -> str:
    """Play a command, press ctrl+d, and read the details screen."""
    await send(pilot, command)
    await finished(pilot, app)
    await pilot.press("ctrl+d")
    await until(pilot, lambda: isinstance(app.screen, IssueDetailsScreen))
    await pilot.pause()
    return painted(app)


async def test_ctrl_d_on_a_turn_without_corrections_says_so_and_never_deletes_a_typed_letter() -> None:
    app = _app(GatedReply(turn_text(PROSE, TAKE_LAMP)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"ab", "home")
        await pilot.pause()
        assert "Details" not in painted(app).splitlines()[-1]  # the footer offers it only where there are issues
        await pilot.press("ctrl+d")  # no turn yet
        await pilot.pause()
        assert _field(app).value == "ab"
        assert any("Nothing to show yet" in str(n.message) for n in app._notifications)
        await pilot.press("ctrl+e", "backspace", "backspace")
        await send(pilot, "take lamp")
        await finished(pilot, app)
        await pilot.press(*"xyz", "home", "ctrl+d")
        await until(pilot, lambda: isinstance(app.screen, IssueDetailsScreen))
        await pilot.pause()
        assert "No corrections: nothing to show" in painted(app)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, IssueDetailsScreen))
        assert _field(app).value == "xyz"


async def test_the_details_of_an_offline_turn_say_it_counts_no_tokens() -> None:
    pack = parse_pack(SHORE_PACK, "shore.toml")
    app = StoryloomApp(Session(pack, OfflineNarrator(pack)), blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        assert "offline: no tokens" in await _details_after(pilot, app, "look")


async def test_the_side_panel_shows_what_the_story_marks_visible_and_the_details_the_rest() -> None:
    app = _app(GatedReply(turn_text(PROSE, TAKE_LAMP)))
    async with app.run_test(size=(120, 30)) as pilot:
        panel = app.game.side_panel.render().plain
        assert "Rocky Shore" in panel and "health 10/10" in panel
        assert "door open" not in panel and "Flags" not in panel  # a flag could give the plot away
        assert "door open: no" in await _details_after(pilot, app, "take lamp")

    shown = SHORE_PACK.replace('start = "shore"', 'start = "shore"\nvisible = ["room", "door_open"]')
    app = _app(pack=shown)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        panel = app.game.side_panel.render().plain
        assert "door open: no" in panel and "Rocky Shore" in panel
        assert "Carrying" not in panel and "health" not in panel


async def test_the_palettes_keys_are_the_games_keys() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"keys")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.3)
        screen = painted(app)
        for key, what in (("ctrl+z", "Undo"), ("ctrl+g", "Another version"), ("ctrl+d", "Details"), ("enter", "Send")):
            assert any(key in line and what in line for line in screen.splitlines()), (key, screen)
        assert "Move cursor" not in screen and "Delete" not in screen
        assert "f10" not in screen  # it quits only in a browser tab (storyloom serve)


async def test_after_the_palette_closes_the_input_keeps_its_focus_border() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        focused = _field(app).styles.border.top
        assert focused[0] == "tall"
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"toggle side")
        await pilot.pause(0.3)
        await pilot.press("enter")  # the screen restyles for the panel, after the palette was open
        await until(pilot, lambda: app.game.side_panel.display)
        await pilot.pause()
        assert app.focused is _field(app)
        assert _field(app).styles.border.top == focused
        assert "▔▔▔" in painted(app)  # the line's border is drawn


def _commands(app: StoryloomApp) -> list[str]:
    return [m.player_input for m in app.game.transcript.query(TurnMessage)]


async def test_a_multi_line_paste_plays_each_line_in_order() -> None:
    app = _app(*(GatedReply(turn_text(f"Turn {n}.")) for n in range(3)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"lo")
        _field(app).post_message(events.Paste("ok\nwait\n\n  inventory  \n"))
        await until(pilot, lambda: len(_commands(app)) == 3 and not app.game.running)
        assert _commands(app) == ["look", "wait", "inventory"]
        assert _field(app).value == ""


async def test_pasted_lines_left_after_a_failed_turn_are_counted_not_dropped_silently() -> None:
    bad = GatedReply(turn_text(PROSE, [{"op": "replace", "path": "/items/boulder", "value": "player"}]))
    app = _app(bad, budget=0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        _field(app).post_message(events.Paste("take boulder\nnorth\nup\n"))
        await until(pilot, lambda: "not played" in str(_field(app).border_subtitle))
        assert _commands(app) == ["take boulder"]
        assert "2 pasted lines not played" in painted(app)


def _overlaps(a: Any, b: Any) -> bool:
    return a.x < b.right and b.x < a.right and a.y < b.bottom and b.y < a.bottom


async def test_the_undo_note_does_not_cover_the_input_at_80x24() -> None:
    app = _app(GatedReply(turn_text(PROSE, TAKE_LAMP)))
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        await pilot.press("ctrl+z")
        await pilot.pause(0.3)
        field = _field(app).region
        assert not any(_overlaps(toast.region, field) for toast in app.screen.query(Toast))
        assert "undone" in painted(app)  # the turn's status line says so
        assert "▔▔▔" in painted(app).splitlines()[field.y]  # the input line is whole


async def test_with_a_message_focused_every_key_the_footer_shows_fits_at_80_columns() -> None:
    """The most keys at once: a focused turn with versions and corrections, a failed turn to retry,
    two branches. The footer showed `← → Versions  ^r Retry  ^d Details  ^z Undo  ^g Another
    version  ^t▏^p palette`: Story tree and Quit cut off."""
    stay = [{"op": "replace", "path": "/stats/health", "value": 9}]
    bad = turn_text(PROSE, [{"op": "replace", "path": "/items/boulder", "value": "player"}])
    replies = [
        turn_text("You wait.", stay),
        turn_text("You go north, up the Cliff Path.", [{"op": "replace", "path": "/location", "value": "path"}]),
    ]
    replies += [bad, turn_text(PROSE, TAKE_LAMP), bad, turn_text("You take the lamp.", TAKE_LAMP), bad, bad, bad]
    app = _app(*(GatedReply(text) for text in replies))
    async with app.run_test(size=(80, 24)) as pilot:
        for command in ("wait", "north"):
            await send(pilot, command)
            await finished(pilot, app)
        app.game.message(1).focus(scroll_visible=False)
        await pilot.press("ctrl+b")  # a second branch, from turn 1
        await until(pilot, lambda: app.game.play.story.ledger.branch == 2)
        await send(pilot, "take lamp")  # corrected once
        await until(pilot, lambda: app.game.play.story.state["items"]["lamp"] == "player" and not app.game.running)
        await pilot.press("ctrl+g")  # another version, corrected once too
        await until(
            pilot,
            lambda: app.game.play.story.versions is not None and len(app.game.play.story.versions.alternatives) == 2,
        )
        await finished(pilot, app)
        versions = app.game.play.story.versions
        await send(pilot, "north")  # fails: the retry key
        await until(pilot, lambda: app.game.play.story.pending is not None and not app.game.running)
        app.game.message(versions.turn).focus(scroll_visible=False)
        await pilot.pause(0.3)
        shown = [binding.description for _, binding, _, _ in app.screen.active_bindings.values() if binding.show]
        footer = painted(app).splitlines()[-1]
        keys = [key for key in app.screen.query("FooterKey") if "-command-palette" not in key.classes]
        palette = app.screen.query_one("FooterKey.-command-palette")
        assert {"Versions", "Retry", "Details"} <= set(shown), (shown, footer)  # the focused turn's own keys stay
        assert all(key.region.right <= palette.region.x for key in keys), footer
        for description in shown:
            assert description in footer, (description, footer)
        assert len(shown) >= 5


async def test_a_paste_while_a_turn_is_focused_goes_to_the_input_as_typing_does() -> None:
    """Played in tmux: after shift+tab to browse versions, a pasted `look\\nwait\\ninventory` did nothing at all."""
    app = _app(GatedReply(turn_text(PROSE, TAKE_LAMP)), *(GatedReply(turn_text(f"Turn {n}.")) for n in range(2)))
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        message = app.game.latest_message()
        assert message is not None
        message.focus(scroll_visible=False)
        await pilot.pause()
        app.post_message(events.Paste("wait\n inventory\n"))  # as the terminal sends it, to the app
        await until(pilot, lambda: len(_commands(app)) == 3 and not app.game.running)
        assert _commands(app) == ["take lamp", "wait", "inventory"]
        message.focus(scroll_visible=False)
        await pilot.pause()
        app.post_message(events.Paste("look"))
        await until(pilot, lambda: _field(app).value == "look")
        assert app.focused is _field(app)


async def test_ctrl_d_after_ctrl_z_says_the_turn_was_undone() -> None:
    """In tmux: ctrl+z on the Cloak's winning turn, then ctrl+d: 'Outcome: committed at once', for a
    turn that no longer counts."""
    app = _app(GatedReply(turn_text(PROSE, TAKE_LAMP)))
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        await pilot.press("ctrl+z")
        await until(pilot, lambda: "undone" in painted(app))
        await pilot.press("ctrl+d")
        await until(pilot, lambda: isinstance(app.screen, IssueDetailsScreen))
        await pilot.pause()
        screen = " ".join(line.strip(" │") for line in painted(app).splitlines())
        assert "Undone since (ctrl+z): it no longer counts." in screen, screen
