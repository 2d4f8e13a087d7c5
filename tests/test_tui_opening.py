"""`storyloom` paints the story's intro first and loads the engine, narrator and save behind it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

from textual.widgets import Static

from storyloom.engine.lifecycle import Session
from storyloom.engine.packs import parse_pack
from storyloom.saves.errors import SaveError
from storyloom.tui.app import Opening, StoryloomApp
from storyloom.tui.screens.game import GameScreen
from storyloom.tui.screens.opening import OpeningScreen
from storyloom.tui.testing.frames import FrameRecorder
from storyloom.tui.testing.narrators import GatedNarrator
from storyloom.tui.testing.pilot import until
from tests.conftest import SHORE_PACK

INTRO = "Grey water, black rocks."


def shore_session() -> Session:
    return Session(parse_pack(SHORE_PACK, "shore.toml"), GatedNarrator([]))


def opening_app() -> tuple[StoryloomApp, threading.Event]:
    """The app showing the shore's intro while its story loads, until the event is set."""
    loaded = threading.Event()

    def load() -> Session:
        loaded.wait(10)
        return shore_session()

    return StoryloomApp(Opening("The Shore", INTRO, load), blink=False), loaded


async def test_the_intro_shows_while_the_story_loads_then_the_game_takes_its_place_without_moving_it():
    app, loaded = opening_app()
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, OpeningScreen) and app.session is None
        intro = app.screen.query_one("#intro")
        assert INTRO in str(intro.query_one(".-text", Static).render())
        where = intro.region
        await pilot.press(*"loo")  # typed before the story is ready
        loaded.set()
        await until(pilot, lambda: isinstance(app.screen, GameScreen))
        await pilot.pause()
        game = app.game
        assert game.play.story is app.session
        assert game.query_one("#intro").region == where  # the text the player is reading stays put
        assert game.command_input.value == "loo"  # and what they typed is kept
        assert "Rocky Shore" in str(game.side_panel.render())  # the panel fills in once the story is loaded


async def test_at_80_columns_the_game_never_paints_the_side_panel_it_hides():
    """A narrow terminal hides the side panel (the prose keeps the width). The game screen that
    takes the intro's place must be narrow from its first frame: it once painted the panel for a
    frame, then re-wrapped every row of the intro without it."""
    app, loaded = opening_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        recorder = FrameRecorder(app, screen=True).start()
        loaded.set()
        await until(pilot, lambda: isinstance(app.screen, GameScreen))
        await pilot.pause(0.3)
        recorder.stop()
    games = [f for f in recorder.frames if any("scripted" in row for row in f.screen)]
    assert games, "the game screen was never painted"
    assert not [f.index for f in games if any("Where" in row for row in f.screen)], "the side panel was painted"
    shown = {tuple(row for row in f.screen if INTRO in row) for f in recorder.frames}
    assert len(shown - {()}) == 1  # the intro's rows never re-wrapped


async def test_a_story_that_fails_to_load_behind_the_intro_ends_the_app_with_its_message():
    def load() -> Session:
        raise SaveError("/nowhere/shore.jsonl", "cannot create the save: read-only file system")

    app = StoryloomApp(Opening("The Shore", INTRO, load), blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 2
    assert "read-only file system" in app.failure


CHILD = """
import json, os, sys
from textual.app import App

# Measures the first real paint, so it wraps Textual's private display step directly.
_display = App._display
def display(self, screen, renderable):
    _display(self, screen, renderable)
    if renderable is not None:
        print(json.dumps({"screen": type(screen).__name__,
                          "engine_loaded": "pydantic" in sys.modules or "storyloom.engine.lifecycle" in sys.modules}))
        sys.stdout.flush()
        os._exit(0)
App._display = display
_run = App.run
App.run = lambda self, *a, **k: _run(self, *a, **{**k, "headless": True, "size": (100, 30)})
from storyloom.tui.cli import main
main(["play"])
"""


def test_plain_storyloom_paints_its_first_frame_before_loading_the_engine(tmp_path):
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path)}
    for name in ("ANTHROPIC_API_KEY", "STORYLOOM_NARRATOR", "OPENAI_API_KEY"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=60)
    first = json.loads(done.stdout.strip().splitlines()[-1])
    assert first == {"screen": "OpeningScreen", "engine_loaded": False}, done.stderr[-2000:]
