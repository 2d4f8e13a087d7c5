"""A forged save (a commit's prose, its patch or its state hash edited, or a branch record changed, every
hash after it recomputed) is refused by every command that reads a save, with the same words: verify,
replay (in the app and headless, of any branch), both exports (of any branch), diff, and resume, in the
app, in headless play and for a screen reader. None of them writes to it, and none shows it as sound."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from storyloom.engine.packs import load_pack
from storyloom.engine.state import initial_state, state_hash
from storyloom.saves.reader import load_save
from storyloom.tui.cli import main
from tests.test_saves_kit import played_save, rewrite_records

COMMANDS = ["look", "take rope", "north", "look"]
BRANCHED = [*COMMANDS, "/branch 2", "east", "look", "/switch 1", "up"]
"""Turns 1-4 on branch 1, then branch 2 from turn 2 (turns 5, 6), then branch 1 again (turn 7)."""


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def _commit_of(records: list[dict[str, Any]], turn: int) -> dict[str, Any]:
    return next(r for r in records if r["kind"] == "turn_committed" and r["data"]["turn"] == turn)


def _prose_of(turn: int) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def edit(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        data = _commit_of(records, turn)["data"]
        data["narrative"] = "You win. " + data["narrative"]
        return records

    return edit


_prose = _prose_of(3)


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


def _branch_record(kind: str, **changes: Any) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def edit(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        next(r for r in records if r["kind"] == kind)["data"].update(changes)
        return records

    return edit


FORGERIES: dict[str, tuple[Callable[[list[dict[str, Any]]], list[dict[str, Any]]], str]] = {
    "prose": (_prose, "the commit of turn 3 is not what the model's answer recorded for it"),
    "patch": (_patch, "the commit of turn 2 is not what the model's answer recorded for it"),
    "state hash": (_state_hash, "the commit of turn 2 leads to state"),
    "state hash of a turn that changed nothing": (_unchanged_state_hash, "the commit of turn 4 leads to state"),
    "prose on another branch": (_prose_of(5), "the commit of turn 5 is not what the model's answer recorded for it"),
    "a branch's world": (_branch_record("branch_started", state_hash="ab" * 32), "branch 2 stands at state"),
    "a branch's fork": (_branch_record("branch_started", turn=3), "branch 2 stands at state"),
    "a branch's parent": (_branch_record("branch_started", parent=2), "record 13 starts branch 2"),
    "a switch's world": (_branch_record("branch_switched", state_hash="ab" * 32), "branch 1 stands at state"),
    "a switch's branch": (_branch_record("branch_switched", branch=2), "record 20 switches to branch 2"),
    "a switch's turn": (_branch_record("branch_switched", turn=9), "record 20 switches to branch 1 at turn 9"),
}


VERSIONED = ["look", "take rope", "/regenerate", "/choose 1", "north", "drop rope", "/undo", "/branch 2", "east"]
"""Turn 2 with two versions, version 1 chosen; turn 4 undone; branch 2 from turn 2."""


def _choice(**changes: Any) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def edit(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        data = next(r for r in records if r["kind"] == "alternative_chosen")["data"]
        data.update({key: change(data[key]) for key, change in changes.items()})
        return records

    return edit


VERSIONED_FORGERIES: dict[str, tuple[Callable[[list[dict[str, Any]]], list[dict[str, Any]]], str]] = {
    "a choice's prose": (_choice(narrative=lambda n: "You win. " + n), "version 1 of turn 2 is not what was chosen"),
    "a choice's suggestions": (_choice(suggestions=lambda _: ["You win."]), "version 1 of turn 2 is not what was"),
    "an undo's turn": (
        _branch_record("turn_undone", turn=2),
        "record 17 is an undo after turn 2, but the last turn played is 4",
    ),
}
"""Forgeries of a save with versions, a choice and an undo (verify took them; replay called them divergences)."""


KEPT = [*COMMANDS, "/branch 2", "east"]
"""With faults 0.5 and seed 2, turn 3 is committed by a correction that leaves its narrative out: it keeps
the prose on screen, which the first answer wrote (the commit's prose was taken on trust there)."""
KEPT_FORGERIES = {
    "prose a correction kept": (_prose, "the commit of turn 3 is not what the model's answer recorded for it"),
}


@pytest.fixture(params=[*FORGERIES, *VERSIONED_FORGERIES, *KEPT_FORGERIES])
def forged(request, tmp_path) -> tuple[Path, str]:
    name, path = request.param, tmp_path / "forged.jsonl"
    _played_for(name, path)
    edit, words = {**FORGERIES, **VERSIONED_FORGERIES, **KEPT_FORGERIES}[name]
    rewrite_records(path, edit)
    return path, words


def _played_for(name: str, path: Path) -> None:
    """The save a forgery (or damage) is made in, as it was played."""
    if name in KEPT_FORGERIES:
        played_save(path, KEPT, faults=0.5, seed=2)
        kept = [r for r in load_save(path).records if r.kind == "attempt_finished" and r.turn == 3][-1]
        assert '"narrative"' not in (kept.event.raw or ""), "the forgery needs a commit whose answer keeps the prose"
    else:
        played_save(path, VERSIONED if name in VERSIONED_FORGERIES else BRANCHED, faults=0.0)


def _commands(tmp_path: Path) -> str:
    commands = tmp_path / "more.txt"
    commands.write_text("east\n", encoding="utf-8")
    return str(commands)


def test_every_command_refuses_a_forged_save_with_the_same_words(forged, tmp_path, capsys, monkeypatch):
    import io

    import storyloom.tui.cli.ui as ui

    path, words = forged
    sound, _, _ = played_save(tmp_path / "sound.jsonl", BRANCHED, faults=0.0)
    monkeypatch.setattr(ui, "run_replay", lambda *args: 0)  # the replay in the app: only its reading is tried
    monkeypatch.setattr("sys.stdin", io.StringIO("east\n"))  # the screen reader's commands
    before = path.read_bytes()
    runs = {
        "verify": ["verify", str(path)],
        "replay": ["replay", "--headless", str(path)],
        "replay of branch 1": ["replay", "--headless", "--branch", "1", str(path)],
        "replay of branch 2": ["replay", "--headless", "--branch", "2", str(path)],
        "replay (app)": ["replay", str(path)],
        "replay of branch 2 (app)": ["replay", "--branch", "2", str(path)],
        "export md": ["export", str(path), "--format", "md"],
        "export json": ["export", str(path), "--format", "json"],
        "export md of branch 2": ["export", str(path), "--format", "md", "--branch", "2"],
        "export json of branch 1": ["export", str(path), "--format", "json", "--branch", "1"],
        "diff of its branches": ["diff", str(path), "--branch", "1", "--branch", "2"],
        "diff against a sound save": ["diff", str(sound), str(path), "--format", "json"],
        "resume headless": ["play", "--headless", "--resume", str(path), "--commands", _commands(tmp_path)],
        "resume (app)": ["play", "--resume", str(path)],  # not a terminal: read and checked before the app
        "resume (screen reader)": ["play", "--screen-reader", "--resume", str(path)],
    }
    for name, argv in runs.items():
        capsys.readouterr()
        code = main(argv)
        out, err = capsys.readouterr()
        assert code != 0, f"{name} accepted a forged save:\n{out}{err}"
        if name.startswith("diff"):  # 1 is "the paths differ": a save it cannot trust is 2, as diff(1) says trouble
            assert code == 2, f"{name} exited {code}:\n{out}{err}"
        assert words in out + err, f"{name} said:\n{out}{err}"
        if name != "verify":  # verify's report and the refusal may quote what differs; nothing shows it as story
            story = [line for line in out.splitlines() if not line.startswith("storyloom: ")]
            assert not any("You win." in line for line in story), f"{name} showed the forged prose:\n{out}"
        assert path.read_bytes() == before, f"{name} wrote to the forged save"


def test_a_sound_save_is_still_read_by_every_command(tmp_path, capsys):
    path, _, _ = played_save(tmp_path / "sound.jsonl", BRANCHED, faults=0.0)
    for argv in (
        ["verify", str(path)],
        ["replay", "--headless", str(path)],
        ["replay", "--headless", "--branch", "2", str(path)],
        ["export", str(path), "--format", "json"],
        ["export", str(path), "--format", "md", "--branch", "2"],
        ["play", "--headless", "--resume", str(path), "--commands", _commands(tmp_path)],
    ):
        assert main(argv) == 0, capsys.readouterr()
    assert main(["diff", str(path), "--branch", "1", "--branch", "2"]) == 1, capsys.readouterr()  # they differ


def _lines(edit: Callable[[list[bytes]], list[bytes]]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        path.write_bytes(b"".join(edit(path.read_bytes().splitlines(keepends=True))))

    return damage


def _byte_changed(lines: list[bytes]) -> list[bytes]:
    lines[6] = lines[6].replace(b'"turn":', b'"turN":', 1)
    return lines


def _replaced(lines: list[bytes]) -> list[bytes]:
    """Record 4 re-signed on its own after another `prev`: whole in itself, not in the chain."""
    from storyloom.engine.state import canonical_json
    from storyloom.saves.format import record_hash

    record = json.loads(lines[4])
    record["prev"] = "ef" * 32
    record.pop("hash")
    record["hash"] = record_hash(record)
    lines[4] = canonical_json(record).encode() + b"\n"
    return lines


def _newer(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    records[0]["data"]["version"] = 99
    return records


def _switch_dropped(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Without its switch back to branch 1, turn 7 ("up" from the yard) is judged on branch 2, at the shore."""
    return [r for r in records if r["kind"] != "branch_switched"]


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "a byte changed inside a record": (_lines(_byte_changed), "does not match its hash: bytes inside it were changed"),
    "a line that is not JSON": (_lines(lambda ls: [*ls[:5], b"{not json\n", *ls[6:]]), "is not valid JSON"),
    "a record deleted": (_lines(lambda ls: [*ls[:5], *ls[6:]]), "record 5 is missing"),
    "records swapped": (_lines(lambda ls: [*ls[:5], ls[6], ls[5], *ls[7:]]), "records are out of order"),
    "a record copied": (_lines(lambda ls: [*ls[:6], ls[3], *ls[6:]]), "is a second copy of an earlier record"),
    "a record replaced by another": (_lines(_replaced), "record 4 does not follow the hash of record 3"),
    "a newer format": (lambda path: rewrite_records(path, _newer), "newer than this storyloom"),
    "a commit the rules refuse": (
        lambda path: rewrite_records(path, _switch_dropped),
        "the commit of turn 7 does not pass the rules against the state before it",
    ),
}
"""The other rows of docs/saves.md's table of damage (a changed story pack: tests/test_journal_damage.py)."""


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_every_command_refuses_every_damage_in_the_table_with_the_same_words(damage, tmp_path, capsys, monkeypatch):
    import io

    import storyloom.tui.cli.ui as ui

    path, _, _ = played_save(tmp_path / "damaged.jsonl", BRANCHED, faults=0.0)
    sound, _, _ = played_save(tmp_path / "sound.jsonl", BRANCHED, faults=0.0)
    edit, words = DAMAGE[damage]
    edit(path)
    monkeypatch.setattr(ui, "run_replay", lambda *args: 0)
    monkeypatch.setattr("sys.stdin", io.StringIO("east\n"))
    before = path.read_bytes()
    for name, argv in {
        "verify": ["verify", str(path)],
        "replay": ["replay", "--headless", str(path)],
        "replay of branch 2": ["replay", "--headless", "--branch", "2", str(path)],
        "replay (app)": ["replay", str(path)],
        "export md": ["export", str(path), "--format", "md"],
        "export json of branch 2": ["export", str(path), "--format", "json", "--branch", "2"],
        "diff of its branches": ["diff", str(path), "--branch", "1", "--branch", "2"],
        "diff against a sound save": ["diff", str(sound), str(path)],
        "resume headless": ["play", "--headless", "--resume", str(path), "--commands", _commands(tmp_path)],
        "resume (app)": ["play", "--resume", str(path)],
        "resume (screen reader)": ["play", "--screen-reader", "--resume", str(path)],
    }.items():
        capsys.readouterr()
        code = main(argv)
        out, err = capsys.readouterr()
        assert code != 0, f"{name} accepted a save with {damage}:\n{out}{err}"
        assert code == 2 or not name.startswith("diff"), f"{name} exited {code} ('the paths differ')"
        assert words in out + err, f"{name} said:\n{out}{err}"
        assert path.read_bytes() == before, f"{name} wrote to the damaged save"


@pytest.mark.parametrize("forgery", [*FORGERIES, *VERSIONED_FORGERIES, *KEPT_FORGERIES, *DAMAGE])
def test_a_resume_record_left_before_the_save_was_forged_changes_nothing(forgery, tmp_path, capsys, monkeypatch):
    """The save was played and closed on this machine (which leaves its resume record), then forged or
    damaged: every resume still reads it whole and refuses it with the same words."""
    import io

    from storyloom.saves import resume_record
    from storyloom.saves.resume import remember

    path = tmp_path / "forged.jsonl"
    _played_for(forgery, path)
    remember(path, load_pack("lighthouse"), new=True)
    assert list(resume_record.records_folder().glob("*.resume")), "the save has its resume record"
    if forgery in DAMAGE:
        damage, words = DAMAGE[forgery]
        damage(path)
    else:
        edit, words = {**FORGERIES, **VERSIONED_FORGERIES, **KEPT_FORGERIES}[forgery]
        rewrite_records(path, edit)
    monkeypatch.setattr("sys.stdin", io.StringIO("east\n"))
    before = path.read_bytes()
    for name, argv in {
        "resume headless": ["play", "--headless", "--resume", str(path), "--commands", _commands(tmp_path)],
        "resume (app)": ["play", "--resume", str(path)],
        "resume (screen reader)": ["play", "--screen-reader", "--resume", str(path)],
    }.items():
        capsys.readouterr()
        code = main(argv)
        out, err = capsys.readouterr()
        assert code != 0, f"{name} accepted a forged save that had a resume record:\n{out}{err}"
        assert words in out + err, f"{name} said:\n{out}{err}"
        assert path.read_bytes() == before, f"{name} wrote to the forged save"
