"""The save commands as a player uses them: saves, export, and headless play with --save/--resume."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.saves.format import SaveHeader
from storyloom.saves.reader import load_save
from storyloom.saves.verify import verify_save
from storyloom.saves.writer import Journal
from storyloom.tui.cli import main
from storyloom.tui.cli import save_commands as commands
from tests.conftest import ScriptedNarrator, structured
from tests.test_saves_kit import kinds, play, played_save, shore_pack_file


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "data" / "storyloom" / "saves"


def test_saves_lists_each_save_with_story_turns_last_played_and_size(data_home: Path, capsys) -> None:
    data_home.mkdir(parents=True)
    played_save(data_home / "evening.jsonl", ["take rope", "north", "/undo"], faults=0.0)
    (data_home / "broken.jsonl").write_text("not a save\n")
    assert commands.saves(argparse.Namespace()) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("evening.jsonl"))
    assert "lighthouse (The Lighthouse Keeper)" in row and " 1 " in row and "UTC" in row and "kB" in row
    assert "broken.jsonl" in out and "(damaged)" in out


def test_saves_counts_a_turn_with_other_versions_once(data_home: Path, capsys) -> None:
    data_home.mkdir(parents=True)
    played_save(data_home / "versions.jsonl", ["take rope", "/regenerate", "/regenerate", "north"], faults=0.0)
    assert commands.saves(argparse.Namespace()) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("versions.jsonl"))
    assert "Keeper)  2 " in row  # two turns (the first has three versions)


def test_saves_says_where_saves_will_go_when_there_are_none(data_home: Path, capsys) -> None:
    assert commands.saves(argparse.Namespace()) == 0
    assert f"No saves yet in {data_home}" in capsys.readouterr().out


def _hostile_save(tmp_path: Path) -> Path:
    """A save whose model wrote escape sequences, bidi overrides and zero-width characters."""
    pack, pack_path = shore_pack_file(tmp_path)
    narrative = "You take the \x1b[31mbrass lamp\x1b[0m.\u202e evil \u200b\x1b]0;pwned\x07"
    narrator = ScriptedNarrator(
        [
            structured(
                narrative,
                [{"op": "replace", "path": "/items/lamp", "value": "player"}],
                suggestions=["go \x1b[2Jnorth"],
            )
        ]
    )
    session = Session(pack, narrator)
    path = tmp_path / "hostile.jsonl"

    async def go() -> None:
        with Journal.create(path, SaveHeader.for_session(pack, narrator, source=str(pack_path))) as journal:
            await play(session, journal, ["take \x1b[5mlamp"])

    asyncio.run(go())
    return path


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_export_never_carries_escape_sequences_or_invisible_characters(tmp_path: Path, capsys, fmt: str) -> None:
    path = _hostile_save(tmp_path)
    assert commands.export(argparse.Namespace(save=str(path), format=fmt)) == 0
    out = capsys.readouterr().out
    assert "brass lamp" in out
    for bad in ("\x1b", "\u202e", "\u200b", "\x07", "\\u001b", "pwned\x07"):
        assert bad not in out


def test_export_md_is_a_transcript_of_the_story_as_it_stands(tmp_path: Path, capsys) -> None:
    path, session, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope", "north", "/undo"], faults=0.0)
    assert commands.export(argparse.Namespace(save=str(path), format="md")) == 0
    out = capsys.readouterr().out
    assert out.startswith("# The Lighthouse Keeper")
    assert "The storm came in at dusk" in out  # the intro
    assert "**> look**" in out and "**> take rope**" in out and "**> north**" not in out
    assert session.history[-1].turn.narrative.split("\n")[0] in out
    assert "1 turn was undone" in out


def test_export_json_has_every_commit_with_its_patch_and_the_final_state(tmp_path: Path, capsys) -> None:
    path, session, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope", "north", "/undo"], faults=0.0)
    assert commands.export(argparse.Namespace(save=str(path), format="json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["player_input"] for t in data["turns"]] == ["look", "take rope", "north"]
    assert [t["undone"] for t in data["turns"]] == [False, False, True]
    assert data["turns"][1]["state_patch"] == [{"op": "replace", "path": "/items/rope", "value": "player"}]
    assert data["final_state"] == session.state


def test_export_of_a_damaged_save_says_what_is_wrong_and_exits_1(tmp_path: Path, capsys) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope"], faults=0.0)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2] + lines[3:]))
    assert commands.export(argparse.Namespace(save=str(path), format="md")) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "missing" in captured.err


def _commands_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / f"commands{len(list(tmp_path.iterdir()))}.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_headless_play_saves_to_the_saves_folder_by_default(data_home: Path, tmp_path: Path, capsys) -> None:
    assert main(["play", "--headless", "--commands", str(_commands_file(tmp_path, "look", "take rope"))]) == 0
    saves = list(data_home.glob("lighthouse-*.jsonl"))
    assert len(saves) == 1 and verify_save(saves[0]).sound
    assert f"saving to {saves[0]}" in capsys.readouterr().err


def test_headless_resume_continues_the_story_and_undo_is_recorded(data_home: Path, tmp_path: Path, capsys) -> None:
    save = tmp_path / "mine.jsonl"
    first = _commands_file(tmp_path, "take rope", "north")
    assert main(["play", "--headless", "--commands", str(first), "--save", str(save)]) == 0
    then = _commands_file(tmp_path, "/undo", "up")
    assert main(["play", "--headless", "--commands", str(then), "--resume", str(save)]) == 0
    out = capsys.readouterr()
    assert "resuming" in out.err and "undone" in out.out
    assert kinds(save).count("turn_undone") == 1 and "resumed" in kinds(save)
    loaded = load_save(save)
    inputs = [e.player_input for _, e in loaded.events if e.event == "turn_started"]
    assert inputs == ["take rope", "north", "up"]
    assert verify_save(save).sound


def test_headless_resume_latest_and_a_refused_save(data_home: Path, tmp_path: Path, capsys) -> None:
    assert main(["play", "--headless", "--commands", str(_commands_file(tmp_path, "look"))]) == 0
    assert (
        main(["play", "--headless", "--commands", str(_commands_file(tmp_path, "take rope")), "--resume", "latest"])
        == 0
    )
    (only,) = data_home.glob("*.jsonl")
    assert kinds(only).count("turn_committed") == 2
    lines = only.read_bytes().splitlines(keepends=True)
    only.write_bytes(b"".join(lines[:1] + lines[2:]))
    before = only.read_bytes()
    assert main(["play", "--headless", "--commands", str(_commands_file(tmp_path, "look")), "--resume", "latest"]) == 2
    assert "missing" in capsys.readouterr().err and only.read_bytes() == before


def test_headless_save_refuses_to_overwrite_a_file(tmp_path: Path, data_home: Path, capsys) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    assert main(["play", "--headless", "--commands", str(_commands_file(tmp_path, "look")), "--save", str(target)]) == 2
    assert target.read_text() == "keep me" and "already there" in capsys.readouterr().err


def test_verify_and_export_accept_latest(data_home: Path, tmp_path: Path, capsys) -> None:
    assert main(["play", "--headless", "--commands", str(_commands_file(tmp_path, "look"))]) == 0
    assert main(["verify", "latest"]) == 0
    assert main(["export", "latest", "--format", "json"]) == 0
    assert main(["replay", "latest", "--headless", "--speed", "inf"]) == 0
    out = capsys.readouterr().out
    assert "sound" in out


def test_latest_with_no_saves_says_so(data_home: Path, capsys) -> None:
    assert main(["verify", "latest"]) == 2
    assert "no saves yet" in capsys.readouterr().err


def test_text_from_a_doctored_save_never_reaches_the_terminal_as_escapes(data_home: Path, capsys) -> None:
    from tests.test_saves_kit import rewrite_records

    data_home.mkdir(parents=True)
    path, _, _ = played_save(data_home / "doctored.jsonl", ["look"], faults=0.0)

    def hostile_title(records):
        records[0]["data"]["story"]["title"] = "Keeper\x1b]0;owned\x07\x1b[2J"
        records[0]["data"]["model"] = "m\u202eodel"
        return records

    rewrite_records(path, hostile_title)
    assert commands.saves(argparse.Namespace()) == 0
    assert commands.verify(argparse.Namespace(save=str(path))) == 0
    out = capsys.readouterr().out
    assert "Keeper" in out and "\x1b" not in out and "\x07" not in out and "\u202e" not in out
