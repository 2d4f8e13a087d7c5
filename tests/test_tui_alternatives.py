"""Other versions of the latest turn, as the player meets them: ctrl+g writes one into the same
message, `‹ 2/3 ›` says which shows, left/right browse them (prose and world together), and the
next command fixes the one showing."""

from __future__ import annotations

import asyncio
from typing import Any

from storyloom.engine.lifecycle import CommittedStory, Session
from storyloom.engine.packs import parse_pack
from storyloom.tui.app import StoryloomApp
from storyloom.tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from storyloom.tui.testing.pilot import until
from storyloom.tui.widgets.turn_message import TurnMessage
from tests.conftest import SHORE_PACK

TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
FIRST = "You lift the brass lamp from the rocks."
SECOND = "The lamp stays wedged between the rocks; you leave it be."
THIRD = "Salt has crusted the brass lamp to the stone, and it will not come free however you pull."


def make_app(*replies: GatedReply, **kwargs: Any) -> tuple[StoryloomApp, Session]:
    session = Session(parse_pack(SHORE_PACK, "shore.toml"), GatedNarrator(list(replies)), budget=2)
    return StoryloomApp(session, blink=False, **kwargs), session


async def idle(pilot: Any, app: StoryloomApp) -> None:
    await until(pilot, lambda: app.game.latest_message() is not None and not app.game.running)
    await pilot.pause()


def carrying(app: StoryloomApp) -> bool:
    return "brass lamp" in app.game.side_panel.render().plain.split("Carrying")[-1]


async def test_three_versions_browse_with_prose_and_world_and_the_next_command_fixes_the_chosen_one():
    app, session = make_app(
        GatedReply(turn_text(FIRST, TAKE_LAMP)),
        GatedReply(turn_text(SECOND, [])),
        GatedReply(turn_text(THIRD, [])),
        GatedReply(turn_text("You look around.", [])),
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"take lamp", "enter")
        await idle(pilot, app)
        message = app.game.latest_message()
        assert message is not None and message.status.plain_text == ""  # one version: nothing to say
        assert session.state["items"]["lamp"] == "player"

        for expected in (SECOND, THIRD):
            await pilot.press("ctrl+g")
            await idle(pilot, app)
            assert app.game.latest_message() is message  # the same widget, no new message
            assert message.prose.text == expected
        assert message.status.plain_text == "‹ 3/3 ›"
        assert session.state["items"]["lamp"] == "shore" and not carrying(app)

        message.focus()
        await pilot.press("left", "left")
        await pilot.pause()
        assert message.status.plain_text == "‹ 1/3 ›" and message.prose.text == FIRST
        assert session.state["items"]["lamp"] == "player"  # the world swaps with the prose
        assert carrying(app)
        await pilot.press("right")
        await pilot.pause()
        assert message.status.plain_text == "‹ 2/3 ›" and message.prose.text == SECOND
        assert not carrying(app)

        app.game.command_input.focus()
        await pilot.press(*"look", "enter")
        await idle(pilot, app)
        assert message.status.plain_text == "version 2 of 3"
        assert not message.can_browse and not message.can_regenerate
        assert session.history[0].turn.narrative == SECOND  # the one showing is the one that counts
        message.focus()
        await pilot.press("left")
        await pilot.pause()
        assert message.prose.text == SECOND


async def test_a_failed_other_version_leaves_the_chosen_one_showing_and_committed():
    bad = GatedReply('{"narrative": "x", "state_patch": [{"op": "replace", "path": "/items/nope", "value": 1}]}')
    app, session = make_app(GatedReply(turn_text(FIRST, TAKE_LAMP)), bad, bad, bad)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"take lamp", "enter")
        await idle(pilot, app)
        message = app.game.latest_message()
        assert message is not None
        await pilot.press("ctrl+g")
        await idle(pilot, app)
        assert message.prose.text == FIRST
        assert message.status.plain_text.startswith("another version failed")
        assert session.state["items"]["lamp"] == "player" and carrying(app)
        assert message.can_regenerate  # it may be asked again


