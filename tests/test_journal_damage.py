"""A damaged save: a torn last line is dropped with a warning; any other damage is its own clear
error, and neither loading, verifying nor resuming changes a byte of the file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.saves.errors import (
    BrokenChain,
    CorruptRecord,
    MissingRecord,
    PackMismatch,
    ReorderedRecords,
    SaveError,
    TamperedRecord,
    UnsupportedVersion,
)
from storyloom.saves.format import VERSION, SaveHeader
from storyloom.saves.reader import load_save
from storyloom.saves.resume import resume
from storyloom.saves.verify import verify_save
from storyloom.saves.writer import Journal
from storyloom.tui.cli import save_commands as commands
from tests.conftest import ScriptedNarrator, structured
from tests.test_saves_kit import played_save, rewrite_records, shore_pack_file


@pytest.fixture
def save(tmp_path: Path) -> Path:
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope", "north", "up"], faults=0.0)
    return path


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _refused(path: Path, error: type[SaveError]) -> SaveError:
    """Load, verify and resume must all refuse the save with `error`, leaving it byte for byte as it was."""
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    with pytest.raises(error) as raised:
        load_save(path)
    report = verify_save(path)
    assert not report.sound and raised.value.reason in "\n".join(report.lines)
    with pytest.raises(error):
        from storyloom.engine.packs import load_pack

        resume(path, OfflineNarrator(load_pack("lighthouse")))
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert not path.with_name(path.name + ".lock").exists()
    return raised.value


def test_a_torn_last_line_is_dropped_with_a_warning_and_everything_before_it_loads(save: Path) -> None:
    whole = load_save(save)
    torn = _lines(save)[3][:25]
    with save.open("ab") as f:
        f.write(torn)
    before, mtime = save.read_bytes(), save.stat().st_mtime_ns
    loaded = load_save(save)
    assert loaded.records == whole.records
    assert len(loaded.warnings) == 1 and "cut off by a crash" in loaded.warnings[0]
    assert verify_save(save).sound
    assert save.read_bytes() == before and save.stat().st_mtime_ns == mtime


async def test_continuing_a_save_with_a_torn_line_cuts_it_off_and_appends_cleanly(save: Path) -> None:
    with save.open("ab") as f:
        f.write(b'{"seq":99,"ti')
    from storyloom.engine.packs import load_pack

    resumed = resume(save, OfflineNarrator(load_pack("lighthouse")))
    with resumed.journal:
        async for event in resumed.session.play("look"):
            resumed.journal.record(event)
    again = load_save(save)
    assert not again.warnings and verify_save(save).sound
    assert b'"ti\n' not in save.read_bytes() and b'"ti{' not in save.read_bytes()


def test_a_flipped_byte_inside_a_record_is_named_as_altered(save: Path) -> None:
    lines = _lines(save)
    index = next(i for i, line in enumerate(lines) if b'"turn_committed"' in line)
    at = lines[index].index(b'"narrative":"') + 15
    damaged = bytearray(lines[index])
    damaged[at] ^= 0x01
    lines[index] = bytes(damaged)
    save.write_bytes(b"".join(lines))
    error = _refused(save, TamperedRecord)
    assert error.line == index + 1 and error.seq == index
    assert "does not match its hash" in str(error)


def test_a_flipped_byte_that_breaks_the_json_is_named_as_not_json(save: Path) -> None:
    lines = _lines(save)
    lines[2] = lines[2].replace(b'{"data"', b'{"dat\x01"', 1).replace(b'":', b'"!', 1)
    save.write_bytes(b"".join(lines))
    error = _refused(save, CorruptRecord)
    assert error.line == 3 and "not valid JSON" in str(error)


def test_a_deleted_record_is_named_as_missing(save: Path) -> None:
    lines = _lines(save)
    del lines[4]
    save.write_bytes(b"".join(lines))
    error = _refused(save, MissingRecord)
    assert "record 4 is missing" in str(error) and error.line == 5


def test_reordered_records_are_named_as_out_of_order(save: Path) -> None:
    lines = _lines(save)
    lines[3], lines[4] = lines[4], lines[3]
    save.write_bytes(b"".join(lines))
    error = _refused(save, ReorderedRecords)
    assert "out of order" in str(error) and error.line == 4


def test_a_replaced_record_that_keeps_its_number_breaks_the_chain(tmp_path: Path, save: Path) -> None:
    other, _, _ = played_save(tmp_path / "other.jsonl", ["look", "take rope", "north", "up"], faults=0.0, seed=99)
    lines, foreign = _lines(save), _lines(other)
    lines[3] = foreign[3]
    if lines[3] == _lines(save)[3]:
        pytest.skip("the two sessions wrote the same record")
    save.write_bytes(b"".join(lines))
    error = _refused(save, BrokenChain)
    assert "chain is broken" in str(error)


def test_an_unknown_format_version_asks_for_a_newer_storyloom(save: Path) -> None:
    newer = VERSION + 1
    rewrite_records(
        save, lambda records: [{**records[0], "data": {**records[0]["data"], "version": newer}}, *records[1:]]
    )
    error = _refused(save, UnsupportedVersion)
    assert f"format version {newer}" in str(error) and "upgrade storyloom" in str(error)
    report = verify_save(save)
    assert not report.readable  # verify exits 2 for a save it cannot read


def test_a_story_that_changed_since_the_save_is_refused_by_name(tmp_path: Path) -> None:
    pack, pack_path = shore_pack_file(tmp_path)
    narrator = ScriptedNarrator([structured("You look around.")])
    path = tmp_path / "shore.jsonl"
    session = Session(pack, narrator)

    import asyncio

    async def one_turn() -> None:
        with Journal.create(path, SaveHeader.for_session(pack, narrator, source=str(pack_path))) as journal:
            async for event in session.play("look"):
                journal.record(event)

    asyncio.run(one_turn())
    assert verify_save(path).sound
    pack_path.write_text(pack_path.read_text().replace("Waves break on black rocks.", "Calm water."))
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    report = verify_save(path)
    assert not report.sound and any("'shore' has changed since this save was made" in line for line in report.lines)
    with pytest.raises(PackMismatch, match="has changed"):
        resume(path, ScriptedNarrator([]))
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime


def test_each_kind_of_damage_has_its_own_message(tmp_path: Path) -> None:
    messages = set()
    for name, damage in {
        "flip": lambda ls: ls[:3] + [ls[3].replace(b'"turn":', b'"tUrn":', 1)] + ls[4:],
        "delete": lambda ls: ls[:3] + ls[4:],
        "reorder": lambda ls: ls[:3] + [ls[4], ls[3]] + ls[5:],
        "json": lambda ls: ls[:3] + [b"{not json\n"] + ls[4:],
    }.items():
        path, _, _ = played_save(tmp_path / f"{name}.jsonl", ["look", "take rope"], faults=0.0)
        path.write_bytes(b"".join(damage(_lines(path))))
        with pytest.raises(SaveError) as raised:
            load_save(path)
        messages.add((type(raised.value).__name__, raised.value.reason.split(":")[0]))
    assert len(messages) == 4


def test_verify_names_the_first_bad_record_and_exits_1(save: Path, capsys) -> None:
    lines = _lines(save)
    lines[5] = lines[5].replace(b'"turn":', b'"tUrn":', 1)
    lines[7] = lines[7].replace(b'"turn":', b'"tUrn":', 1)
    save.write_bytes(b"".join(lines))
    code = commands.verify(argparse.Namespace(save=str(save)))
    out = capsys.readouterr().out
    assert code == 1
    assert "first bad record is 5 (line 6)" in out and "line 8" not in out


def test_verify_exits_2_when_the_file_cannot_be_read(tmp_path: Path, capsys) -> None:
    assert commands.verify(argparse.Namespace(save=str(tmp_path / "nope.jsonl"))) == 2
    (tmp_path / "notes.jsonl").write_text("shopping list\n")
    assert commands.verify(argparse.Namespace(save=str(tmp_path / "notes.jsonl"))) == 2
    out = capsys.readouterr().out
    assert "no such save file" in out and "not a storyloom save" in out


def test_a_forged_commit_that_the_rules_refuse_is_caught_by_verify(save: Path) -> None:
    def teleport(records):
        for record in records:
            if record["kind"] == "turn_committed":
                record["data"]["state_patch"] = [{"op": "replace", "path": "/location", "value": "gallery"}]
                break
        return records

    rewrite_records(save, teleport)
    report = verify_save(save)
    assert not report.sound
    assert any("does not pass the rules" in line and "move.exit" in line for line in report.lines)


def test_a_save_with_a_wrong_state_hash_is_caught_by_verify(save: Path) -> None:
    def wrong_hash(records):
        commits = [r for r in records if r["kind"] == "turn_committed"]
        commits[-1]["data"]["state_hash"] = "f" * 64
        return records

    rewrite_records(save, wrong_hash)
    report = verify_save(save)
    assert not report.sound and any("not the recorded ffffffffffff" in line for line in report.lines)
    assert json.loads(save.read_text().splitlines()[0])["kind"] == "header"


@pytest.mark.parametrize(
    ("field", "value"), [("budget", -1), ("faults", 1.5), ("faults", 10**400)], ids=["budget", "faults", "faults huge"]
)
def test_a_header_re_signed_with_an_impossible_budget_or_fault_rate_is_named_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: float
) -> None:
    """Found by the damaged-saves fuzz: a re-signed header with budget -1 crashed `replay` (the
    session refuses a negative budget), and one with a fault rate of 10**400 every command (a float
    overflows). Every command names the header instead."""
    from storyloom.tui.cli import main

    path, _, _ = played_save(tmp_path / "s.jsonl", ["look"], faults=0.0)

    def edit(records: list[dict[str, object]]) -> list[dict[str, object]]:
        records[0]["data"][field] = value  # type: ignore[index]
        return records

    rewrite_records(path, edit)
    before = path.read_bytes()
    for argv in (
        ["verify", str(path)],
        ["replay", str(path), "--headless"],
        ["export", str(path)],
        ["play", "--headless", "--commands", "-", "--resume", str(path)],
    ):
        capsys.readouterr()
        assert main(argv) in (1, 2), argv  # damage, as each command reports it (no crash)
        captured = capsys.readouterr()
        assert "header record is malformed" in captured.out + captured.err, argv
    assert path.read_bytes() == before
