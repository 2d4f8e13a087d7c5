"""Snapshots of what a player sees at each point of a turn's life (pytest-textual-snapshot).

Baselines live in the top-level snapshots/ folder (snapshots/test_tui_snapshots/);
update them with `pytest tests/test_tui_snapshots.py --snapshot-update` and look
at every changed SVG before committing it. Each scene is driven by a gated,
scripted narrator, so nothing depends on timing: no clock, no blinking cursor.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pytest_textual_snapshot import SVGImageExtension
from syrupy.assertion import SnapshotAssertion
from textual.events import Mount

from storyloom.engine.lifecycle import Session
from storyloom.engine.packs import parse_pack
from storyloom.tui import app as app_module
from storyloom.tui.app import Opening, StoryloomApp
from storyloom.tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from storyloom.tui.testing.pilot import until
from storyloom.tui.widgets.command_input import CommandInput
from tests.conftest import SHORE_PACK

SNAPSHOTS = Path(__file__).resolve().parent.parent / "snapshots"
TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
TAKE_BOTH = [*TAKE_LAMP, {"op": "replace", "path": "/items/boulder", "value": "player"}]
PROSE = (
    "You crouch among the black rocks and lift the brass lamp. Its glass is cold and crusted "
    "with salt, and the wick is dry.\n\nBehind you the waves keep breaking."
)
CHANGED = (
    "You crouch among the black rocks and lift the brass lamp. The boulder beside it will not "
    "move, however hard you push.\n\nBehind you the waves keep breaking."
)


class _TopLevelSVG(SVGImageExtension):
    """SVG snapshots stored under the repository's snapshots/ folder, not tests/__snapshots__."""

    @classmethod
    def dirname(cls, *, test_location: Any) -> str:
        return str(SNAPSHOTS / test_location.basename)


class _TopLevelAssertion(SnapshotAssertion):
    def use_extension(self, extension_class: Any = None) -> SnapshotAssertion:
        if extension_class is SVGImageExtension:
            extension_class = _TopLevelSVG
        return super().use_extension(extension_class)


@pytest.fixture
def snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """pytest-textual-snapshot's `snap_compare` uses this: redirect its SVGs to snapshots/."""
    return _TopLevelAssertion(
        session=snapshot.session,
        extension_class=snapshot.extension_class,
        test_location=snapshot.test_location,
        update_snapshots=snapshot.update_snapshots,
    )


def scene(*replies: GatedReply, budget: int = 2) -> StoryloomApp:
    session = Session(parse_pack(SHORE_PACK, "shore.toml"), GatedNarrator(list(replies)), budget=budget)
    return StoryloomApp(session, blink=False)


async def send(pilot: Any, command: str) -> None:
    await until(pilot, lambda: isinstance(pilot.app.focused, CommandInput))
    await pilot.press(*command, "enter")


def statuses_painted(app: Any) -> bool:
    """Every status row shows its status (one is held at least 250 ms, "writing…" waits as long)."""
    return all(message.status.painted for message in app.game.transcript.live_messages())


async def settled(pilot: Any) -> None:
    app = pilot.app
    await until(pilot, lambda: app.game.latest_message() is not None and not app.game.running)
    await until_painted(pilot)


async def held(pilot: Any, reply: GatedReply) -> None:
    await until(pilot, lambda: reply.waiting)
    await until_painted(pilot)
    await pilot.pause()


async def until_painted(pilot: Any) -> None:
    for _ in range(100):
        if statuses_painted(pilot.app):
            break
        await pilot.pause(0.05)
    await pilot.pause()


def test_intro_80x24(snap_compare):
    assert snap_compare(scene(), terminal_size=(80, 24))


def test_intro_160x50_with_side_panel(snap_compare):
    assert snap_compare(scene(), terminal_size=(160, 50))


class _StillLoading(StoryloomApp):
    """The app as it is before its worker has loaded the story (the worker is never started)."""

    CSS_PATH = Path(app_module.__file__).with_name("app.tcss")  # a subclass's CSS path is read beside its own module

    def on_mount(self, event: Mount) -> None:
        event.prevent_default()


def test_opening_before_the_story_has_loaded_100x30(snap_compare):
    """Plain `storyloom`'s first frame: the intro and the input where the game will have them."""
    pack = parse_pack(SHORE_PACK, "shore.toml")
    app = _StillLoading(Opening(pack.title, pack.intro, load=lambda: scene().session), blink=False)
    assert snap_compare(app, terminal_size=(100, 30))


def test_mid_stream(snap_compare):
    first = GatedReply(turn_text(PROSE, TAKE_LAMP), pause_at=96, pause=asyncio.Event())

    async def run_before(pilot: Any) -> None:
        await send(pilot, "take lamp")
        await held(pilot, first)

    assert snap_compare(scene(first), terminal_size=(80, 24), run_before=run_before)


