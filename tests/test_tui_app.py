"""The terminal UI as a player meets it: one message per turn, statuses in words, keys that do what they say."""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from textual import events

from storyloom.engine.events import Event
from storyloom.engine.lifecycle import CommittedStory, Session
from storyloom.engine.narration import Chunk, NarrationRequest, TransientNarratorError
from storyloom.engine.packs import parse_pack
from storyloom.saves.format import SaveHeader
from storyloom.saves.writer import Journal
from storyloom.tui._textual_internals import screen_compositor
from storyloom.tui.app import StoryloomApp
from storyloom.tui.cli.ui import run_app
from storyloom.tui.screens.issue_details import IssueDetailsScreen
from storyloom.tui.screens.open_save import OpenSaveScreen
from storyloom.tui.session import PlaySession
from storyloom.tui.testing.frames import FrameRecorder
from storyloom.tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from storyloom.tui.testing.pilot import until
from storyloom.tui.widgets.archived_turns import ArchivedTurns
from storyloom.tui.widgets.transcript import FollowHint
from storyloom.tui.widgets.turn_message import TurnMessage
from tests.conftest import SHORE_PACK
from tests.test_saves_kit import shore_pack_file

TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
TAKE_BOTH = [*TAKE_LAMP, {"op": "replace", "path": "/items/boulder", "value": "player"}]
PROSE = "You lift the brass lamp from the rocks."


def make_app(*replies: GatedReply, budget: int = 2, sleep: Any = None, **kwargs: Any) -> StoryloomApp:
    extra = {"sleep": sleep} if sleep is not None else {}
    session = Session(parse_pack(SHORE_PACK, "shore.toml"), GatedNarrator(list(replies)), budget=budget, **extra)
    return StoryloomApp(session, blink=False, **kwargs)


def saved_app(folder: Path, *replies: GatedReply, budget: int = 2) -> StoryloomApp:
    """The app on a story saved as it is played (to `folder/game.jsonl`), as `storyloom` plays one."""
    pack, pack_path = shore_pack_file(folder)
    narrator = GatedNarrator(list(replies))
    session = Session(pack, narrator, budget=budget)
    header = SaveHeader.for_session(pack, narrator, source=str(pack_path), budget=budget)
    play = PlaySession.around(session, Journal.create(folder / "game.jsonl", header))
    return StoryloomApp(session, play=play, blink=False)


async def send(pilot: Any, command: str) -> None:
    await pilot.press(*command, "enter")


async def finished(pilot: Any, app: StoryloomApp) -> None:
    await until(pilot, lambda: app.game.latest_message() is not None and not app.game.running)
    await pilot.pause()


def painted(app: StoryloomApp) -> str:
    """The screen's text as painted now."""
    return "\n".join(strip.text for strip in screen_compositor(app.screen).render_strips())


class _AskedAfterEcho(GatedNarrator):
    """A narrator that notes, when it is asked for a turn, whether the screen already shows the command."""

    def __init__(self, replies: list[GatedReply]) -> None:
        super().__init__(replies)
        self.recorder: FrameRecorder | None = None
        self.echo_painted: list[bool] = []

    async def narrate(self, request: NarrationRequest) -> AsyncIterator[Chunk]:
        assert self.recorder is not None
        self.echo_painted.append(any(frame.row_of("› take lamp") is not None for frame in self.recorder.frames))
        async for chunk in super().narrate(request):
            yield chunk


