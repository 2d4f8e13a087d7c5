"""Hostile model text in the Textual app: nothing painted acts on the terminal, clicks run nothing.

The app is run headless (`App.run_test`); what it paints is read from the compositor's
strips (the segments a driver writes to the terminal) and from an SVG screenshot. Model
prose and suggestions carry every sample of `tests/hardening/corpus.py`.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from storyloom.engine.lifecycle import Session
from storyloom.engine.narration import TransientNarratorError
from storyloom.engine.packs import load_pack, parse_pack
from storyloom.tui.app import StoryloomApp
from storyloom.tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from storyloom.tui.testing.pilot import until
from tests.conftest import SHORE_PACK
from tests.hardening.corpus import ALL, MARKUP, assert_inert
from tests.hardening.figures import tally
from tests.test_tui_app import saved_app

SAMPLES = list(ALL.values())
BATCHES = [SAMPLES[i : i + 4] for i in range(0, len(SAMPLES), 4)]
TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
TAKE_BOTH = [*TAKE_LAMP, {"op": "replace", "path": "/items/boulder", "value": "player"}]
PROSE = "You lift the brass lamp from the rocks."


def make_app(*replies: GatedReply, pack_text: str = SHORE_PACK, **session_options: Any) -> StoryloomApp:
    session = Session(parse_pack(pack_text, "shore.toml"), GatedNarrator(list(replies)), **session_options)
    return StoryloomApp(session, blink=False)


def painted_segments(app: StoryloomApp) -> str:
    """Every segment's text the compositor would hand the driver now."""
    return "".join(segment.text for strip in app.screen._compositor.render_strips() for segment in strip)


async def send(pilot: Any, command: str) -> None:
    await pilot.press(*command, "enter")


async def settled(pilot: Any, app: StoryloomApp) -> None:
    await until(pilot, lambda: app.game.latest_message() is not None and not app.game.running)
    await pilot.pause()


async def test_hostile_prose_and_suggestions_paint_no_control_sequence():
    replies = [
        GatedReply(turn_text(f"You look around. {' '.join(batch)} The sea.", suggestions=["look", "wait"]))
        for batch in BATCHES
    ]
    app = make_app(*replies)
    async with app.run_test(size=(120, 40)) as pilot:
        for index in range(len(BATCHES)):
            app.game.command_input.value = f"look {index} \x1b[2J\x1b]0;title\x07 \u202eevil"
            await pilot.press("enter")
            await settled(pilot, app)
            screen = painted_segments(app)
            assert_inert(screen, f"the screen after turn {index + 1}")
            assert "VISIBLE" in screen
        assert_inert(app.export_screenshot(), "the SVG screenshot")
        assert app.is_running and app.return_value is None
    tally("hostile text: UI prose and commands (painted segments, SVG)", len(SAMPLES))


async def test_hostile_suggestions_paint_no_control_sequence():
    replies = [GatedReply(turn_text("You look around.", suggestions=[s[:80] for s in batch])) for batch in BATCHES]
    app = make_app(*replies)
    async with app.run_test(size=(120, 40)) as pilot:
        for index in range(len(BATCHES)):
            await send(pilot, f"look {index}")
            await settled(pilot, app)
            assert_inert(app.game.command_input.placeholder, "the suggestions in the input's placeholder")
            assert_inert(painted_segments(app), f"the screen after turn {index + 1}")
    tally("hostile text: UI suggestions (placeholder, painted segments)", len(SAMPLES))


