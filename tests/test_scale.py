"""Long games and big inputs (issue 17, scale): headless play that goes on past failed turns,
commands bounded everywhere with a word to the player, and `storyloom saves` reading only
a save's header and tail. Speed and memory are benchmark figures (`benchmarks/scale.py`), not tests."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from storyloom.engine.lifecycle import CommandTooLong, Session
from storyloom.engine.limits import COMMAND_MAX_CHARS
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.tui.cli import main
from storyloom.tui.cli.headless import RETRIES, play_commands
from storyloom.tui.session import PlaySession

CYCLE = ("take rope", "north", "drop rope", "take rope", "south", "drop rope", "look", "wait", "inventory")


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def _script(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "commands.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _long_script(tmp_path: Path, turns: int = 120) -> str:
    return _script(tmp_path, [CYCLE[i % len(CYCLE)] for i in range(turns)])


def _verify(save: Path, capsys) -> str:
    capsys.readouterr()
    assert main(["verify", str(save)]) == 0
    return capsys.readouterr().out


# --on-fail -----------------------------------------------------------------------------------


def test_on_fail_stop_is_the_default_and_stops_at_the_first_failed_turn(tmp_path, capsys):
    code = main(["play", "--headless", "--commands", _long_script(tmp_path), "--faults", "0.3", "--seed", "0"])
    err = capsys.readouterr().err
    assert code == 3
    assert err.count("failed after its correction budget") == 1


def test_on_fail_skip_plays_a_long_faulty_script_to_its_end(tmp_path, capsys):
    save = tmp_path / "skip.jsonl"
    script = _long_script(tmp_path)
    code = main(
        ["play", "--headless", "--commands", script, "--faults", "0.3", "--on-fail", "skip", "--save", str(save)]
    )
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out.count("\n> ") == 120, "every command was played"
    failed = captured.err.count("failed after its correction budget")
    assert failed >= 2, "the script meets several failed turns at faults 0.3"
    assert f"{failed} turns failed and were skipped" in captured.err  # failed >= 2
    report = _verify(save, capsys)
    assert f"{120 - failed} committed" in report and f"{failed} failed" in report


def test_on_fail_retry_retries_each_failed_turn_and_commits_it(tmp_path, capsys):
    save = tmp_path / "retry.jsonl"
    script = _long_script(tmp_path)
    code = main(
        ["play", "--headless", "--commands", script, "--faults", "0.3", "--on-fail", "retry", "--save", str(save)]
    )
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out.count("\n> ") == 120
    assert "retrying turn" in captured.err
    assert "120 committed" in _verify(save, capsys), "every failed turn committed on a retry"


async def test_on_fail_retry_is_bounded_then_stops_with_exit_3():
    pack = load_pack("lighthouse")
    narrator = OfflineNarrator(pack, faults=1.0, fault_kinds=["truncated"], stubborn=1.0)
    narrator.faults = 4.0  # a retry's rate is faults / 4: this turn fails every time
    session = Session(pack, narrator, budget=0)
    out, err = io.StringIO(), io.StringIO()
    code = await play_commands(PlaySession.around(session), ["look", "north"], out=out, err=err, on_fail="retry")
    assert code == 3
    assert err.getvalue().count("retrying turn 1") == RETRIES
    assert f"turn 1 still failed after {RETRIES} retries" in err.getvalue()
    assert "> north" not in out.getvalue()


def test_on_fail_takes_only_its_three_words(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["play", "--headless", "--commands", _long_script(tmp_path, 1), "--on-fail", "ignore"])
    assert exited.value.code == 2


# the command limit ---------------------------------------------------------------------------


def test_headless_refuses_an_over_long_command_with_a_message_and_goes_on(tmp_path, capsys):
    save = tmp_path / "long.jsonl"
    script = _script(tmp_path, ["look", "take " + "rope " * 2_000_000, "north"])
    code = main(["play", "--headless", "--commands", script, "--save", str(save)])
    captured = capsys.readouterr()
    assert code == 0
    assert f"line 2: a command is at most {COMMAND_MAX_CHARS} characters and this one has 10,000,004" in captured.err
    assert "> north" in captured.out and "rope rope" not in captured.out
    assert "2 committed" in _verify(save, capsys)


def test_a_command_at_the_limit_is_played(tmp_path, capsys):
    command = "look " + "a" * (COMMAND_MAX_CHARS - 5)
    assert main(["play", "--headless", "--commands", _script(tmp_path, [command])]) == 0
    assert "a command is at most" not in capsys.readouterr().err


async def test_the_engine_refuses_an_over_long_command_and_spends_no_turn():
    pack = load_pack("lighthouse")
    session = Session(pack, OfflineNarrator(pack))
    with pytest.raises(CommandTooLong, match=f"at most {COMMAND_MAX_CHARS} characters"):
        session.play("x" * (COMMAND_MAX_CHARS + 1))
    assert session.next_turn == 1 and session.history == ()


def test_a_save_holding_an_over_long_command_is_refused_with_a_clear_message(tmp_path, capsys, monkeypatch):
    import storyloom.engine.lifecycle as lifecycle
    import storyloom.tui.cli.headless as headless

    save = tmp_path / "old.jsonl"
    with monkeypatch.context() as old_storyloom:  # as a storyloom without the limit wrote it
        old_storyloom.setattr(lifecycle, "command_too_long", lambda command: None)
        old_storyloom.setattr(headless, "command_too_long", lambda command: None)
        script = _script(tmp_path, ["look", "take rope " + "please " * 200_000, "north"])
        assert main(["play", "--headless", "--commands", script, "--save", str(save)]) == 0
    capsys.readouterr()
    before = save.read_bytes()
    assert main(["play", "--headless", "--commands", _script(tmp_path, ["look"]), "--resume", str(save)]) == 2
    err = capsys.readouterr().err
    assert "the command of turn 2 is too long (a command is at most 500 characters and this one has 1,400,009" in err
    assert "Traceback" not in err
    assert main(["verify", str(save)]) == 1
    assert "the command of turn 2 is too long" in capsys.readouterr().out
    assert save.read_bytes() == before, "the save is left as it was"


async def test_the_input_line_says_so_when_a_command_reaches_the_limit():
    from textual.app import App, ComposeResult

    from storyloom.tui.widgets.command_input import CommandInput

    class Line(App[None]):
        def compose(self) -> ComposeResult:
            yield CommandInput(blink=False)

    app = Line()
    async with app.run_test(size=(100, 10)) as pilot:
        line = app.query_one(CommandInput)
        line.focus()
        line.insert_text_at_cursor("a" * (COMMAND_MAX_CHARS - 1))
        await pilot.press("b")
        await pilot.pause()
        assert len(line.value) == COMMAND_MAX_CHARS and not line.border_subtitle, "the limit itself is allowed"
        await pilot.press("c")
        await pilot.pause()
        assert len(line.value) == COMMAND_MAX_CHARS
        assert f"at most {COMMAND_MAX_CHARS} characters" in str(line.border_subtitle)
        line.value = ""
        await pilot.pause()
        assert not line.border_subtitle
        line.insert_text_at_cursor("x" * 10_000)
        await pilot.pause()
        assert line.value == "" and f"at most {COMMAND_MAX_CHARS} characters" in str(line.border_subtitle)
        await pilot.press("l", "o", "o", "k")
        await pilot.pause()
        assert line.value == "look" and not line.border_subtitle


# `storyloom saves` reads a header and a tail ---------------------------------------------------


def _saves_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "data" / "storyloom" / "saves"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _played(tmp_path: Path, capsys, name: str, commands: list[str]) -> Path:
    save = _saves_folder(tmp_path) / name
    assert main(["play", "--headless", "--commands", _script(tmp_path, commands), "--save", str(save)]) == 0
    capsys.readouterr()
    return save


def _listed(capsys) -> str:
    assert main(["saves"]) == 0
    return capsys.readouterr().out


def test_saves_lists_a_save_from_its_header_and_tail_even_when_its_middle_is_unreadable(tmp_path, capsys):
    save = _played(tmp_path, capsys, "long.jsonl", [CYCLE[i % len(CYCLE)] for i in range(60)] + ["/undo", "look"])
    before = _listed(capsys)
    row = next(line for line in before.splitlines() if line.startswith("long.jsonl"))
    assert " 60 " in row, "60 commits, 1 undone, 1 more: 60 turns in the story"
    lines = save.read_bytes().splitlines(keepends=True)
    middle = sum(len(line) for line in lines[1:-8])
    garbage = bytes(range(256)) * (middle // 256) + b"\xff" * (middle % 256)
    save.write_bytes(lines[0] + garbage + b"".join(lines[-8:]))  # same size, the body past the tail is noise
    after = _listed(capsys)
    assert after == before, "the listing read nothing between the header and the last records"
    assert main(["verify", str(save)]) == 1, "verify still reads it all"


def test_saves_reads_a_bounded_part_of_a_large_save(tmp_path, capsys, monkeypatch):
    import os as os_module

    save = _played(tmp_path, capsys, "big.jsonl", [CYCLE[i % len(CYCLE)] for i in range(300)])
    read: list[int] = []
    real_pread, real_read = os_module.pread, os_module.read

    def counting_pread(fd, n, offset):
        read.append(n)
        return real_pread(fd, n, offset)

    def counting_read(fd, n):
        read.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(os_module, "pread", counting_pread)
    monkeypatch.setattr(os_module, "read", counting_read)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("the listing read a whole save"))
    out = _listed(capsys)
    assert " 300 " in next(line for line in out.splitlines() if line.startswith("big.jsonl"))
    assert sum(read) < save.stat().st_size / 4, f"read {sum(read)} of {save.stat().st_size} bytes"


def test_saves_counts_an_older_save_without_a_tally_line_by_line(tmp_path, capsys):
    import json

    save = _played(tmp_path, capsys, "old.jsonl", ["look", "take rope", "/undo", "north", "south"])
    records = [json.loads(line) for line in save.read_bytes().splitlines()]
    for record in records:
        record["data"].pop("tally", None)  # as the journal wrote it before tallies
    from storyloom.engine.state import canonical_json
    from storyloom.saves.format import GENESIS, record_hash

    previous = GENESIS
    for record in records:
        record["prev"] = previous
        record["hash"] = previous = record_hash(record)
    save.write_text("".join(canonical_json(r) + "\n" for r in records), encoding="utf-8")
    assert b"tally" not in save.read_bytes()
    out = _listed(capsys)
    assert " 3 " in next(line for line in out.splitlines() if line.startswith("old.jsonl"))
    assert main(["verify", str(save)]) == 0


# verify streams ------------------------------------------------------------------------------


def test_verify_reads_a_sound_save_a_record_at_a_time(tmp_path, capsys, monkeypatch):
    import storyloom.saves.verify as verify_module

    save = _played(tmp_path, capsys, "sound.jsonl", [CYCLE[i % len(CYCLE)] for i in range(40)] + ["/undo"])
    with monkeypatch.context() as whole:
        whole.setattr(verify_module, "load_save", lambda path: pytest.fail("verify read the sound save whole"))
        whole.setattr(Path, "read_bytes", lambda self: pytest.fail("verify read the sound save whole"))
        report = _verify(save, capsys)
    assert "turns: 39 turns in the story (40 committed, 1 undone)" in report and report.rstrip().endswith("sound")


def test_verify_of_a_damaged_save_still_names_the_first_bad_record(tmp_path, capsys):
    save = _played(tmp_path, capsys, "damaged.jsonl", [CYCLE[i % len(CYCLE)] for i in range(20)])
    lines = save.read_bytes().splitlines(keepends=True)
    lines[30] = lines[30].replace(b'{"data":{', b'{"data": {', 1)  # spelled otherwise, still sound
    lines[40] = lines[40].replace(b'{"data":{', b'{"data":{"x":1,', 1)
    save.write_bytes(b"".join(lines))
    assert main(["verify", str(save)]) == 1
    out = capsys.readouterr().out
    assert "NOT SOUND: first bad record is 40 (line 41)" in out