async def test_the_command_shows_before_the_narrator_is_asked():
    """Enter shows the command in the story at once: its frame is painted before the narrator is asked
    for anything, so a slow request or connection never holds back the echo of what was typed."""
    narrator = _AskedAfterEcho([GatedReply(turn_text(PROSE, TAKE_LAMP))])
    app = StoryloomApp(Session(parse_pack(SHORE_PACK, "shore.toml"), narrator), blink=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        with FrameRecorder(app, screen=True) as recorder:
            narrator.recorder = recorder
            await send(pilot, "take lamp")
            await finished(pilot, app)
    assert narrator.echo_painted == [True]


async def test_the_intro_is_shown_first():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "Grey water, black rocks." in painted(app)
        assert not app.game.transcript.query(TurnMessage)


async def test_markup_actions_and_escapes_in_model_prose_do_nothing():
    hostile = "Look: [bold red]x[/] and [@click=app.quit]q[/] and \x1b[31mred\x1b[0m and \u202eevil."
    app = make_app(GatedReply(turn_text(hostile)))
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "look")
        await finished(pilot, app)
        message = app.game.latest_message()
        await pilot.click(message.prose, offset=(12, 0))  # where "q" would be if markup were parsed
        await pilot.pause()
        assert app.is_running and app.return_value is None
        screen = painted(app)
        assert "[bold red]x[/]" in screen
        assert "[@click=app.quit]q[/]" in screen
        assert "red and evil." in screen and "\x1b" not in screen and "[31m" not in screen


async def test_one_widget_lives_through_correct_fail_retry_and_commit():
    gate = asyncio.Event()
    app = make_app(
        GatedReply(turn_text(PROSE, TAKE_BOTH)),
        GatedReply(turn_text(None, TAKE_BOTH)),
        GatedReply(turn_text(PROSE, TAKE_LAMP), before=gate),
        budget=1,
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await until(
            pilot, lambda: app.game.latest_message() is not None and app.game.latest_message().outcome == "failed"
        )
        message = app.game.latest_message()
        assert message.status.plain_text == "couldn't make this turn consistent · ^r retry · ^d details"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: message.outcome == "streaming")
        assert message.status.plain_text == "writing…"  # no prose yet: a sign of life, in words
        gate.set()
        await finished(pilot, app)
        assert message.status.plain_text == ""
        assert app.game.latest_message() is message
        assert message.id == "turn-1"
        assert len(app.game.transcript.query(TurnMessage)) == 1
        assert message.outcome == "committed"
        assert "brass lamp" in app.game.side_panel.render().plain


async def test_typing_r_types_it_whatever_has_focus_and_ctrl_r_on_the_focused_message_retries():
    app = make_app(GatedReply(turn_text(PROSE, TAKE_BOTH)), GatedReply(turn_text(PROSE, TAKE_LAMP)), budget=0)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        message = app.game.latest_message()
        assert message.outcome == "failed"
        await pilot.press("r")
        assert app.game.command_input.value == "r"
        assert message.outcome == "failed"
        await pilot.press("backspace", "shift+tab")
        assert app.focused is message
        await pilot.press("r", "d")  # letters on a focused message type: they never act on it
        assert message.outcome == "failed" and app.game.command_input.value == "rd"
        assert app.focused is app.game.command_input
        await pilot.press("backspace", "backspace", "shift+tab")
        assert app.focused is message
        await pilot.press("ctrl+r")
        await finished(pilot, app)
        assert message.outcome == "committed"
        await pilot.press("shift+tab", "l", "o")
        assert app.focused is app.game.command_input and app.game.command_input.value == "lo"


async def test_a_command_typed_fast_after_shift_tab_is_sent_by_its_enter():
    """shift+tab, a command and Enter arriving together (as a terminal delivers fast typing): every
    key reaches the input line before the shift+tab has bubbled up to its binding and moved the
    focus to the message. The Enter still sends the command."""
    app = make_app(GatedReply(turn_text(PROSE, TAKE_BOTH)), GatedReply(turn_text(PROSE, TAKE_LAMP)))
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        keys = [("shift+tab", None), ("l", "l"), ("o", "o"), ("o", "o"), ("k", "k"), ("enter", "\r")]
        for key, character in keys:
            app.post_message(events.Key(key, character))  # all queued before any is handled
        await until(pilot, lambda: app.game.message(2) is not None)
        await finished(pilot, app)
        assert app.game.message(2).player_input == "look"
        assert app.game.command_input.value == ""


