"""A forged save (a commit's prose, its patch or its state hash edited, every hash after it recomputed)
is refused by every command that reads a save, with the same words: verify, replay, both exports, and
resume, in the app and in headless play. None of them writes to it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from storyloom.engine.packs import load_pack
from storyloom.engine.state import initial_state, state_hash
from storyloom.tui.cli import main
from tests.test_saves_kit import played_save, rewrite_records

COMMANDS = ["look", "take rope", "north", "look"]


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def _commit_of(records: list[dict[str, Any]], turn: int) -> dict[str, Any]:
    return next(r for r in records if r["kind"] == "turn_committed" and r["data"]["turn"] == turn)


def _prose(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    data = _commit_of(records, 3)["data"]
    data["narrative"] = "You win. " + data["narrative"]
    return records


def _patch(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turn 2 ("take rope") committed with no patch, and the state hash that an empty patch gives: only
    the model's recorded answer says the commit was otherwise."""
    pack = load_pack("lighthouse")
    state = initial_state(pack)
    for record in records:
        if record["kind"] == "turn_committed" and record["data"]["turn"] == 1:
            state = jsonpatch.apply_patch(state, record["data"]["state_patch"])
    data = _commit_of(records, 2)["data"]
    assert data["state_patch"], "the forgery needs a turn that changed the world"
    data["state_patch"] = []
    data["state_hash"] = state_hash(state)
    return records


def _state_hash(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    data = _commit_of(records, 2)["data"]
    data["state_hash"] = "ab" * 32
    return records


def _unchanged_state_hash(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turn 4 ("look") changes nothing: its state hash is the one turn 3 proved, never taken on trust."""
    data = _commit_of(records, 4)["data"]
    assert not data["state_patch"], "the forgery needs a turn that changed nothing"
    data["state_hash"] = "cd" * 32
    return records


FORGERIES: dict[str, tuple[Callable[[list[dict[str, Any]]], list[dict[str, Any]]], str]] = {
    "prose": (_prose, "the commit of turn 3 is not what the model's answer recorded for it"),
    "patch": (_patch, "the commit of turn 2 is not what the model's answer recorded for it"),
    "state hash": (_state_hash, "the commit of turn 2 leads to state"),
    "state hash of a turn that changed nothing": (_unchanged_state_hash, "the commit of turn 4 leads to state"),
}


@pytest.fixture(params=list(FORGERIES))
def forged(request, tmp_path) -> tuple[Path, str]:
    path, _, _ = played_save(tmp_path / "forged.jsonl", COMMANDS, faults=0.0)
    edit, words = FORGERIES[request.param]
    rewrite_records(path, edit)
    return path, words


def _commands(tmp_path: Path) -> str:
    commands = tmp_path / "more.txt"
    commands.write_text("east\n", encoding="utf-8")
    return str(commands)


def test_every_command_refuses_a_forged_save_with_the_same_words(forged, tmp_path, capsys):
    path, words = forged
    before = path.read_bytes()
    runs = {
        "verify": ["verify", str(path)],
        "replay": ["replay", "--headless", str(path)],
        "export md": ["export", str(path), "--format", "md"],
        "export json": ["export", str(path), "--format", "json"],
        "resume headless": ["play", "--headless", "--resume", str(path), "--commands", _commands(tmp_path)],
        "resume (app)": ["play", "--resume", str(path)],  # not a terminal: read and checked before the app
    }
    for name, argv in runs.items():
        capsys.readouterr()
        code = main(argv)
        out, err = capsys.readouterr()
        assert code != 0, f"{name} accepted a forged save:\n{out}{err}"
        assert words in out + err, f"{name} said:\n{out}{err}"
        if name != "verify":  # verify's report may quote what differs; nothing else shows the forged prose
            assert "You win." not in out, name
        assert path.read_bytes() == before, f"{name} wrote to the forged save"


def test_a_sound_save_is_still_read_by_every_command(tmp_path, capsys):
    path, _, _ = played_save(tmp_path / "sound.jsonl", COMMANDS, faults=0.0)
    for argv in (
        ["verify", str(path)],
        ["replay", "--headless", str(path)],
        ["export", str(path), "--format", "json"],
        ["play", "--headless", "--resume", str(path), "--commands", _commands(tmp_path)],
    ):
        assert main(argv) == 0, capsys.readouterr()
