"""The command line as a newcomer meets it: a replay that reads as the story, a save list that fits
the terminal, counts that agree with their nouns."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from storyloom.engine.packs import load_pack
from storyloom.tui.cli import main

DRAFT_ONLY = re.compile(r"You also pocket|On your way, you pick up .* as well|And you take .* too")
"""What the offline narrator's first attempt at `north` (seed 5, faults 0.5) adds and the rules reject."""


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("COLUMNS", raising=False)
    return tmp_path / "data" / "storyloom" / "saves"


def _played(tmp_path: Path, *lines: str, seed: int = 5) -> Path:
    commands = tmp_path / "walk.txt"
    commands.write_text("\n".join(lines) + "\n")
    save = tmp_path / "walk.jsonl"
    args = ["play", "--headless", "--commands", str(commands), "--faults", "0.5", "--seed", str(seed)]
    assert main([*args, "--save", str(save)]) == 0
    return save


def test_a_headless_replay_prints_the_committed_prose_with_one_line_per_correction(
    data_home: Path, tmp_path: Path, capsys
) -> None:
    save = _played(tmp_path, "look", "take rope", "north")
    capsys.readouterr()
    assert main(["replay", str(save), "--headless"]) == 0
    out = capsys.readouterr().out
    assert not DRAFT_ONLY.search(out), out
    assert "[corrected]" not in out
    take, north = out.split("> take rope", 1)[1].split("> north", 1)
    assert "[correction 1 for turn.schema: prose kept]" in take
    assert "[correction 1 for item.take_reach: rejected again]" in north
    assert "[correction 2 for item.take_reach: prose swapped]" in north
    assert "Cliff Path" in north.split("prose swapped]", 1)[1]  # the committed prose, after its corrections
    pack = load_pack("lighthouse")  # the story opens as headless play printed it: its title and intro
    assert out.startswith(f"{pack.title}\n\n{pack.intro.strip()}\n"), out[:300]
    assert out.count("You pick up the coil of rope") + out.count("coil of rope") >= 1


def test_a_headless_replay_shows_the_drafts_only_when_asked(data_home: Path, tmp_path: Path, capsys) -> None:
    save = _played(tmp_path, "look", "take rope", "north")
    capsys.readouterr()
    assert main(["replay", str(save), "--headless", "--drafts"]) == 0
    out = capsys.readouterr().out
    assert DRAFT_ONLY.search(out) and "[corrected]" in out


def _table(out: str) -> list[str]:
    lines = out.splitlines()
    return lines[lines.index(next(line for line in lines if line.startswith("SAVE"))) :]


@pytest.mark.parametrize("width", [80, 100, 60])
def test_saves_fits_the_terminal_width_dropping_the_least_important_columns(
    data_home: Path, tmp_path: Path, capsys, monkeypatch, width: int
) -> None:
    data_home.mkdir(parents=True)
    _played(tmp_path, "look", "take rope").rename(data_home / "lighthouse-20261202-101010.jsonl")
    (data_home / "damaged-with-a-rather-long-name.jsonl").write_text("not a save\n")
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # a terminal this wide
    assert main(["saves"]) == 0
    table = _table(capsys.readouterr().out)
    assert all(len(line) <= width for line in table), table
    assert table[0].startswith("SAVE") and "TURNS" in table[0]
    row = next(line for line in table if line.startswith("lighthouse-20261202-101010.jsonl"))
    assert "2 turns" in row
    if width >= 80:
        assert "LAST PLAYED" in table[0] and "UTC" in row
    assert any(line.startswith("damaged-with") for line in table)


def test_saves_piped_prints_whole_rows(data_home: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    data_home.mkdir(parents=True)
    _played(tmp_path, "look").rename(data_home / "one.jsonl")
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "40")  # not a terminal: the width does not apply
    assert main(["saves"]) == 0
    table = _table(capsys.readouterr().out)
    assert "lighthouse (The Lighthouse Keeper)" in table[1] and "1 turn in the story" in table[1]
    assert table[0].split()[-1] == "SIZE"


def test_check_story_says_each_count_with_its_noun_agreeing(data_home: Path, capsys) -> None:
    """The README's example pack has one stat and one ending: "1 stats, … 1 endings" read as a slip."""
    example = Path(__file__).parent / "packs" / "example.toml"
    assert main(["check-story", str(example)]) == 0
    summary = capsys.readouterr().out.splitlines()[0]
    assert "1 stat," in summary and summary.endswith("1 ending"), summary
    assert not re.search(r"\b1 [a-z]+s\b", summary), summary
