"""A whole story, from its first turn to THE END and back (issue 13): the ending is part of the story
wherever the story is shown (resume in the UI and headless, both exports, the UI replay); after the
ending nothing more is played, but undo takes it back; a resumed story keeps its turns' details and
its suggestions; `saves` and `verify` count turns the same way; no launch leaves an empty save.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from storyloom.engine.events import StoryEnded, TurnCommitted
from storyloom.engine.lifecycle import Session, StoryOver
from storyloom.saves.format import SaveHeader
from storyloom.saves.locations import resolve_save
from storyloom.saves.reader import load_save
from storyloom.saves.replay import Replayer, replay_plan
from storyloom.saves.writer import Journal
from storyloom.tui.app import ReplayApp, StoryloomApp
from storyloom.tui.cli import main
from storyloom.tui.cli import save_commands as commands
from storyloom.tui.screens.issue_details import IssueDetailsScreen
from storyloom.tui.session import PlaySession
from storyloom.tui.settings import Settings
from storyloom.tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from storyloom.tui.testing.pilot import until
from storyloom.tui.widgets.turn_message import TurnMessage
from tests.conftest import ScriptedNarrator, structured
from tests.test_saves_kit import play, shore_pack_file
from tests.test_tui_app import painted, send

TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
TAKE_BOTH = [*TAKE_LAMP, {"op": "replace", "path": "/items/boulder", "value": "player"}]
TO_THE_PATH = [
    *TAKE_LAMP,
    {"op": "replace", "path": "/flags/door_open", "value": True},
    {"op": "replace", "path": "/location", "value": "path"},
]
UP_THE_TOWER = [{"op": "replace", "path": "/location", "value": "tower"}]
DOWN_AGAIN = [{"op": "replace", "path": "/location", "value": "path"}]
CLIMB = "You take the brass lamp, open the way and climb to the Cliff Path."
TOWER = "You climb to the Lamp Room with the lamp."
ENDING = "The lamp burns over the sea."


@pytest.fixture(autouse=True)
def private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "data" / "storyloom" / "saves"


class _OlderSession(Session):
    """A session as storyloom before 2026-12 played it: a command after the ending was still played."""

    def play(self, player_input: str) -> Any:
        self._ending = None
        return super().play(player_input)


def shore_save(
    tmp_path: Path, replies: list[Any], moves: list[str], name: str = "shore.jsonl", *, older: bool = False
) -> Path:
    """A save of the test story, played move by move on a scripted narrator (`/undo` undoes)."""
    pack, pack_path = shore_pack_file(tmp_path)
    narrator = ScriptedNarrator(list(replies))

    async def no_sleep(_: float) -> None:
        return None

    session = (_OlderSession if older else Session)(pack, narrator, sleep=no_sleep)
    path = tmp_path / name

    async def go() -> None:
        with Journal.create(path, SaveHeader.for_session(pack, narrator, source=str(pack_path))) as journal:
            await play(session, journal, moves)

    asyncio.run(go())
    return path


def ended_save(tmp_path: Path, *, played_on: bool = False) -> Path:
    """The test story played to its ending in two turns (and, as storyloom allowed before, one turn past it)."""
    replies = [structured(CLIMB, TO_THE_PATH), structured(TOWER, UP_THE_TOWER, suggestions=["go down", "look"])]
    moves = ["climb", "go up"]
    if played_on:
        replies.append(structured("You look out from the Lamp Room.", []))
        moves.append("look")
    return shore_save(tmp_path, replies, moves, older=played_on)


# -- the ending: derived once, from the standing commits


def test_the_session_knows_its_ending_from_its_commits_and_undo_takes_it_back(tmp_path: Path) -> None:
    path = ended_save(tmp_path)
    session = PlaySession(Settings(), resume=str(path), err=io.StringIO()).open()
    ending = session.ending
    assert ending is not None and (ending.ending, ending.title, ending.text) == ("lit", "Light", ENDING)
    assert session.undo() is not None and session.ending is None


def test_the_engine_itself_plays_no_command_after_the_ending(tmp_path: Path) -> None:
    """Every front end says so first in its own words; the engine refuses too, so no front end can forget."""
    path = ended_save(tmp_path)
    session = PlaySession(Settings(), resume=str(path), err=io.StringIO()).open()
    turns = session.next_turn
    with pytest.raises(StoryOver, match="the story is over"):
        session.play("look")
    assert session.next_turn == turns  # no turn number spent
    assert session.undo() is not None
    assert session.play("look") is not None  # undo took the ending back: play goes on


async def test_the_ending_kept_up_commit_by_commit_is_the_one_derived_from_scratch(pack, script) -> None:
    """`Session.ending` follows commits and undos without going over the story again; it must say
    what `story_ending` says over the standing commits at every step."""
    from storyloom.engine.lifecycle import ending_reached

    def from_scratch():
        """The first standing commit that reached an ending, going over every one of them."""
        befores = [before for before, _ in session._undo_stack]
        for index, before in enumerate(befores):
            after = befores[index + 1] if index + 1 < len(befores) else session.state
            reached = ending_reached(pack, before, after)
            if reached is not None:
                return index, reached[0]
        return None

    replies = [structured(CLIMB, TO_THE_PATH), structured(TOWER, UP_THE_TOWER), structured(TOWER, UP_THE_TOWER)]
    replies.append(structured("You wait.", []))
    session, _ = script(pack, *replies)
    assert session.ending is None
    seen = []
    for move in ["climb", "go up", "look", "/undo", "go up", "wait", "/undo", "/undo", "wait"]:
        if move == "/undo":
            session.undo()
        elif session.ending is not None:  # past the ending nothing is played: only undo goes on
            with pytest.raises(StoryOver):
                session.play(move)
        else:
            async for _ in session.play(move):
                pass
        seen.append(session.ending.commit if session.ending is not None else None)
        derived = (session.ending.commit, session.ending.ending) if session.ending is not None else None
        assert derived == from_scratch()
    assert seen == [None, 1, 1, None, 1, 1, None, None, None]


@pytest.mark.parametrize("played_on", [False, True])
def test_both_exports_hold_the_ending(tmp_path: Path, capsys: pytest.CaptureFixture[str], played_on: bool) -> None:
    path = ended_save(tmp_path, played_on=played_on)
    assert commands.export(argparse.Namespace(save=str(path), format="md")) == 0
    markdown = capsys.readouterr().out
    assert "## Light" in markdown and ENDING in markdown
    assert commands.export(argparse.Namespace(save=str(path), format="json")) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["ending"] == {"id": "lit", "title": "Light", "text": ENDING, "turn": 2}


def test_an_export_of_a_story_whose_ending_was_undone_has_no_ending(tmp_path: Path, capsys) -> None:
    replies = [structured(CLIMB, TO_THE_PATH), structured(TOWER, UP_THE_TOWER)]
    path = shore_save(tmp_path, replies, ["climb", "go up", "/undo"])
    assert commands.export(argparse.Namespace(save=str(path), format="json")) == 0
    assert json.loads(capsys.readouterr().out)["ending"] is None


# -- headless: the story is over at its ending, on resume too


def commands_file(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / f"commands-{len(list(tmp_path.glob('commands-*')))}.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_headless_resume_of_an_ended_story_shows_the_ending_and_plays_nothing_until_undo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ended_save(tmp_path)
    assert main(["play", "--headless", "--commands", commands_file(tmp_path, "look"), "--resume", str(path)]) == 0
    captured = capsys.readouterr()
    assert "Light" in captured.out and ENDING in captured.out
    assert "the story is over" in captured.err and "'look' and what follows were not played" in captured.err
    assert "> look" not in captured.out
    assert sum(isinstance(e, TurnCommitted) for _, e in load_save(path).events) == 2
    # /undo takes the ending turn back, and play goes on
    undo_then_look = commands_file(tmp_path, "/undo", "look")
    assert main(["play", "--headless", "--commands", undo_then_look, "--resume", str(path)]) == 0
    assert "> look" in capsys.readouterr().out
    assert sum(isinstance(e, TurnCommitted) for _, e in load_save(path).events) == 3


# -- the game: after the ending, and on resume


def shore_app(*replies: GatedReply) -> StoryloomApp:
    from storyloom.engine.packs import parse_pack
    from tests.conftest import SHORE_PACK

    return StoryloomApp(Session(parse_pack(SHORE_PACK, "shore.toml"), GatedNarrator(list(replies))), blink=False)


def ending_shown(app: StoryloomApp) -> bool:
    return "The end: Light" in painted(app)


async def settled(pilot: Any, app: StoryloomApp, turn: int) -> None:
    await until(pilot, lambda: (m := app.game.latest_message()) is not None and m.turn == turn and not app.game.running)
    await pilot.pause()


async def test_after_the_ending_the_input_plays_nothing_and_says_what_to_do_until_undo() -> None:
    app = shore_app(
        GatedReply(turn_text(CLIMB, TO_THE_PATH)),
        GatedReply(turn_text(TOWER, UP_THE_TOWER, suggestions=["close hatch", "go down"])),
        GatedReply(turn_text("You go back down to the Cliff Path.", DOWN_AGAIN)),
    )
    async with app.run_test(size=(100, 40)) as pilot:
        await send(pilot, "climb")
        await settled(pilot, app, 1)
        await send(pilot, "go up")
        await settled(pilot, app, 2)
        await until(pilot, lambda: ending_shown(app))
        await pilot.pause()
        game = app.game
        field = game.command_input
        assert "close hatch" not in field.placeholder and "The story is over" in field.placeholder
        screen = painted(app)
        assert "The end: Light" in screen and "The story is over." in screen and "ctrl+z takes back" in screen
        await send(pilot, "go down")
        await pilot.pause()
        assert field.value == "go down" and not game.running  # kept, not played
        assert "the story is over" in str(field.border_subtitle)
        assert [m.turn for m in game.transcript.query(TurnMessage)] == [1, 2]
        await pilot.press("ctrl+z")  # the ending turn is taken back: play goes on from the turn before
        await pilot.pause()
        assert game.play.story.ending is None
        assert "undone · the story goes on" in painted(app)
        assert field.placeholder == field.DEFAULT_PLACEHOLDER and not field.border_subtitle
        await pilot.press("enter")
        await settled(pilot, app, 3)
        assert game.latest_message().outcome == "committed"


async def test_the_palette_export_of_an_ended_story_holds_its_ending(tmp_path: Path, monkeypatch) -> None:
    from tests.test_tui_app import saved_app

    monkeypatch.chdir(tmp_path)
    app = saved_app(tmp_path, GatedReply(turn_text(CLIMB, TO_THE_PATH)), GatedReply(turn_text(TOWER, UP_THE_TOWER)))
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "climb")
        await settled(pilot, app, 1)
        await send(pilot, "go up")
        await settled(pilot, app, 2)
        app.action_export()
    (exported,) = tmp_path.rglob("*.md")  # wherever the export goes, it is under this test's folders
    text = exported.read_text(encoding="utf-8")
    assert text.index(TOWER) < text.index("## Light") < text.index(ENDING)


async def test_a_new_game_after_the_ending_plays_again() -> None:
    from storyloom.engine.packs import parse_pack
    from tests.conftest import SHORE_PACK

    fresh = Session(parse_pack(SHORE_PACK, "shore.toml"), GatedNarrator([GatedReply(turn_text("You look around."))]))
    app = shore_app(GatedReply(turn_text(CLIMB, TO_THE_PATH)), GatedReply(turn_text(TOWER, UP_THE_TOWER)))
    app._new_session = lambda: fresh
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "climb")
        await settled(pilot, app, 1)
        await send(pilot, "go up")
        await until(pilot, lambda: ending_shown(app))
        await send(pilot, "look")  # refused: the story is over
        await pilot.pause()
        app.action_new_game()
        await until(pilot, lambda: app.game.play.story is fresh and not ending_shown(app))
        field = app.game.command_input
        assert field.placeholder == field.DEFAULT_PLACEHOLDER and not field.border_subtitle
        await pilot.press("enter")  # the command kept in the line plays in the new story
        await settled(pilot, app, 1)
        assert "You look around." in painted(app)


def details_save(tmp_path: Path) -> Path:
    """Two turns: the first clean, the second corrected once (its details are worth showing)."""
    replies = [
        structured("You look around the shore.", []),
        structured("You take the lamp and the boulder.", TAKE_BOTH),
        structured("You lift the brass lamp from the rocks.", TAKE_LAMP, suggestions=["go north", "light lamp"]),
    ]
    return shore_save(tmp_path, replies, ["look", "take lamp"])


async def resumed_app(path: Path) -> tuple[StoryloomApp, PlaySession]:
    playing = PlaySession(Settings(), resume=str(path), err=io.StringIO())
    playing.open()
    assert playing.session is not None
    app = StoryloomApp(playing.session, play=playing, past=lambda: playing.past, blink=False)
    return app, playing


async def test_a_resumed_story_keeps_its_turn_numbers_details_and_suggestions(tmp_path: Path) -> None:
    app, playing = await resumed_app(await asyncio.to_thread(details_save, tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        game = app.game
        assert game.command_input.placeholder == "try: go north · light lamp"
        palette = {c.title: c for c in app.get_system_commands(app.screen)}
        assert "Details of turn 1" not in palette  # a clean turn has none
        latest = game.latest_message()  # the newest turn is live (its versions can still change)
        assert latest is not None and latest.turn == 2 and latest.has_details
        await pilot.press("ctrl+d")  # and it had a correction
        await until(pilot, lambda: isinstance(app.screen, IssueDetailsScreen))
        await pilot.pause()
        details = painted(app)
        assert "Turn 2 · details" in details and "take lamp" in details
        assert "First attempt — rejected" in details and "Correction 1 — accepted" in details
        assert "Outcome: committed after correction." in details
    playing.close()


async def test_a_resumed_story_that_had_ended_shows_its_ending_and_undo_goes_on(tmp_path: Path) -> None:
    app, playing = await resumed_app(await asyncio.to_thread(ended_save, tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        game = app.game
        screen = painted(app)
        assert "The end: Light" in screen and ENDING in screen and "The story is over." in screen
        assert "go down" not in game.command_input.placeholder and "The story is over" in game.command_input.placeholder
        await send(pilot, "look")
        await pilot.pause()
        assert not game.transcript.query(TurnMessage) and game.command_input.value == "look"
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert game.play.story.ending is None and "undone · the story goes on" in painted(app)
        await pilot.press("enter")
        await until(pilot, lambda: (m := game.latest_message()) is not None and m.outcome == "committed")
    assert playing.close()


async def test_a_save_played_on_past_its_ending_is_over_until_the_ending_turn_is_undone(tmp_path: Path) -> None:
    app, playing = await resumed_app(await asyncio.to_thread(ended_save, tmp_path, played_on=True))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        game = app.game
        assert "The end: Light" in painted(app) and "The story is over" in game.command_input.placeholder
        await pilot.press("ctrl+z")  # the turn played after the ending: the story is still over
        await pilot.pause()
        assert game.play.story.ending is not None and "undone · the story goes on" not in painted(app)
        assert "The story is over" in game.command_input.placeholder
        await pilot.press("ctrl+z")  # the turn that reached the ending
        await pilot.pause()
        assert game.play.story.ending is None and "undone · the story goes on" in painted(app)
        assert game.command_input.placeholder == game.command_input.DEFAULT_PLACEHOLDER
    assert playing.close()


async def test_opening_an_ended_save_from_the_palette_shows_its_ending(tmp_path: Path) -> None:
    path = await asyncio.to_thread(ended_save, tmp_path)
    playing = PlaySession(Settings(), story=str(tmp_path / "shore.toml"), err=io.StringIO())
    playing.open()
    app = StoryloomApp(
        playing.session,
        play=playing,
        past=lambda: playing.past,
        open_save=playing.switch_to,
        list_saves=lambda: [path],
        blink=False,
    )
    async with app.run_test(size=(100, 30)) as pilot:
        app._continue_save(path)
        await until(pilot, lambda: ending_shown(app))
        await pilot.pause()
        assert ENDING in painted(app) and "The story is over" in app.game.command_input.placeholder
    assert playing.close()


# -- the replay shows the ending as the game did


async def test_the_ui_replay_shows_the_ending_in_words(tmp_path: Path) -> None:
    plan = replay_plan(load_save(await asyncio.to_thread(ended_save, tmp_path)), speed=float("inf"))
    app = ReplayApp(Replayer(plan), blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.replay.finished)
        await pilot.pause()
        screen = painted(app)
        assert "The end: Light" in screen and ENDING in screen and "The story is over." in screen
        assert "ctrl+z" not in screen  # a replay offers no undo
        assert any(isinstance(e, StoryEnded) for e in app.replay.replayer.result.events)


async def test_a_replayed_undo_of_the_ending_marks_that_turn_alone(tmp_path: Path) -> None:
    replies = [structured(CLIMB, TO_THE_PATH), structured(TOWER, UP_THE_TOWER)]
    path = await asyncio.to_thread(shore_save, tmp_path, replies, ["climb", "go up", "/undo"])
    app = ReplayApp(Replayer(replay_plan(load_save(path), speed=float("inf"))), blink=False)
    async with app.run_test(size=(100, 40)) as pilot:
        await until(pilot, lambda: app.replay.finished)
        await pilot.pause()
        outcomes = {m.turn: m.outcome for m in app.game.transcript.query(TurnMessage)}
        assert outcomes == {1: "committed", 2: "undone"}  # the undo was once shown twice, taking turn 1 too
        assert "undone · the story goes on" in painted(app)


# -- counting turns, and empty saves


def test_saves_and_verify_count_the_turns_the_same_way(private_dirs: Path, tmp_path: Path, capsys) -> None:
    replies = [structured(CLIMB, TO_THE_PATH), structured(TOWER, UP_THE_TOWER), structured(TOWER, UP_THE_TOWER)]
    private_dirs.mkdir(parents=True)
    path = shore_save(tmp_path, replies, ["climb", "go up", "/undo", "go up"], name="counted.jsonl")
    path = path.rename(private_dirs / path.name)
    said = "2 turns in the story (3 committed, 1 undone)"
    assert commands.saves(argparse.Namespace()) == 0
    assert said in capsys.readouterr().out
    assert commands.verify(argparse.Namespace(save=str(path))) == 0
    assert said in capsys.readouterr().out


def test_a_launch_with_no_turn_leaves_no_save_and_latest_passes_over_empty_ones(
    private_dirs: Path, tmp_path: Path, capsys
) -> None:
    assert main(["play", "--headless", "--commands", commands_file(tmp_path, "look")]) == 0
    (played,) = private_dirs.glob("*.jsonl")
    assert main(["play", "--headless", "--commands", commands_file(tmp_path, "# nothing to play")]) == 0
    assert list(private_dirs.glob("*.jsonl")) == [played]
    assert "no turn was played, so no save was kept" in capsys.readouterr().err
    # a game killed before its first turn leaves its header behind: `latest` never means it
    crashed = PlaySession(Settings(), err=io.StringIO())
    crashed.open()
    assert crashed.journal is not None
    crashed.journal.close()  # the lock goes with the process; the header stays
    assert crashed.journal.path.exists() and resolve_save("latest") == played


async def test_undoing_the_ending_moves_nothing_on_screen(frame_recorder: Any) -> None:
    from storyloom.tui.testing.frames import assert_no_shift

    app = shore_app(GatedReply(turn_text(CLIMB, TO_THE_PATH)), GatedReply(turn_text(TOWER, UP_THE_TOWER)))
    async with app.run_test(size=(80, 18)) as pilot:
        await send(pilot, "climb")
        await settled(pilot, app, 1)
        await send(pilot, "go up")
        await settled(pilot, app, 2)
        await until(pilot, lambda: ending_shown(app))
        await pilot.pause(0.2)
        assert app.game.transcript.max_scroll_y > 0  # anchored to the bottom, as in a long story
        frames = frame_recorder(app, regions={"ending": "EndingText"}, screen=True)
        app.screen.refresh()  # one frame of the ending as it stood, to compare the undo's frames with
        await pilot.pause(0.1)
        frames.mark("undo")
        await pilot.press("ctrl+z")
        await pilot.pause(0.3)
        assert "undone · the story goes on" in painted(app)
    window = frames.frames
    assert window[0].row_of("The story is over.") is not None
    assert window[-1].row_of("undone · the story goes on") is not None
    assert_no_shift(window, ["› go up", "The end: Light", ENDING], settled=lambda frame: True, fixed=["ending"])
