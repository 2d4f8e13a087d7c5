"""The game says a story is saved only when the file reads back as the session; otherwise the session,
kept in memory, is written to a rescue beside the lost save, and the player is told where."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.saves.errors import SaveWriteError
from storyloom.saves.format import SaveHeader
from storyloom.saves.locations import saves_dir
from storyloom.saves.reader import load_save
from storyloom.saves.verify import verify_save
from storyloom.saves.writer import Journal, rescue_save
from tests.test_saves_kit import play

ROOT = Path(__file__).parent.parent


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def _commits(path: Path) -> int:
    return sum(r.kind == "turn_committed" for r in load_save(path).records)


def _wait_for(predicate, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _edit_one_byte_in_place(path: Path) -> None:
    """Another process changes one byte inside an earlier record (the first command, `look`), leaving the
    size, the header and the last record as they were."""
    blob = path.read_bytes()
    at = blob.index(b'"player_input":"look"') + len(b'"player_input":"loo')
    assert blob.index(b"\n", at) < len(blob) - 1  # not in the last record
    with open(path, "r+b") as handle:
        handle.seek(at)
        handle.write(b"l")


def test_headless_play_never_says_saved_of_a_file_changed_in_place_mid_session(tmp_path):
    save = tmp_path / "g.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "storyloom.tui.cli", "play", "--headless", "--commands", "-", "--save", str(save)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    assert process.stdin is not None
    try:
        process.stdin.write(b"look\n")  # commands from a slow pipe: one, then the rest later
        process.stdin.flush()
        _wait_for(lambda: save.exists() and b'"turn_committed"' in save.read_bytes(), "the first commit")
        _edit_one_byte_in_place(save)
        _, err_bytes = process.communicate(b"take rope\nnorth\n", timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    err = err_bytes.decode()
    assert not verify_save(save).sound  # the edited file is damaged...
    rescued = save.with_name("g-rescued.jsonl")  # ... so the session is written beside it, from memory
    assert "changed in place" in err, err
    assert f"saved to {rescued}" in err, err
    assert f"saved to {save}\n" not in err and f"saved to {save} " not in err, err
    assert verify_save(rescued).sound, verify_save(rescued).lines
    assert _commits(rescued) == 3  # every turn shown as committed reads back


def test_a_journal_that_was_edited_in_place_does_not_pass_its_check(tmp_path):
    import asyncio

    from storyloom.engine.lifecycle import Session

    pack = load_pack("lighthouse")
    narrator = OfflineNarrator(pack, seed=7, faults=0.0)
    session = Session(pack, narrator)
    path = tmp_path / "s.jsonl"
    journal = Journal.create(path, SaveHeader.for_session(pack, narrator, seed=7, faults=0.0))
    asyncio.run(play(session, journal, ["look"]))
    _edit_one_byte_in_place(path)
    asyncio.run(play(session, journal, ["take rope"]))
    assert journal.check() is not None and "changed in place" in str(journal.check())
    rescued = rescue_save(journal)
    journal.close()
    assert rescued == tmp_path / "s-rescued.jsonl"
    assert verify_save(rescued).sound and _commits(rescued) == 2


def test_a_deleted_save_is_rescued_into_its_own_folder_when_the_temp_folder_is_full(tmp_path, monkeypatch):
    import asyncio
    import tempfile

    from storyloom.engine.lifecycle import Session

    full = tmp_path / "full-temp"
    full.write_text("not a folder: nothing can be written under it\n", encoding="utf-8")
    monkeypatch.setattr(tempfile, "tempdir", str(full))
    pack = load_pack("lighthouse")
    narrator = OfflineNarrator(pack, seed=7, faults=0.0)
    session = Session(pack, narrator)
    path = saves_dir() / "lighthouse-game.jsonl"
    journal = Journal.create(path, SaveHeader.for_session(pack, narrator, seed=7, faults=0.0))
    asyncio.run(play(session, journal, ["look", "take rope"]))
    path.unlink()
    with pytest.raises(SaveWriteError, match="deleted"):
        asyncio.run(play(session, journal, ["north"]))
    asyncio.run(play(session, journal, ["look"]))  # play goes on in memory
    assert journal.check() is not None
    rescued = rescue_save(journal)
    journal.close()
    assert rescued == saves_dir() / "lighthouse-game-rescued.jsonl"
    assert verify_save(rescued).sound and _commits(rescued) == 3  # look, take rope, and the look after the loss


def test_the_app_quit_after_its_save_was_changed_in_place_names_the_rescue_not_the_file(tmp_path, monkeypatch, capsys):
    from storyloom.tui.app import StoryloomApp
    from storyloom.tui.cli import main
    from tests.test_saves_kit import played_save

    save, _, _ = played_save(tmp_path / "game.jsonl", ["look", "take rope", "north"], faults=0.0)

    def play_while_another_program_edits(app, *args, **kwargs):  # the player quits after the edit
        _edit_one_byte_in_place(save)
        return 0

    monkeypatch.setattr(StoryloomApp, "run", play_while_another_program_edits)
    code = main(["play", "--resume", str(save)])
    err = capsys.readouterr().err
    rescued = tmp_path / "game-rescued.jsonl"
    assert code == 0, err
    assert "changed in place" in err and f"saved to {rescued}" in err, err
    assert f"saved to {save}\n" not in err
    assert verify_save(rescued).sound and _commits(rescued) == 3


def test_the_screen_reader_never_says_saved_when_records_could_not_be_saved_anywhere(tmp_path, monkeypatch, capsys):
    import errno
    import io

    from storyloom.tui.cli import main
    from tests.test_hardening_disk import fail_disk, no_usable_temp_folder

    commands = ["look", "take rope", "north"]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(commands) + "\n"))
    fail_disk(monkeypatch, str(tmp_path / "nothing-matches"), errno.ENOSPC, after=8, everywhere=True)
    no_usable_temp_folder(monkeypatch)
    code = main(["play", "--screen-reader", "--save", str(tmp_path / "g.jsonl")])
    out = capsys.readouterr().out  # the screen reader's one stream
    assert code == 1, out
    assert "could not be saved anywhere" in out, out
    assert "Saved to" not in out, out


@pytest.mark.parametrize("leave", ["new game", "open save"])
def test_a_save_left_for_another_story_in_the_app_is_read_back_first(tmp_path, leave):
    """The palette's "New game" and "Open save" leave the save being played: one changed in place under
    the game is rescued from memory then, as quitting does, and the player is told where."""
    import asyncio
    import io

    from storyloom.saves.resume import start_new
    from storyloom.tui.session import PlaySession
    from tests.test_saves_kit import played_save

    other, _, _ = played_save(tmp_path / "other.jsonl", ["look"], faults=0.0)
    pack = load_pack("lighthouse")
    session, journal = start_new(pack, OfflineNarrator(pack, seed=7, faults=0.0), path=tmp_path / "game.jsonl")
    err = io.StringIO()
    play = PlaySession.around(session, journal, err=err)
    asyncio.run(play_and_record(play, ["look", "take rope"]))
    _edit_one_byte_in_place(tmp_path / "game.jsonl")
    if leave == "new game":
        play.restart()
    else:
        play.switch_to(other)
    play.close()
    rescued = tmp_path / "game-rescued.jsonl"
    assert "changed in place" in err.getvalue() and f"saved to {rescued}" in err.getvalue(), err.getvalue()
    assert "play goes on there" not in err.getvalue()  # the player has left it for another story
    assert verify_save(rescued).sound and _commits(rescued) == 2


async def play_and_record(play, commands: list[str]) -> None:
    for command in commands:
        async for event in play.session.play(command):
            play.record(event)