async def test_a_hostile_story_pack_paints_no_control_sequence_in_title_intro_or_panel():
    hostile = (Path(__file__).parent / "packs" / "hostile.toml").read_text(encoding="utf-8")
    session = Session(parse_pack(hostile, "hostile.toml"), GatedNarrator([]))
    app = StoryloomApp(session, blink=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        assert_inert(painted_segments(app), "the screen of a hostile pack")
        assert_inert(app.export_screenshot(), "the SVG of a hostile pack")
    tally("hostile text: UI hostile story pack")


def _click_points(app: StoryloomApp, widget: Any, *, every: int | None) -> list[tuple[int, int]]:
    """Offsets inside `widget` to click: each line's first cell and the middle of each word it paints
    (where a parsed `@click` or link would sit), or every `every`-th cell."""
    region = widget.region
    strips = app.screen._compositor.render_strips()
    points = []
    for y in range(region.height):
        line = "".join(segment.text for segment in strips[region.y + y])[region.x : region.right]
        if every:
            points += [(x, y) for x in range(0, region.width, every)]
            continue
        points.append((0, y))
        points += [(m.start() + len(m.group()) // 2, y) for m in re.finditer(r"\S+", line)]
    return points


async def click_all_over_markup(monkeypatch: Any, every: int | None) -> int:
    prose = "\n\n".join(MARKUP.values())
    app = make_app(GatedReply(turn_text(prose)))
    ran: list[str] = []
    async with app.run_test(size=(100, 40)) as pilot:
        original = app.run_action

        async def recording(action: Any, *args: Any, **kwargs: Any) -> Any:
            ran.append(str(action))
            return await original(action, *args, **kwargs)

        monkeypatch.setattr(app, "run_action", recording)
        await send(pilot, "look")
        await settled(pilot, app)
        prose_widget = app.game.latest_message().prose
        points = _click_points(app, prose_widget, every=every)
        for offset in points:
            await pilot.click(prose_widget, offset=offset)
        await pilot.pause()
        assert app.is_running and app.return_value is None
        assert len(app.screen_stack) == 1  # no palette or other screen opened
        assert not [a for a in ran if any(w in a for w in ("quit", "bell", "command_palette", "dismiss"))], ran
        screen = painted_segments(app)
        for sample in (
            "[@click=app.quit]VISIBLE[/]",
            "[link=https://evil.example/]VISIBLE[/link]",
            "[VISIBLE](file:///etc/passwd)",
        ):
            assert sample in screen
    return len(points)


async def test_clicking_on_every_word_of_model_markup_runs_no_action(monkeypatch):
    clicks = await click_all_over_markup(monkeypatch, every=None)
    tally("hostile text: clicks on model markup in the UI", clicks)


async def test_resizing_to_20x8_and_back_during_a_correction_keeps_the_geometry():
    gate = asyncio.Event()
    app = make_app(GatedReply(turn_text(PROSE, TAKE_BOTH)), GatedReply(turn_text(None, TAKE_LAMP), before=gate))
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await until(
            pilot,
            lambda: app.game.latest_message() is not None and app.game.latest_message().status.kind == "correcting",
        )
        await pilot.pause()
        message = app.game.latest_message()
        before = (message.region, message.prose.region, message.status.region)
        await pilot.resize_terminal(20, 8)
        await pilot.pause()
        await pilot.resize_terminal(7, 3)
        await pilot.pause()
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        assert (message.region, message.prose.region, message.status.region) == before
        assert message.status.kind == "correcting"
        gate.set()
        await settled(pilot, app)
        assert message.outcome == "committed" and app.session.state["items"]["lamp"] == "player"
        assert message.region.x == before[0].x and message.region.width == before[0].width
        assert app.is_running
    tally("faults: resize to 20x8 (and 7x3) and back during a correction", 3)


async def test_a_hung_narrator_leaves_the_ui_responsive_esc_cancels_and_retry_commits():
    never = asyncio.Event()
    app = make_app(GatedReply(turn_text(PROSE, TAKE_LAMP), before=never), GatedReply(turn_text(PROSE, TAKE_LAMP)))
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await until(pilot, lambda: app.game.running)
        await pilot.press(*"typing still works")
        assert app.game.command_input.value == "typing still works"
        await pilot.press("escape")
        await settled(pilot, app)
        message = app.game.latest_message()
        assert message.outcome == "cancelled" and app.session.state["items"]["lamp"] == "shore"
        await pilot.press("ctrl+r")
        await settled(pilot, app)
        assert message.outcome == "committed" and app.session.state["items"]["lamp"] == "player"
    tally("faults: hung narrator in the UI (cancel, retry)")


async def test_transient_faults_show_a_status_in_words_and_retry_commits():
    async def no_sleep(_: float) -> None:
        return None

    fault = TransientNarratorError("overloaded \x1b[31m(HTTP 529)")
    replies = [GatedReply(turn_text(PROSE, TAKE_LAMP), error=fault) for _ in range(5)]
    app = make_app(*replies, GatedReply(turn_text(PROSE, TAKE_LAMP)), sleep=no_sleep)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await settled(pilot, app)
        message = app.game.latest_message()
        assert message.outcome == "failed" and "retry" in message.status.plain_text
        assert app.session.state["items"]["lamp"] == "shore"
        assert_inert(painted_segments(app), "the screen after a narrator fault")
        await pilot.press("ctrl+r")
        await settled(pilot, app)
        assert message.outcome == "committed"
    tally("faults: transient narrator faults in the UI (failed, retry)")


async def test_the_palette_export_writes_no_control_sequence(tmp_path, monkeypatch):
    from storyloom.saves.locations import saves_dir

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # the export goes beside the saves
    hostile = " ".join(ALL.values())
    app = saved_app(tmp_path, GatedReply(turn_text(f"You look. {hostile}")))
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "look \x1b]0;x\x07")
        await settled(pilot, app)
        app.action_export()
        await pilot.pause()
    assert_inert((saves_dir() / "storyloom-shore.md").read_text(encoding="utf-8"), "the palette's exported transcript")


def test_the_hostile_pack_is_the_one_the_ui_test_reads():
    assert load_pack(str(Path(__file__).parent / "packs" / "hostile.toml")).id == "hostile"