def test_correcting(snap_compare):
    correction = GatedReply(turn_text(None, TAKE_LAMP), before=asyncio.Event())

    async def run_before(pilot: Any) -> None:
        await send(pilot, "take lamp")
        await held(pilot, correction)

    app = scene(GatedReply(turn_text(PROSE, TAKE_BOTH)), correction)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_corrected_prose_swapped(snap_compare):
    async def run_before(pilot: Any) -> None:
        await send(pilot, "take lamp")
        await settled(pilot)

    app = scene(GatedReply(turn_text(PROSE, TAKE_BOTH)), GatedReply(turn_text(CHANGED, TAKE_LAMP)))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_corrected_prose_kept(snap_compare):
    async def run_before(pilot: Any) -> None:
        await send(pilot, "take lamp")
        await settled(pilot)

    app = scene(GatedReply(turn_text(PROSE, TAKE_BOTH)), GatedReply(turn_text(None, TAKE_LAMP)))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_failed_with_retry_key(snap_compare):
    async def run_before(pilot: Any) -> None:
        await send(pilot, "take lamp")
        await settled(pilot)

    app = scene(GatedReply(turn_text(PROSE, TAKE_BOTH)), GatedReply(turn_text(None, TAKE_BOTH)), budget=1)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_failed_message_focused_shows_r_and_d(snap_compare):
    async def run_before(pilot: Any) -> None:
        await send(pilot, "take lamp")
        await settled(pilot)
        await pilot.press("shift+tab")

    app = scene(GatedReply(turn_text(PROSE, TAKE_BOTH)), GatedReply(turn_text(None, TAKE_BOTH)), budget=1)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_cancelled(snap_compare):
    first = GatedReply(turn_text(PROSE, TAKE_LAMP), pause_at=96, pause=asyncio.Event())

    async def run_before(pilot: Any) -> None:
        await send(pilot, "take lamp")
        await held(pilot, first)
        await pilot.press("escape")
        await settled(pilot)

    assert snap_compare(scene(first), terminal_size=(80, 24), run_before=run_before)


def test_issue_details(snap_compare):
    async def run_before(pilot: Any) -> None:
        await send(pilot, "take lamp")
        await settled(pilot)
        await pilot.press("ctrl+d")
        await pilot.pause()

    app = scene(GatedReply(turn_text(PROSE, TAKE_BOTH)), GatedReply(turn_text(CHANGED, TAKE_LAMP)))
    assert snap_compare(app, terminal_size=(100, 34), run_before=run_before)


def test_side_panel_with_inventory_160x50(snap_compare):
    async def run_before(pilot: Any) -> None:
        await send(pilot, "take lamp")
        await settled(pilot)
        await send(pilot, "north")
        await settled(pilot)

    north = [{"op": "replace", "path": "/location", "value": "path"}]
    app = scene(
        GatedReply(turn_text(PROSE, TAKE_LAMP, ["go north", "look at the lamp"])),
        GatedReply(
            turn_text(
                "You climb north onto the Cliff Path, the lamp swinging at your side.",
                north,
                ["take the key", "go back south"],
            )
        ),
    )
    assert snap_compare(app, terminal_size=(160, 50), run_before=run_before)


def test_untrusted_prose_shows_literally(snap_compare):
    hostile = "Look: [bold red]x[/] and [@click=app.quit]q[/] and \x1b[31mred\x1b[0m text."

    async def run_before(pilot: Any) -> None:
        await send(pilot, "look")
        await settled(pilot)

    assert snap_compare(scene(GatedReply(turn_text(hostile))), terminal_size=(80, 24), run_before=run_before)


def test_second_of_three_versions_focused(snap_compare):
    """Three versions of the latest turn, browsed back to the second: `‹ 2/3 ›` under its prose,
    the side panel showing that version's world, the keys to browse in the footer."""
    second = "The lamp is wedged fast between two rocks, and you leave it where it is."
    app = scene(
        GatedReply(turn_text(PROSE, TAKE_LAMP)),
        GatedReply(turn_text(second, [])),
        GatedReply(turn_text(CHANGED, TAKE_LAMP)),
    )

    async def run_before(pilot: Any) -> None:
        await send(pilot, "take lamp")
        await settled(pilot)
        for _ in range(2):
            await pilot.press("ctrl+g")
            await settled(pilot)
        pilot.app.game.latest_message().focus(scroll_visible=False)
        await pilot.press("left")
        await until(pilot, lambda: pilot.app.game.latest_message().chosen == 2)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


def test_another_version_failed(snap_compare):
    """Another version could not be made consistent: the chosen one shows again, and the row says so."""
    bad = turn_text("You drag the boulder off.", TAKE_BOTH)
    app = scene(GatedReply(turn_text(PROSE, TAKE_LAMP)), GatedReply(bad), GatedReply(bad), GatedReply(bad), budget=1)

    async def run_before(pilot: Any) -> None:
        await send(pilot, "take lamp")
        await settled(pilot)
        await pilot.press("ctrl+g")
        await settled(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_story_over_100x30(snap_compare):
    """The story reached its ending: the ending says what now; a command sent after it stays unplayed."""
    to_the_path = [
        *TAKE_LAMP,
        {"op": "replace", "path": "/flags/door_open", "value": True},
        {"op": "replace", "path": "/location", "value": "path"},
    ]

    async def run_before(pilot: Any) -> None:
        await send(pilot, "climb")
        await settled(pilot)
        await send(pilot, "go up")
        await until(pilot, lambda: "The story is over" in pilot.app.game.command_input.placeholder)
        await settled(pilot)
        await send(pilot, "go down")
        await pilot.pause()

    app = scene(
        GatedReply(turn_text("You take the brass lamp, open the way and climb to the Cliff Path.", to_the_path)),
        GatedReply(
            turn_text(
                "You climb to the Lamp Room with the lamp, and light it.",
                [{"op": "replace", "path": "/location", "value": "tower"}],
                ["close hatch", "go down"],
            )
        ),
    )
    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)
