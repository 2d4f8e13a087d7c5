"""`PlaySession`: the one object that opens, resumes, records, rescues and closes a story's save.

The app's palette ("New game", "Open save") and its opening screen go through these methods;
headless play goes through `open`, `record` and `close` (see test_headless and test_hardening_disk).
"""

from __future__ import annotations

import io

import pytest

from storyloom.engine.events import TurnCommitted
from storyloom.saves.errors import SaveError
from storyloom.saves.locations import list_saves, saves_dir
from storyloom.saves.reader import load_save
from storyloom.tui.session import PlaySession
from storyloom.tui.settings import Settings


@pytest.fixture(autouse=True)
def private_saves(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


async def play(session: PlaySession, command: str) -> None:
    assert session.session is not None
    async for event in session.session.play(command):
        session.record(event)


def commits(path) -> int:
    return sum(isinstance(event, TurnCommitted) for _, event in load_save(path).events)


async def test_a_new_game_starts_a_fresh_save_and_leaves_no_empty_one_behind():
    playing = PlaySession(Settings(), story="glasshouse", err=io.StringIO())
    playing.open()
    playing.restart()  # "New game" right after launch: the untouched save is removed
    assert list_saves() == [playing.journal.path]
    await play(playing, "look")
    kept = playing.journal.path
    playing.restart()
    assert kept.exists() and commits(kept) == 1
    assert playing.pack.id == "glasshouse" and playing.close()
    assert list_saves() == [kept]  # the new game was left before its first turn: no empty save is kept either
    assert not playing.journal.path.exists() and not playing.kept


async def test_opening_another_save_continues_it_and_refuses_the_one_being_played():
    earlier = PlaySession(Settings(), story="glasshouse", err=io.StringIO())
    earlier.open()
    await play(earlier, "look")
    assert earlier.close()
    playing = PlaySession(Settings(), err=io.StringIO())
    playing.open()
    with pytest.raises(ValueError, match="the story you are playing now"):
        playing.switch_to(playing.journal.path)
    assert playing.other_saves() == [earlier.journal.path]
    session = playing.switch_to(earlier.journal.path)
    assert session.next_turn == 2 and playing.pack.id == "glasshouse"
    playing.restart()  # a new game of an opened save starts the story that save was made from
    assert playing.pack.id == "glasshouse" and load_save(playing.journal.path).header.story_id == "glasshouse"
    assert playing.close()


def test_a_story_still_loading_when_the_player_quits_leaves_no_save():
    playing = PlaySession(Settings(), err=io.StringIO())
    assert playing.close()  # the player quit behind the opening screen
    with pytest.raises(SaveError, match="quit before the story had loaded"):
        playing.open()
    assert list_saves() == [] and playing.journal is None


async def test_a_resumed_save_goes_on_in_the_same_file():
    first = PlaySession(Settings(), err=io.StringIO())
    first.open()
    await play(first, "look")
    assert first.close()
    err = io.StringIO()
    resumed = PlaySession(Settings(), resume="latest", err=err)
    assert resumed.resumed and resumed.open().next_turn == 2
    await play(resumed, "take rope")
    assert resumed.close() and resumed.journal.path == first.journal.path
    assert commits(first.journal.path) == 2 and saves_dir() == first.journal.path.parent