async def test_the_side_panel_shows_only_the_committed_state():
    gate = asyncio.Event()
    app = make_app(GatedReply(turn_text(PROSE, TAKE_BOTH)), GatedReply(turn_text(None, TAKE_LAMP), before=gate))
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await until(
            pilot, lambda: app.game.latest_message() is not None and app.game.latest_message().outcome == "correcting"
        )
        panel = app.game.side_panel.render().plain
        assert "nothing" in panel and "brass lamp" not in panel
        gate.set()
        await finished(pilot, app)
        panel = app.game.side_panel.render().plain
        assert "brass lamp" in panel and "boulder" not in panel


async def test_a_kept_prose_is_not_touched_and_a_changed_one_is_swapped():
    gate = asyncio.Event()
    app = make_app(
        GatedReply(turn_text(PROSE, TAKE_BOTH)),
        GatedReply(turn_text(None, TAKE_LAMP), before=gate),
        GatedReply(turn_text("You go north.", [{"op": "replace", "path": "/location", "value": "tower"}])),
        GatedReply(
            turn_text("You walk north to the Cliff Path.", [{"op": "replace", "path": "/location", "value": "path"}])
        ),
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await until(
            pilot, lambda: app.game.latest_message() is not None and app.game.latest_message().outcome == "correcting"
        )
        prose = app.game.latest_message().prose
        lines = prose.wrapped_lines
        gate.set()
        await finished(pilot, app)
        assert lines and all(a is b for a, b in zip(prose.wrapped_lines, lines, strict=True))  # not re-rendered
        await send(pilot, "north")
        await finished(pilot, app)
        second = app.game.latest_message()
        assert second.turn == 2 and second.outcome == "committed"
        assert second.prose.text == "You walk north to the Cliff Path."
        assert "You go north." not in painted(app)


async def test_escape_cancels_a_streaming_turn_and_says_so():
    pause = asyncio.Event()
    app = make_app(GatedReply(turn_text(PROSE + " More words follow here.", TAKE_LAMP), pause_at=40, pause=pause))
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await until(pilot, lambda: app.game.latest_message() is not None and app.game.latest_message().prose.text != "")
        await pilot.press("escape")
        await finished(pilot, app)
        message = app.game.latest_message()
        assert message.status.plain_text == "cancelled · ^r retry"
        assert app.session.state["items"]["lamp"] == "shore"
        assert "cancelled · ^r retry" in painted(app)


async def test_a_busy_narrator_shows_when_it_will_be_retried():
    gate = asyncio.Event()

    async def held_sleep(_: float) -> None:
        await gate.wait()

    app = make_app(
        GatedReply("", error=TransientNarratorError("overloaded", retry_after=2.5)),
        GatedReply(turn_text(PROSE, TAKE_LAMP)),
        sleep=held_sleep,
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await until(
            pilot, lambda: app.game.latest_message() is not None and app.game.latest_message().status.kind == "retrying"
        )
        assert app.game.latest_message().status.plain_text == "narrator busy, retrying in 3 s"
        gate.set()
        await finished(pilot, app)
        assert app.game.latest_message().outcome == "committed"


async def test_details_list_the_issues_and_what_the_correction_changed():
    app = make_app(
        GatedReply(turn_text(PROSE, TAKE_BOTH)), GatedReply(turn_text(PROSE + " The boulder stays.", TAKE_LAMP))
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        await pilot.press("ctrl+d")
        await until(pilot, lambda: isinstance(app.screen, IssueDetailsScreen))
        await pilot.pause()
        screen = painted(app)
        assert "First attempt — rejected" in screen
        assert "Correction 1 — accepted" in screen
        assert "Corrections cost: 10 tokens in, 5 out" in screen  # the scripted narrator's usage
        assert "boulder" in screen
        assert "+You lift the brass lamp from the rocks. The boulder stays." in screen
        assert '-  "path": "/items/boulder",' in screen or "/items/boulder" in screen
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, IssueDetailsScreen))


async def test_ctrl_d_on_a_focused_turn_that_had_no_issues_says_so_not_another_turns_details():
    app = make_app(
        GatedReply(turn_text(PROSE, TAKE_LAMP)),
        GatedReply(turn_text("You look around. " + PROSE, TAKE_BOTH)),
        GatedReply(turn_text("You look around.", [])),
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        await send(pilot, "look")
        await finished(pilot, app)
        first, latest = app.game.message(1), app.game.latest_message()
        assert first is not None and latest is not None and latest.has_details and not first.has_details
        assert "^d Details" in painted(app).splitlines()[-1]
        first.focus(scroll_visible=False)
        await pilot.pause(0.2)
        assert "^d Details" not in painted(app).splitlines()[-1], "the footer offers details the turn has not"
        await pilot.press("ctrl+d")
        await until(pilot, lambda: isinstance(app.screen, IssueDetailsScreen))
        await pilot.pause()
        screen = painted(app)
        assert "Turn 1 · details" in screen and "nothing to show" in screen, screen
        assert "Correction 1" not in screen
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, IssueDetailsScreen))
        assert app.screen.focused is first


