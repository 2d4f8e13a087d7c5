"""The built-in stories are complete games: big enough, playable to their endings, never an invalid turn."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from storyloom.engine.builtin import builtin_pack_ids
from storyloom.engine.events import StoryEnded, TurnCommitted, ValidationFailed
from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.tui.cli import main
from storyloom.tui.settings import DEFAULT_STORY

WALKS = Path(__file__).parent / "walkthroughs"
STORIES = ["lighthouse", "glasshouse"]


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    """Saves and config go to a temporary folder, never the tester's own."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def test_the_built_in_stories_include_the_default():
    assert set(STORIES) <= set(builtin_pack_ids())
    assert DEFAULT_STORY in builtin_pack_ids()


@pytest.mark.parametrize("story", STORIES)
def test_each_story_has_a_world_worth_exploring(story):
    pack = load_pack(story)
    assert len(pack.rooms) >= 6 and len(pack.items) >= 8
    assert pack.stats and pack.flags and pack.endings
    gated = {flag for room in pack.rooms.values() for flag in room.gates.values()}
    assert gated and gated <= set(pack.flags)
    verbs = {verb for action in pack.actions.values() for verb in action.verbs}
    assert {"use", "open", "close"} <= verbs
    assert any(a.effects.stats for a in pack.actions.values())  # the stat matters to play


@pytest.mark.parametrize("story", STORIES)
def test_each_story_is_listed_by_storyloom_stories(story, capsys):
    assert main(["stories"]) == 0
    assert load_pack(story).title in capsys.readouterr().out


@pytest.mark.parametrize("story", STORIES)
def test_each_story_passes_check_story(story, capsys):
    path = Path(__file__).parents[1] / "engine" / "stories" / f"{story}.toml"
    assert main(["check-story", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"ok: {story}")


@pytest.mark.parametrize("story", STORIES)
def test_each_story_can_be_played_to_its_ending_headless(story, capsys):
    code = main(["play", "--headless", "--story", story, "--commands", str(WALKS / f"{story}.txt")])
    out = capsys.readouterr().out
    ending = next(iter(load_pack(story).endings.values()))
    assert code == 0
    assert ending.title in out and ending.text.splitlines()[0] in out


@pytest.mark.parametrize("story", STORIES)
async def test_each_walk_through_reaches_its_ending_even_with_faults(story):
    pack = load_pack(story)
    lines = [ln for ln in (WALKS / f"{story}.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    session = Session(pack, OfflineNarrator(pack, seed=5, faults=0.5, stubborn=0.0))
    endings = []
    for line in lines:
        events = [e async for e in session.play(line)]
        endings += [e for e in events if isinstance(e, StoryEnded)]
    assert [e.ending for e in endings] == list(pack.endings)[:1]


def _random_line(pack, rng: random.Random) -> str:
    words = [w for i in pack.items for w in pack.item_words(i)] + list(pack.rooms)
    verbs = [
        "look",
        "x",
        "take",
        "drop",
        "go",
        "use",
        "open",
        "close",
        "i",
        "wait",
        "help",
        "n",
        "s",
        "e",
        "w",
        "u",
        "d",
        "in",
        "out",
        "pick up",
        "read",
        "turn",
        "light",
        "fill",
        "sing",
    ]
    verbs += [v for a in pack.actions.values() for v in a.verbs]
    return f"{rng.choice(verbs)} {rng.choice(words) if rng.random() < 0.7 else ''}".strip()


@pytest.mark.parametrize("story", STORIES)
async def test_random_play_never_produces_a_turn_the_rules_reject(story):
    pack = load_pack(story)
    rng = random.Random(story)
    session = Session(pack, OfflineNarrator(pack, seed=3))
    for _ in range(400):
        events = [e async for e in session.play(_random_line(pack, rng))]
        assert not [e for e in events if isinstance(e, ValidationFailed)], events
        assert any(isinstance(e, TurnCommitted) for e in events)
