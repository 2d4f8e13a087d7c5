"""`storyloom diff`: two paths of a story compared, with the exact output a player or a script reads
(same save's two branches, two saves, no common start, identical paths, JSON, untrusted prose)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.packs import load_pack
from storyloom.saves.format import SaveHeader
from storyloom.saves.writer import Journal
from storyloom.tui.cli import main
from tests.conftest import SHORE_PACK, ScriptedNarrator, structured
from tests.test_saves_kit import play

TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
GO_NORTH = [{"op": "replace", "path": "/location", "value": "path"}]
TAKE_KEY = [{"op": "replace", "path": "/items/key", "value": "player"}]
HURT = [{"op": "replace", "path": "/stats/health", "value": 8}]
LINES = {
    "take lamp": structured("You lift the brass lamp.", TAKE_LAMP),
    "north": structured("You go north, up the Cliff Path.", GO_NORTH),
    "take key": structured("You take the iron key from the path, cold and heavy in your hand.", TAKE_KEY),
    "wait": structured("You wait. The waves go on.", []),
    "fall": structured("You slip on the wet rocks and bruise your knee.", HURT),
}


@pytest.fixture(autouse=True)
def _terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)


def _save(name: str, commands: list[str], replies: list[str] | None = None) -> str:
    """A save of the shore story (its pack file beside it) played with scripted answers: each
    command gets the answer of the same name, or of the name `replies` gives in its place."""
    pack_file = Path("shore.toml")
    pack_file.write_text(SHORE_PACK, encoding="utf-8")
    pack = load_pack(str(pack_file.resolve()))
    said = [c for c in replies or commands if not c.startswith("/")]
    narrator = ScriptedNarrator([LINES[c] for c in said])
    session = Session(pack, narrator)
    header = SaveHeader.for_session(pack, narrator, source=str(pack_file.resolve()))
    with Journal.create(Path(name), header) as journal:
        asyncio.run(play(session, journal, commands))
    return name


def test_two_branches_of_one_save_fork_where_the_branch_started(capsys: pytest.CaptureFixture[str]) -> None:
    save = _save("s.jsonl", ["take lamp", "north", "take key", "/branch 1", "fall"])
    assert main(["diff", save, "--branch", "1", "--branch", "2"]) == 1
    assert capsys.readouterr().out == (
        "A  s.jsonl, branch 1 of 2: 3 turns\n"
        "B  s.jsonl, branch 2 of 2: 2 turns\n"
        "They share 1 turn and fork after turn 1 (> take lamp).\n"
        "After the fork, A plays: north, take key\n"
        "                B plays: fall\n"
        "\n"
        "A                            │ B\n"
        "turn 2 > north               │ turn 4 > fall\n"
        "You go north, up the Cliff   │ You slip on the wet rocks\n"
        "Path.                        │ and bruise your knee.\n"
        "                             │\n"
        "turn 3 > take key            │\n"
        "You take the iron key from   │\n"
        "the path, cold and heavy in  │\n"
        "your hand.                   │\n"
        "\n"
        "The worlds at the ends (A │ B):\n"
        "  room: Cliff Path │ Rocky Shore\n"
        "  iron key: the player's inventory │ Cliff Path\n"
        "  stat health: 10 │ 8\n"
    )


def test_two_saves_of_one_script_part_where_the_story_went_elsewhere(capsys: pytest.CaptureFixture[str]) -> None:
    a = _save("a.jsonl", ["take lamp", "north"])
    b = _save("b.jsonl", ["take lamp", "north"], replies=["take lamp", "wait"])
    assert main(["diff", a, b]) == 1
    assert capsys.readouterr().out == (
        "A  a.jsonl: 2 turns\n"
        "B  b.jsonl: 2 turns\n"
        "They share 1 turn and fork after turn 1 (> take lamp).\n"
        "After the fork, A plays: north\n"
        "                B plays: north\n"
        "\n"
        "A                            │ B\n"
        "turn 2 > north               │ turn 2 > north\n"
        "You go north, up the Cliff   │ You wait. The waves go on.\n"
        "Path.                        │\n"
        "\n"
        "The worlds at the ends (A │ B):\n"
        "  room: Cliff Path │ Rocky Shore\n"
    )
    assert main(["diff", a, b, "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data == {
        "a": {"save": "a.jsonl", "branch": 1, "branches": 1, "turns": 2, "ending": None},
        "b": {"save": "b.jsonl", "branch": 1, "branches": 1, "turns": 2, "ending": None},
        "identical": False,
        "common": 1,
        "fork": {"turn": 1, "player_input": "take lamp"},
        "after_fork": {
            "a": [
                {
                    "turn": 2,
                    "player_input": "north",
                    "narrative": "You go north, up the Cliff Path.",
                    "state_hash": data["after_fork"]["a"][0]["state_hash"],
                }
            ],
            "b": [
                {
                    "turn": 2,
                    "player_input": "north",
                    "narrative": "You wait. The waves go on.",
                    "state_hash": data["after_fork"]["b"][0]["state_hash"],
                }
            ],
        },
        "world": [{"section": "room", "key": "", "a": "path", "b": "shore"}],
    }
    assert data["after_fork"]["a"][0]["state_hash"] != data["after_fork"]["b"][0]["state_hash"]


def test_paths_with_no_common_start_part_at_the_first_turn(capsys: pytest.CaptureFixture[str]) -> None:
    a = _save("a.jsonl", ["wait"])
    b = _save("b.jsonl", ["take lamp"])
    assert main(["diff", a, b]) == 1
    assert capsys.readouterr().out == (
        "A  a.jsonl: 1 turn\n"
        "B  b.jsonl: 1 turn\n"
        "They share no turn: they part at the first.\n"
        "After the fork, A plays: wait\n"
        "                B plays: take lamp\n"
        "\n"
        "A                            │ B\n"
        "turn 1 > wait                │ turn 1 > take lamp\n"
        "You wait. The waves go on.   │ You lift the brass lamp.\n"
        "\n"
        "The worlds at the ends (A │ B):\n"
        "  brass lamp: Rocky Shore │ the player's inventory\n"
    )


def test_identical_paths_say_so_and_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    a = _save("a.jsonl", ["take lamp", "north"])
    b = _save("b.jsonl", ["take lamp", "north"])
    assert main(["diff", a, b]) == 0
    assert capsys.readouterr().out == (
        "A  a.jsonl: 2 turns\n"
        "B  b.jsonl: 2 turns\n"
        "The paths are the same: 2 turns, the same commands, prose and world.\n"
    )


def test_model_prose_reaches_the_diff_without_escape_sequences(capsys: pytest.CaptureFixture[str]) -> None:
    LINES["glitch"] = structured("The sea \x1b[2J\x1b]0;owned\x07roars [bold]on[/bold].", [])
    a = _save("a.jsonl", ["wait"])
    b = _save("b.jsonl", ["wait"], replies=["glitch"])
    assert main(["diff", a, b]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "The sea roars" in out and "[bold]on[/bold]." in out  # shown as the text it is, never as markup


def test_wrong_arguments_and_other_stories_are_refused_with_a_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _save("a.jsonl", ["wait"])
    assert main(["diff", a]) == 2
    assert "diff of one save compares two of its branches: --branch 1 --branch 2" in capsys.readouterr().err
    assert main(["diff", a, "--branch", "1", "--branch", "3"]) == 2
    assert "the save has no branch 3 (it has one branch, 1)" in capsys.readouterr().err
    assert main(["diff", a, str(tmp_path / "missing.jsonl")]) == 2
    capsys.readouterr()
