"""What `storyloom --help` and `storyloom stories` tell a player agrees with what storyloom does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from storyloom.saves import replay as saves_replay
from storyloom.tui.cli import build_parser, main
from storyloom.tui.settings import DEFAULT_STORY
from tests.test_saves_kit import played_save


def _help(command: str) -> str:
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    return " ".join(sub.format_help().split())


def test_the_story_help_names_the_story_that_plays_and_stories_lists_it_first(capsys):
    assert f"(default: {DEFAULT_STORY})" in _help("play")
    assert "first story" not in _help("play")
    assert main(["stories"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(DEFAULT_STORY) and "(the default)" in lines[0]
    assert sum("default" in line for line in lines) == 1


@pytest.mark.parametrize("flag", ["--narrator", "--model", "--base-url", "--seed", "--max-tokens"])
def test_every_play_flag_says_what_it_does(flag):
    parser = build_parser()
    play = parser._subparsers._group_actions[0].choices["play"]  # type: ignore[union-attr]
    action = next(a for a in play._actions if flag in a.option_strings)
    assert action.help and len(action.help) > 20


def test_replay_help_offers_speed_inf():
    text = _help("replay")
    assert "inf" in text and "as fast as possible" in text


@pytest.mark.parametrize(
    ("extra", "speed"),
    [(["--headless"], float("inf")), (["--headless", "--speed", "3"], 3.0)],
)
def test_a_headless_replay_runs_as_fast_as_possible_unless_told(tmp_path: Path, monkeypatch, extra, speed, capsys):
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope"], faults=0.0)
    seen: list[float] = []
    real = saves_replay.stream_plan  # a headless replay reads the save as it replays it

    def spy(save: Any, **options: Any) -> Any:
        seen.append(options["speed"])
        return real(save, **options)

    monkeypatch.setattr(saves_replay, "stream_plan", spy)
    assert main(["replay", str(path), *extra]) == 0
    assert seen == [speed]