async def test_events_reach_the_hook_before_the_screen_shows_them():
    seen: list[tuple[str, str]] = []
    holder: list[StoryloomApp] = []

    def on_event(event: Event) -> None:
        message = holder[0].game.message(event.turn)
        seen.append((event.event, message.outcome if message else "-"))

    app = make_app(GatedReply(turn_text(PROSE, TAKE_LAMP)), on_event=on_event)
    holder.append(app)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
    assert seen[0] == ("turn_started", "-")
    assert ("turn_committed", "streaming") in seen


async def test_undo_takes_back_the_last_turn_and_is_recorded_before_it_shows():
    recorded: list[Any] = []
    holder: list[StoryloomApp] = []

    def on_event(event: Event) -> None:
        if event.event == "turn_undone":
            message = holder[0].game.message(event.turn)
            recorded.append((event, message.status.plain_text if message else ""))

    app = make_app(GatedReply(turn_text(PROSE, TAKE_LAMP)), on_event=on_event)
    holder.append(app)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert len(recorded) == 1 and not recorded[0][1].startswith("undone")  # recorded before it showed
        assert app.session.state["items"]["lamp"] == "shore"
        assert "nothing" in app.game.side_panel.render().plain
        assert app.game.latest_message().status.plain_text.startswith("undone")
        await pilot.press("ctrl+z")  # nothing left to undo: the key is off, nothing more is recorded
        await pilot.pause()
        assert len(recorded) == 1


async def test_narrow_terminals_hide_the_side_panel_and_the_palette_can_show_it():
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not app.game.side_panel.display
        app.action_toggle_panel()
        await pilot.pause()
        assert app.game.side_panel.display
    wide = make_app()
    async with wide.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        assert wide.game.side_panel.display


async def test_a_command_sent_while_a_turn_runs_stays_in_the_input():
    pause = asyncio.Event()
    app = make_app(GatedReply(turn_text(PROSE, TAKE_LAMP), pause_at=16, pause=pause))
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await until(pilot, lambda: app.game.running)
        await send(pilot, "north")
        assert app.game.command_input.value == "north"
        pause.set()
        await finished(pilot, app)
        assert app.game.command_input.value == "north"


def test_run_app_reports_a_broken_story_and_exits_2(tmp_path, capsys):
    broken = tmp_path / "broken.toml"
    broken.write_text('id = "x"\ntitle = "X"\n', encoding="utf-8")
    args = argparse.Namespace(
        story=str(broken),
        narrator=None,
        model=None,
        base_url=None,
        budget=None,
        pace=None,
        output=None,
        max_tokens=None,
        thinking=False,
        seed=0,
        faults=0.0,
    )
    assert run_app(args) == 2
    assert capsys.readouterr().err.strip()
    assert gc.isenabled(), "the collector is on again however the app's start ended"


