"""Disk faults while saving: a clear message, play goes on, and no committed turn is silently lost.

The save's own file stops taking writes mid-game (disk full, a read-only remount, an I/O
error, on `write` or on `fsync`), or is deleted under the running game. Headless play must
say so on stderr, write the whole story so far to another place (the saves folder, then
the temp folder) and go on there; if no place takes it, play still goes on in memory and
the exit code is 1 with the number of records that could not be saved.
"""

from __future__ import annotations

import errno
import io
import os
import tempfile
from pathlib import Path

import pytest

from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.saves.locations import saves_dir
from storyloom.saves.reader import load_save
from storyloom.saves.resume import start_new
from storyloom.saves.verify import verify_save
from storyloom.tui.cli import main
from storyloom.tui.cli.headless import finish, play_commands
from storyloom.tui.session import PlaySession
from tests.hardening.figures import tally

COMMANDS = ["look", "examine the boat", "take rope", "north", "go up", "open the tower door", "west", "take key"]


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))


def _path_of(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def fail_disk(
    monkeypatch, where: str, code: int, *, call: str = "write", after: int = 0, everywhere: bool = False
) -> None:
    """From the `after`-th call on, `os.<call>` on files under `where` (or any .jsonl file) raises `code`."""
    original = getattr(os, call)
    seen = {"n": 0}

    def faulty(fd, *args):
        path = _path_of(fd)
        if path.startswith(where) or (everywhere and (path.endswith(".jsonl") or ".tmp" in path)):
            seen["n"] += 1
            if seen["n"] > after:
                raise OSError(code, os.strerror(code))
        return original(fd, *args)

    monkeypatch.setattr(os, call, faulty)


def commits(path: Path) -> int:
    return sum(r.kind == "turn_committed" for r in load_save(path).records)


@pytest.mark.parametrize("call", ["write", "fsync"])
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EIO])
def test_a_save_that_stops_taking_writes_is_rescued_and_play_goes_on(tmp_path, monkeypatch, capsys, call, code):
    (tmp_path / "mine").mkdir()
    save = tmp_path / "mine" / "game.jsonl"
    commands = tmp_path / "c.txt"
    commands.write_text("\n".join(COMMANDS) + "\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as disk:
        fail_disk(disk, str(tmp_path / "mine"), code, call=call, after=8)
        exit_code = main(["play", "--headless", "--commands", str(commands), "--save", str(save)])
    captured = capsys.readouterr()
    assert exit_code == 0, captured.err
    assert f"could not be written ({os.strerror(code)})" in captured.err
    rescued = [p for p in saves_dir().iterdir() if p.name.endswith("-rescued.jsonl")]
    assert len(rescued) == 1 and f"saved to {rescued[0]} instead" in captured.err
    assert captured.out.count("\n> ") == len(COMMANDS)  # every command was played
    assert commits(rescued[0]) == len(COMMANDS)  # ... and every commit is in the rescued save
    assert verify_save(rescued[0]).sound
    assert commits(save) < len(COMMANDS)  # the first save stopped early, still loadable
    tally("disk faults: write/fsync failures mid-game (rescued)")


def test_a_rescued_save_resumes(tmp_path, monkeypatch, capsys):
    (tmp_path / "mine").mkdir()
    commands = tmp_path / "c.txt"
    commands.write_text("look\ntake rope\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as disk:
        fail_disk(disk, str(tmp_path / "mine"), errno.ENOSPC, after=3)
        save = str(tmp_path / "mine" / "g.jsonl")
        assert main(["play", "--headless", "--commands", str(commands), "--save", save]) == 0
    rescued = next(saves_dir().glob("*-rescued.jsonl"))
    commands.write_text("north\n", encoding="utf-8")
    assert main(["play", "--headless", "--commands", str(commands), "--resume", str(rescued)]) == 0
    assert commits(rescued) == 3
    capsys.readouterr()


def test_when_no_place_takes_the_save_play_goes_on_in_memory_and_exits_1_loudly(tmp_path, monkeypatch, capsys):
    commands = tmp_path / "c.txt"
    commands.write_text("\n".join(COMMANDS) + "\n", encoding="utf-8")
    fail_disk(monkeypatch, str(tmp_path / "nothing-matches"), errno.ENOSPC, after=8, everywhere=True)
    exit_code = main(["play", "--headless", "--commands", str(commands), "--save", str(tmp_path / "g.jsonl")])
    captured = capsys.readouterr()
    assert exit_code == 1
    assert captured.out.count("\n> ") == len(COMMANDS)
    assert "play goes on in memory" in captured.err
    assert "could not be saved anywhere" in captured.err and "Traceback" not in captured.err
    tally("disk faults: no place takes the save (exit 1, loud)")


async def test_a_save_deleted_under_a_running_game_is_noticed_and_rescued(tmp_path):
    pack = load_pack("lighthouse")
    session, journal = start_new(pack, OfflineNarrator(pack, seed=0), path=tmp_path / "game.jsonl")
    out, err = io.StringIO(), io.StringIO()
    play = PlaySession.around(session, journal, err=err)

    def lines():
        for number, command in enumerate(COMMANDS):
            if number == 3:
                (tmp_path / "game.jsonl").unlink()
            yield command

    with journal:
        code = await play_commands(play, lines(), out=out, err=err)
        code = finish(play, code)
    assert code == 0
    assert "deleted or replaced while the game was running" in err.getvalue()
    assert journal.path != tmp_path / "game.jsonl" and commits(journal.path) == len(COMMANDS)
    assert verify_save(journal.path).sound
    tally("disk faults: save deleted under a running game")


async def test_a_save_replaced_under_a_running_game_is_left_alone_and_the_story_rescued(tmp_path):
    pack = load_pack("lighthouse")
    session, journal = start_new(pack, OfflineNarrator(pack, seed=0), path=tmp_path / "game.jsonl")
    out, err = io.StringIO(), io.StringIO()
    play = PlaySession.around(session, journal, err=err)

    def lines():
        for number, command in enumerate(COMMANDS):
            if number == 2:
                (tmp_path / "game.jsonl").unlink()
                (tmp_path / "game.jsonl").write_text("someone else's file\n", encoding="utf-8")
            yield command

    with journal:
        finish(play, await play_commands(play, lines(), out=out, err=err))
    assert (tmp_path / "game.jsonl").read_text(encoding="utf-8") == "someone else's file\n"
    assert commits(journal.path) == len(COMMANDS)
    tally("disk faults: save replaced under a running game")


def test_a_read_only_save_folder_is_refused_up_front_with_a_clear_message(tmp_path, monkeypatch, capsys):
    (tmp_path / "ro").mkdir()
    original = os.open

    def read_only(path, flags, *args, **kwargs):
        if str(path).startswith(str(tmp_path / "ro")) and flags & (os.O_WRONLY | os.O_RDWR):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return original(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    commands = tmp_path / "c.txt"
    commands.write_text("look\n", encoding="utf-8")
    code = main(["play", "--headless", "--commands", str(commands), "--save", str(tmp_path / "ro" / "g.jsonl")])
    captured = capsys.readouterr()
    assert code == 2 and "Read-only file system" in captured.err and "Traceback" not in captured.err
    assert captured.out == ""  # nothing was played that could be lost
    assert list((tmp_path / "ro").iterdir()) == []
    tally("disk faults: read-only save folder")


def test_resuming_a_save_in_a_folder_that_became_read_only_goes_on_elsewhere(tmp_path, monkeypatch, capsys):
    commands = tmp_path / "c.txt"
    commands.write_text("look\n", encoding="utf-8")
    (tmp_path / "ro").mkdir()
    save = tmp_path / "ro" / "g.jsonl"
    assert main(["play", "--headless", "--commands", str(commands), "--save", str(save)]) == 0
    commands.write_text("take rope\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as disk:
        fail_disk(disk, str(tmp_path / "ro"), errno.EROFS)
        assert main(["play", "--headless", "--commands", str(commands), "--resume", str(save)]) == 0
    captured = capsys.readouterr()
    assert "Read-only file system" in captured.err and "instead" in captured.err
    rescued = next(saves_dir().glob("*-rescued.jsonl"))
    assert commits(rescued) == 2 and verify_save(rescued).sound
    tally("disk faults: resumed save turned read-only")


async def test_the_app_saves_elsewhere_when_the_disk_fills_and_says_where(tmp_path, monkeypatch):
    from storyloom.tui.app import StoryloomApp
    from storyloom.tui.testing.pilot import until

    pack = load_pack("lighthouse")
    session, journal = start_new(pack, OfflineNarrator(pack, seed=0), path=tmp_path / "disk" / "game.jsonl")
    fail_disk(monkeypatch, str(tmp_path / "disk"), errno.ENOSPC, after=1)
    notes: list[str] = []
    play = PlaySession.around(session, journal)
    app = StoryloomApp(session, play=play, blink=False)
    original_notify = app.notify
    monkeypatch.setattr(app, "notify", lambda message, **kw: (notes.append(message), original_notify(message, **kw)))
    with journal:
        async with app.run_test(size=(100, 30)) as pilot:
            for played, command in enumerate(COMMANDS[:3], start=1):
                await pilot.press(*command, "enter")
                await until(pilot, lambda played=played: not session.busy and len(session.history) >= played)
    assert any("No space left on device" in n and "now saved to" in n for n in notes)
    assert journal.path.parent != tmp_path / "disk" and journal.broken is None
    assert commits(journal.path) == 3 and verify_save(journal.path).sound
    tally("disk faults: the app's save fills up")


def no_usable_temp_folder(monkeypatch) -> None:
    """What a full disk does to `tempfile.gettempdir`: no candidate takes its test file."""

    def refuse() -> str:
        raise FileNotFoundError(errno.ENOENT, "No usable temporary directory found in ['/tmp']")

    monkeypatch.setattr(tempfile, "gettempdir", refuse)


def test_headless_play_goes_on_in_memory_when_neither_the_disk_nor_a_temp_folder_takes_the_save(
    tmp_path, monkeypatch, capsys
):
    commands = tmp_path / "c.txt"
    commands.write_text("\n".join(COMMANDS) + "\n", encoding="utf-8")
    fail_disk(monkeypatch, str(tmp_path / "nothing-matches"), errno.ENOSPC, after=8, everywhere=True)
    no_usable_temp_folder(monkeypatch)
    exit_code = main(["play", "--headless", "--commands", str(commands), "--save", str(tmp_path / "g.jsonl")])
    captured = capsys.readouterr()
    assert exit_code == 1
    assert captured.out.count("\n> ") == len(COMMANDS)  # play went on to the end
    assert "play goes on in memory" in captured.err
    assert "could not be saved anywhere" in captured.err
    assert "Traceback" not in captured.err and "[Errno" not in captured.err
    tally("disk faults: no place takes the save (no temp folder either)")


async def test_an_undo_that_no_place_saves_keeps_the_app_running_and_quitting_says_what_was_lost(tmp_path, monkeypatch):
    from storyloom.tui.app import StoryloomApp
    from storyloom.tui.testing.pilot import until

    pack = load_pack("lighthouse")
    session, journal = start_new(pack, OfflineNarrator(pack, seed=0), path=tmp_path / "game.jsonl")
    err = io.StringIO()
    play = PlaySession.around(session, journal, err=err)
    app = StoryloomApp(session, play=play, blink=False)
    notes: list[tuple[str, str]] = []
    original_notify = app.notify
    monkeypatch.setattr(
        app,
        "notify",
        lambda message, **kw: (notes.append((kw.get("title", ""), message)), original_notify(message, **kw)),
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"look", "enter")
        await until(pilot, lambda: not session.busy and len(session.history) == 1)
        fail_disk(monkeypatch, str(tmp_path / "nothing-matches"), errno.ENOSPC, everywhere=True)
        no_usable_temp_folder(monkeypatch)
        await pilot.press("ctrl+z")  # the first write that fails is the undo's
        await pilot.pause()
        assert len(session.history) == 0  # the undo stands, in memory
        await pilot.press(*"take rope", "enter")
        await until(pilot, lambda: not session.busy and len(session.history) == 1)
    assert app.return_code in (None, 0)
    assert any(title == "Could not save" for title, _ in notes)
    assert play.close() is False
    assert "record(s) of this session could not be saved anywhere" in err.getvalue()
    assert commits(tmp_path / "game.jsonl") == 1 and verify_save(tmp_path / "game.jsonl").sound


async def _play_then(tmp_path, damage_at: int | None, damage, *, at_end=None) -> tuple[PlaySession, int, str]:
    """Play COMMANDS headless into tmp_path/game.jsonl, damaging the file before command `damage_at`
    (or after the last one, with `at_end`), then close the save as quitting does."""
    pack = load_pack("lighthouse")
    session, journal = start_new(pack, OfflineNarrator(pack, seed=0), path=tmp_path / "game.jsonl")
    out, err = io.StringIO(), io.StringIO()
    play = PlaySession.around(session, journal, err=err)

    def lines():
        for number, command in enumerate(COMMANDS):
            if number == damage_at:
                damage(tmp_path / "game.jsonl")
            yield command

    with journal:
        code = await play_commands(play, lines(), out=out, err=err)
        if at_end is not None:
            at_end(tmp_path / "game.jsonl")
        code = finish(play, code)
    return play, code, err.getvalue()


async def test_a_save_deleted_after_the_last_turn_is_noticed_at_quit_and_written_whole_elsewhere(tmp_path):
    play, code, err = await _play_then(tmp_path, None, None, at_end=Path.unlink)
    assert code == 0
    assert "deleted or replaced while the game was running" in err
    assert play.journal is not None and play.journal.path != tmp_path / "game.jsonl"
    assert f"saved to {play.journal.path} instead" in err
    assert commits(play.journal.path) == len(COMMANDS) and verify_save(play.journal.path).sound
    tally("disk faults: save deleted after the last turn")


def _truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def _overwrite_in_place(path: Path) -> None:
    size = path.stat().st_size
    with path.open("r+b") as f:  # same file, same size, other bytes
        f.write(b"#" * size)


@pytest.mark.parametrize("damage", [_truncate, _overwrite_in_place])
async def test_a_save_cut_short_or_overwritten_in_place_mid_game_is_noticed_and_rescued(tmp_path, damage):
    play, code, err = await _play_then(tmp_path, 3, damage)
    assert code == 0
    assert "cut short or overwritten while the game was running" in err
    assert play.journal is not None and play.journal.path != tmp_path / "game.jsonl"
    assert commits(play.journal.path) == len(COMMANDS) and verify_save(play.journal.path).sound
    tally("disk faults: save cut short or overwritten in place mid-game")


@pytest.mark.parametrize("damage", [_truncate, _overwrite_in_place])
async def test_a_save_cut_short_or_overwritten_after_the_last_turn_is_noticed_before_saying_saved(tmp_path, damage):
    play, code, err = await _play_then(tmp_path, None, None, at_end=damage)
    assert code == 0
    assert "cut short or overwritten while the game was running" in err
    assert play.journal is not None and play.journal.path != tmp_path / "game.jsonl"
    assert commits(play.journal.path) == len(COMMANDS) and verify_save(play.journal.path).sound
    tally("disk faults: save cut short or overwritten in place before quitting")


def test_a_rescue_in_the_temp_folder_is_listed_found_as_latest_and_continued_instead_of_its_original(
    tmp_path, monkeypatch, capsys
):
    commands = tmp_path / "c.txt"
    commands.write_text("\n".join(COMMANDS[:4]) + "\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as disk:
        fail_disk(disk, str(saves_dir()), errno.ENOSPC, after=6)  # the saves folder fills up
        assert main(["play", "--headless", "--commands", str(commands)]) == 0
    original = next(p for p in saves_dir().iterdir() if p.name.endswith(".jsonl"))
    rescue = next((tmp_path / "tmp").glob("*-rescued.jsonl"))
    assert commits(rescue) == 4 and commits(original) < 4
    os.utime(original)  # even when the stale original looks newer (touched, copied back)
    capsys.readouterr()

    assert main(["saves"]) == 0
    listing = capsys.readouterr().out
    assert str(rescue) in listing
    assert f"superseded: it stopped taking writes and goes on in {rescue}" in listing

    commands.write_text("west\n", encoding="utf-8")
    assert main(["play", "--headless", "--commands", str(commands), "--resume", "latest"]) == 0
    assert f"resuming {rescue}" in capsys.readouterr().err
    assert commits(rescue) == 5

    before = original.read_bytes()
    assert main(["play", "--headless", "--commands", str(commands), "--resume", str(original)]) == 0
    err = capsys.readouterr().err
    assert f"its story was rescued to {rescue}" in err and f"resuming {rescue}" in err
    assert commits(rescue) == 6 and original.read_bytes() == before  # no fork
    assert "cut off" not in err  # the failed write left no torn line behind
    assert verify_save(original).sound and verify_save(rescue).sound
    tally("disk faults: a rescue found by saves, latest and resume")


def test_the_app_quit_after_its_save_was_deleted_rescues_it_and_names_the_rescue(tmp_path, monkeypatch, capsys):
    from storyloom.tui.app import StoryloomApp

    save = tmp_path / "mine" / "game.jsonl"

    def play_then_lose_the_save(app, *args, **kwargs):  # the player quits after the file is gone
        save.unlink()
        return 0

    monkeypatch.setattr(StoryloomApp, "run", play_then_lose_the_save)
    pack = Path(__file__).parent / "packs" / "example.toml"
    code = main(["play", "--story", str(pack), "--save", str(save)])
    err = capsys.readouterr().err
    rescued = save.with_name("game-rescued.jsonl")  # beside the lost save, where the player looks
    assert code == 0
    assert "deleted or replaced while the game was running" in err
    assert f"saved to {rescued}" in err and f"saved to {save}\n" not in err
    assert verify_save(rescued).sound


def test_rescues_of_other_saves_in_the_temp_folder_are_not_read_by_the_listing(tmp_path, monkeypatch, capsys):
    from storyloom.saves import locations

    commands = tmp_path / "c.txt"
    commands.write_text("look\n", encoding="utf-8")
    assert main(["play", "--headless", "--commands", str(commands)]) == 0
    for n in range(20):  # another program's (or another test's) leftovers
        (tmp_path / "tmp" / f"run{n}-rescued-rescued.jsonl").write_text('{"data":{}}\n', encoding="utf-8")
    opened: list[Path] = []
    first_line = locations._first_line
    monkeypatch.setattr(locations, "_first_line", lambda path, *a: (opened.append(path), first_line(path, *a))[1])
    capsys.readouterr()
    assert main(["saves"]) == 0
    assert "run0" not in capsys.readouterr().out
    assert opened == []  # told apart by name: nothing was read