async def test_escape_during_another_version_keeps_the_chosen_one():
    gate = asyncio.Event()
    app, session = make_app(
        GatedReply(turn_text(FIRST, TAKE_LAMP)), GatedReply(turn_text(SECOND, []), pause_at=40, pause=gate)
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"take lamp", "enter")
        await idle(pilot, app)
        message = app.game.latest_message()
        assert message is not None
        await pilot.press("ctrl+g")
        await until(pilot, lambda: message.prose.text.startswith(SECOND[:8]))
        await pilot.press("escape")
        await idle(pilot, app)
        assert message.prose.text == FIRST
        assert message.status.plain_text == "another version cancelled"
        assert session.state["items"]["lamp"] == "player"


async def test_ctrl_g_on_the_focused_latest_message_asks_for_another_version_and_g_types():
    app, _ = make_app(GatedReply(turn_text(FIRST, TAKE_LAMP)), GatedReply(turn_text(SECOND, [])))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"take lamp", "enter")
        await idle(pilot, app)
        message = app.game.latest_message()
        assert isinstance(message, TurnMessage)
        message.focus()
        await pilot.pause()
        await pilot.press("g")  # a letter types, whatever has focus
        assert app.game.command_input.value == "g" and message.prose.text == FIRST
        message.focus()
        await pilot.pause()
        await pilot.press("ctrl+g")
        await idle(pilot, app)
        assert message.prose.text == SECOND and message.status.plain_text == "‹ 2/2 ›"


async def test_a_resumed_story_browses_the_versions_of_its_latest_turn():
    app, session = make_app(GatedReply(turn_text(FIRST, TAKE_LAMP)), GatedReply(turn_text(SECOND, [])))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"take lamp", "enter")
        await idle(pilot, app)
        await pilot.press("ctrl+g")
        await idle(pilot, app)
    versions = session.versions
    assert versions is not None
    resumed = Session(session.pack, GatedNarrator([]), next_turn=session.next_turn, budget=2)
    resumed.restore(
        CommittedStory(session.state, session.history, tuple(session._undo_stack), session.commits, versions)
    )
    app = StoryloomApp(resumed, blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.pause()
        message = app.game.latest_message()
        assert message is not None and message.prose.text == SECOND
        assert message.status.plain_text == "‹ 2/2 ›"
        message.focus()
        await pilot.press("left")
        await pilot.pause()
        assert message.prose.text == FIRST and resumed.state["items"]["lamp"] == "player" and carrying(app)


async def test_after_ctrl_z_the_new_latest_turns_versions_are_browsable_again():
    app, session = make_app(
        GatedReply(turn_text(FIRST, TAKE_LAMP)),
        GatedReply(turn_text(SECOND, [])),
        GatedReply(turn_text("You look around.", [])),
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"take lamp", "enter")
        await idle(pilot, app)
        await pilot.press("ctrl+g")
        await idle(pilot, app)
        message = app.game.latest_message()
        await pilot.press(*"look", "enter")
        await idle(pilot, app)
        assert message is not None and message.status.plain_text == "version 2 of 2" and not message.can_browse
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert message.status.plain_text == "‹ 2/2 ›" and message.can_browse and message.can_regenerate
        message.focus()
        await pilot.press("left")
        await pilot.pause()
        assert message.prose.text == FIRST and session.state["items"]["lamp"] == "player" and carrying(app)


async def test_a_resumed_save_whose_last_act_was_an_undo_browses_the_new_latest_turns_versions(tmp_path):
    from storyloom.engine.narrators.offline import OfflineNarrator
    from storyloom.saves.resume import resume
    from tests.test_saves_kit import played_save_async

    walk = ["take rope", "/regenerate", "/choose 2", "north", "/undo"]
    path, live, _ = await played_save_async(tmp_path / "s.jsonl", walk, faults=0.0)
    resumed = resume(path, OfflineNarrator(live.pack, seed=7))
    with resumed.journal:
        app = StoryloomApp(resumed.session, blink=False, past=lambda: resumed.past)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await pilot.pause()
            message = app.game.latest_message()
            assert message is not None and message.turn == 1
            assert message.status.plain_text == "‹ 2/2 ›" and message.can_browse
            message.focus()
            await pilot.press("left")
            await pilot.pause()
            assert message.status.plain_text == "‹ 1/2 ›" and resumed.session.versions.chosen == 1