async def test_the_app_turns_the_garbage_collector_back_on_once_it_has_painted():
    gc.disable()  # as `storyloom play` starts the app (`cli/ui.py`)
    try:
        app = make_app(GatedReply(turn_text(PROSE, TAKE_LAMP)), tune_gc=True)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, gc.isenabled)
            assert app.game.command_input.has_focus
    finally:
        gc.enable()


async def test_details_say_when_an_attempt_had_no_readable_patch():
    app = make_app(
        GatedReply(
            '{"narrative": "You lift the brass lamp',
        ),
        GatedReply(turn_text(PROSE, TAKE_LAMP)),
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        await pilot.press("ctrl+d")
        await until(pilot, lambda: isinstance(app.screen, IssueDetailsScreen))
        await pilot.pause()
        screen = painted(app)
        assert "patch: the earlier attempt gave no readable patch" in screen
        assert '+{"op": "replace", "path": "/items/lamp", "value": "player"}' in screen


async def test_scrolling_up_is_not_yanked_back_and_the_follow_hint_brings_the_view_back():
    pause = asyncio.Event()
    long = "\n\n".join(f"Paragraph {i} of the long turn, about the rocks and the rain." for i in range(12))
    app = make_app(
        GatedReply(turn_text(long)),
        GatedReply(turn_text(PROSE + " And more.\n\nStill more.", TAKE_LAMP), pause_at=30, pause=pause),
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "look")
        await finished(pilot, app)
        transcript = app.game.transcript
        hint = transcript.query_one(FollowHint)
        assert transcript.max_scroll_y > 0 and transcript.following and not hint.display
        await send(pilot, "take lamp")
        await until(pilot, lambda: pause_reached(app))
        await pilot.press("pageup")  # from the input line: scrolls the story, types nothing
        await pilot.pause()
        assert app.game.command_input.value == ""
        assert transcript.scroll_y < transcript.max_scroll_y - 1 and hint.display
        transcript.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        assert hint.display
        pause.set()
        await finished(pilot, app)
        assert transcript.scroll_y == 0  # the player who scrolled up stays where they were
        await pilot.click(FollowHint)
        await pilot.pause()
        assert transcript.following and not hint.display
        assert transcript.scroll_y == transcript.max_scroll_y


def pause_reached(app: StoryloomApp) -> bool:
    message = app.game.latest_message()
    return message is not None and message.turn == 2 and message.prose.text != ""


async def test_old_turns_fold_into_a_block_that_looks_exactly_the_same(monkeypatch):
    import storyloom.tui.widgets.story_view as story_view

    monkeypatch.setattr(story_view, "KEEP_LIVE", 2)
    monkeypatch.setattr(story_view, "BLOCK_TURNS", 2)
    replies = [
        GatedReply(turn_text(f"Turn {i}: the rain keeps on.\n\nA second paragraph for turn {i}.")) for i in range(1, 6)
    ]
    replies[1] = GatedReply(turn_text(PROSE, TAKE_BOTH))  # turn 2 fails (budget 0)
    app = make_app(*replies, budget=0)
    async with app.run_test(size=(100, 50)) as pilot:
        for i in range(1, 5):
            await send(pilot, f"wait {i}")
            await finished(pilot, app)
        app.game.transcript.follow()
        await send(pilot, "wait 5")  # from the third turn on, the oldest turns are folded, two stay live
        await until(
            pilot,
            lambda: (
                app.game.latest_message() is not None and app.game.latest_message().turn == 5 and not app.game.running
            ),
        )
        await pilot.pause()
        blocks = app.game.transcript.query(ArchivedTurns)
        assert [block.turns for block in blocks] == [[1, 2], [3]]
        # every block in one child of the transcript: a streamed line lays out one widget for all of them
        assert len({block.parent for block in blocks}) == 1 and blocks[0].parent is not app.game.transcript
        assert [m.turn for m in app.game.transcript.query(TurnMessage)] == [4, 5]
        after = painted(app)
        assert "couldn't make this turn consistent" in after and "› wait 1" in after

    # The same story without folding paints the same screen.
    monkeypatch.setattr(story_view, "KEEP_LIVE", 100)
    replies = [
        GatedReply(turn_text(f"Turn {i}: the rain keeps on.\n\nA second paragraph for turn {i}.")) for i in range(1, 6)
    ]
    replies[1] = GatedReply(turn_text(PROSE, TAKE_BOTH))
    unfolded = make_app(*replies, budget=0)
    async with unfolded.run_test(size=(100, 50)) as pilot:
        for i in range(1, 6):
            await send(pilot, f"wait {i}")
            await finished(pilot, unfolded)
        assert not unfolded.game.transcript.query(ArchivedTurns)
        assert painted(unfolded) == after


async def test_a_folded_turn_that_was_corrected_still_shows_its_details_when_clicked(monkeypatch):
    import storyloom.tui.widgets.story_view as story_view

    monkeypatch.setattr(story_view, "KEEP_LIVE", 2)
    replies = [
        GatedReply(turn_text(f"Turn {i}: the rain keeps on.\n\nA second paragraph for turn {i}.")) for i in range(1, 5)
    ]
    replies[1:2] = [GatedReply(turn_text(PROSE, TAKE_BOTH)), GatedReply(turn_text(None, TAKE_LAMP))]  # corrected
    app = make_app(*replies)
    async with app.run_test(size=(100, 50)) as pilot:
        for i in range(1, 5):
            await send(pilot, f"wait {i}")
            await finished(pilot, app)
        await pilot.pause()
        assert [block.turns for block in app.game.transcript.query(ArchivedTurns)] == [[1, 2]]
        rows = painted(app).splitlines()

        def row_of(text: str) -> int:
            return next(y for y, row in enumerate(rows) if text in row)

        await pilot.click(offset=(10, row_of("A second paragraph for turn 1")))  # a clean turn: nothing to show
        await pilot.pause()
        assert not isinstance(app.screen, IssueDetailsScreen)
        await pilot.click(offset=(10, row_of("You lift the brass lamp")))  # the corrected one, folded
        await until(pilot, lambda: isinstance(app.screen, IssueDetailsScreen))
        await pilot.pause()
        details = painted(app)
        assert "wait 2" in details and "First attempt — rejected" in details and "boulder" in details
        assert "Correction 1 — accepted" in details
        assert "Outcome: committed" in details, details  # what the live message's details said
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, IssueDetailsScreen))
        # and by keyboard: the command palette offers the folded turns that had issues
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert "Details of turn 2" in commands and "Details of turn 1" not in commands
        commands["Details of turn 2"].callback()
        await until(pilot, lambda: isinstance(app.screen, IssueDetailsScreen))


async def test_resizing_to_a_tiny_terminal_during_a_correction_and_back_keeps_the_message_whole():
    gate = asyncio.Event()
    app = make_app(GatedReply(turn_text(PROSE, TAKE_BOTH)), GatedReply(turn_text(None, TAKE_LAMP), before=gate))
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await until(
            pilot, lambda: app.game.latest_message() is not None and app.game.latest_message().outcome == "correcting"
        )
        await pilot.pause()
        message = app.game.latest_message()
        before = message.region
        await pilot.resize_terminal(20, 8)
        await pilot.pause()
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        assert message.region == before
        gate.set()
        await finished(pilot, app)
        assert message.outcome == "committed" and app.game.latest_message() is message


async def test_export_writes_the_committed_story_as_markdown(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    app = saved_app(
        tmp_path, GatedReply(turn_text(PROSE, TAKE_LAMP)), GatedReply(turn_text(PROSE, TAKE_BOTH)), budget=0
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        await send(pilot, "take everything")
        await finished(pilot, app)
        app.action_export()
    text = (tmp_path / "data" / "storyloom" / "saves" / "storyloom-shore.md").read_text(encoding="utf-8")
    assert text.startswith("# The Shore")
    assert "> take lamp" in text and PROSE in text
    assert "take everything" not in text  # the failed turn never happened in the story


async def test_the_apps_export_is_storyloom_export_of_the_same_save(tmp_path, monkeypatch, capsys):
    """One export: the palette's file and `storyloom export` of the save being played are the same text,
    an undone turn and another version included (the app no longer exports what happens to be on screen)."""
    from storyloom.tui.cli import main

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    taken = turn_text(PROSE, TAKE_LAMP)
    app = saved_app(tmp_path, GatedReply(taken), GatedReply(turn_text("You hold back.")), GatedReply(taken))
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        await pilot.press("ctrl+g")
        await until(
            pilot,
            lambda: (
                not app.game.running
                and app.session.versions is not None
                and len(app.session.versions.alternatives) == 2
            ),
        )
        await pilot.press("ctrl+z")
        await pilot.pause()
        await send(pilot, "take lamp")
        await finished(pilot, app)
        app.action_export()
        await pilot.pause()
    exported = (tmp_path / "data" / "storyloom" / "saves" / "storyloom-shore.md").read_text(encoding="utf-8")
    assert main(["export", str(tmp_path / "game.jsonl")]) == 0
    assert exported == capsys.readouterr().out
    assert "1 turn was undone" in exported and exported.count("> take lamp") == 1


async def test_a_story_not_being_saved_offers_no_export_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    app = make_app(GatedReply(turn_text(PROSE, TAKE_LAMP)))
    said: list[str] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        assert "Export transcript" not in [c.title for c in app.get_system_commands(app.screen)]
        monkeypatch.setattr(app, "notify", lambda message, **_: said.append(message))
        app.action_export()
    assert said and "not being saved" in said[0]
    assert not list((tmp_path / "data").rglob("*.md"))


async def test_export_goes_beside_the_saves_never_over_a_file_and_says_the_whole_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    saves = tmp_path / "data" / "storyloom" / "saves"
    saves.mkdir(parents=True)
    (saves / "storyloom-shore.md").write_text("my own notes", encoding="utf-8")
    app = saved_app(tmp_path, GatedReply(turn_text(PROSE, TAKE_LAMP)), budget=0)
    said: list[str] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        monkeypatch.setattr(app, "notify", lambda message, **_: said.append(message))
        app.action_export()
        app.action_export()
    assert (saves / "storyloom-shore.md").read_text(encoding="utf-8") == "my own notes"
    assert "> take lamp" in (saves / "storyloom-shore-2.md").read_text(encoding="utf-8")
    assert (saves / "storyloom-shore-3.md").is_file()
    assert not list(tmp_path.glob("*.md"))  # nothing in the folder the game was started from
    assert any(str(saves / "storyloom-shore-2.md") in m for m in said)
    assert any(str(saves / "storyloom-shore-3.md") in m for m in said)


async def test_new_game_starts_the_story_again():
    made: list[Session] = []

    def new_session() -> Session:
        session = Session(parse_pack(SHORE_PACK, "shore.toml"), GatedNarrator([]))
        made.append(session)
        return session

    app = make_app(GatedReply(turn_text(PROSE, TAKE_LAMP)), new_session=new_session)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        app.action_new_game()
        await until(pilot, lambda: app.game.play.story is made[-1])
        await pilot.pause()
        assert not app.game.transcript.query(TurnMessage)
        assert "nothing" in app.game.side_panel.render().plain


async def test_a_failing_save_hook_is_reported_and_the_game_goes_on():
    def broken_journal(event: Event) -> None:
        raise OSError(28, "No space [b]left[/b] on device")

    app = make_app(GatedReply(turn_text(PROSE, TAKE_LAMP)), on_event=broken_journal)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await send(pilot, "take lamp")
        await finished(pilot, app)
        assert app.is_running
        assert app.game.latest_message().outcome == "committed"
        notes = [n.message for n in app._notifications]
        assert len(notes) == 1 and "No space [b]left[/b] on device" in notes[0]
        await pilot.pause()
        assert "[b]left[/b]" in painted(app)  # shown as written, not as markup


async def test_a_resumed_story_shows_its_committed_turns_and_can_undo_them():
    from storyloom.engine.narration import Exchange
    from storyloom.engine.state import initial_state
    from storyloom.engine.turns import Turn

    pack = parse_pack(SHORE_PACK, "shore.toml")
    start = initial_state(pack)
    carried = {**start, "items": {**start["items"], "lamp": "player"}}
    history = (Exchange("take lamp", Turn(narrative=PROSE, state_patch=TAKE_LAMP)),)
    session = Session(pack, GatedNarrator([]), next_turn=2)
    session.restore(CommittedStory(carried, history, ((start, ()),), 1))
    app = StoryloomApp(session, blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = painted(app)
        assert "› take lamp" in screen and PROSE in screen
        assert "brass lamp" in app.game.side_panel.render().plain
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert session.state == start
        assert "undone · this turn no longer counts" in painted(app)


async def test_open_save_lists_the_saves_and_continues_the_chosen_one(tmp_path):
    from storyloom.engine.narration import Exchange
    from storyloom.engine.turns import Turn

    first, second = tmp_path / "a.storyloom.jsonl", tmp_path / "b.storyloom.jsonl"
    first.write_text("", encoding="utf-8")
    second.write_text("", encoding="utf-8")
    opened: list[Path] = []

    def open_save(path: Path) -> Session:
        opened.append(path)
        if path == second:
            raise ValueError("b.storyloom.jsonl: record 3 is damaged [bold]x[/]")
        narrator = GatedNarrator([])
        narrator.name, narrator.model = "anthropic", "claude-sonnet-5-5"  # saved on another narrator
        session = Session(parse_pack(SHORE_PACK, "shore.toml"), narrator, next_turn=2)
        session.restore(CommittedStory(session.state, (Exchange("look", Turn(narrative="Saved prose.")),), (), 1))
        return session

    app = make_app(list_saves=lambda: [first, second], open_save=open_save)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        app.action_open_save()
        await until(pilot, lambda: isinstance(app.screen, OpenSaveScreen))
        await pilot.pause()
        assert "a.storyloom.jsonl" in painted(app) and "b.storyloom.jsonl" in painted(app)
        await pilot.press("down", "enter")  # the damaged one: a clear message, the story goes on
        await until(pilot, lambda: not isinstance(app.screen, OpenSaveScreen))
        await pilot.pause()
        assert "[bold]x[/]" in painted(app) and "damaged" in painted(app)
        app.action_open_save()
        await until(pilot, lambda: isinstance(app.screen, OpenSaveScreen))
        await pilot.pause()
        await pilot.press("enter")
        await until(pilot, lambda: "Saved prose." in painted(app))
        assert opened == [second, first]
        assert app.game.play.story is app.session and app.session.next_turn == 2
        assert "anthropic narrator · claude-sonnet-5-5" in painted(app).splitlines()[0]  # the header follows


def test_leaving_a_new_save_without_a_turn_removes_it_and_keeps_one_with_a_turn(tmp_path):
    from storyloom.engine.events import TurnStarted
    from storyloom.saves.format import SaveHeader
    from storyloom.saves.writer import Journal
    from storyloom.tui.session import close_journal

    header = SaveHeader.for_session(parse_pack(SHORE_PACK, "shore.toml"), GatedNarrator([]))
    empty = Journal.create(tmp_path / "empty.storyloom.jsonl", header)
    close_journal(empty)  # the player opened another save right after launch: no empty save is left behind
    assert list(tmp_path.iterdir()) == []

    played = Journal.create(tmp_path / "played.storyloom.jsonl", header)
    played.record(TurnStarted(turn=1, attempt=1, player_input="look"))
    close_journal(played)
    assert [p.name for p in tmp_path.iterdir()] == ["played.storyloom.jsonl"]
