"""A save played or resumed on this machine leaves a resume record (saves/resume_record.py), and the next
resume judges only the records after it: the player gets exactly the session a full check gives (state,
history, undo, versions, branches, ending, the turns' details), on any played save; records appended
after it are judged as ever; and anything wrong with the record or the save before its offset means a
full check, never an error of the record's own."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storyloom.engine.lifecycle import BranchRefused, Session, StoryOver
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.saves import resume_record
from storyloom.saves.errors import InvalidCommit, SaveError
from storyloom.saves.format import SaveHeader
from storyloom.saves.reader import load_save
from storyloom.saves.resume import Resumed, remember, resume
from storyloom.saves.writer import Journal
from tests.test_replay_properties import ACTIONS
from tests.test_saves_kit import play, played_save, rewrite_records

BRANCHING = st.one_of(
    ACTIONS, st.integers(0, 6).map(lambda n: f"/branch {n}"), st.integers(1, 3).map(lambda n: f"/switch {n}")
)
WALK = ["look", "take rope", "north", "look", "east", "look"]


def _header(path: Path) -> bytes:
    """The save's first line, as its resume record is found by."""
    with path.open("rb") as save:
        return save.readline()


def _records() -> list[Path]:
    return sorted(resume_record.records_folder().glob("*.resume"))


def _session_of(resumed: Resumed) -> dict[str, Any]:
    """Everything a resumed session is made of, and what its screen shows."""
    session, built = resumed.session, resumed.rebuilt
    return {
        "story": built.story(),  # state, history, undo stack, versions, ending, the ledger, parked branches
        "pending": built.pending,
        "interrupted": built.interrupted,
        "next turn": session.next_turn,
        "state": session.state,
        "history": session.history,
        "versions": session.versions,
        "ending": session.ending,
        "past": resumed.past,
        "warnings": resumed.warnings,
        "ledger": built.ledger,
    }


def _resumed(path: Path, seed: int = 7, faults: float = 0.5) -> tuple[dict[str, Any], bool]:
    """The session a resume gives (its journal closed again), and whether it read on from a record."""
    pack = load_pack("lighthouse")
    resumed = resume(path, OfflineNarrator(pack, seed=seed, faults=faults))
    from_record = resumed.journal.read_to is None
    resumed.journal.close()
    return _session_of(resumed), from_record


def _copy(path: Path, name: str) -> Path:
    """The same save under another name (a resume appends to the file it resumes)."""
    copy = path.with_name(name)
    shutil.copyfile(path, copy)
    return copy


def _without_records(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))


async def _play_into(
    path: Path, actions: list[str], seed: int, faults: float, *, resumed: bool = False, closed: bool = True
) -> None:
    """Play `actions` into a new save at `path` (or on from the save there), skipping what a player cannot do."""
    pack = load_pack("lighthouse")
    narrator = OfflineNarrator(pack, seed=seed, faults=faults)
    if resumed:
        again = resume(path, narrator)
        session, journal = again.session, again.journal
    else:
        session = Session(pack, narrator)
        journal = Journal.create(path, SaveHeader.for_session(pack, narrator, seed=seed, faults=faults))
    with journal:
        for action in actions:
            if (action == "/retry" and session.pending is None) or (
                action.endswith("/regenerate") and not session.can_regenerate
            ):
                continue
            try:
                await play(session, journal, [action])
            except (BranchRefused, StoryOver):
                continue
    if closed:  # as a session's close leaves it
        remember(path, pack, new=not resumed)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    actions=st.lists(BRANCHING, min_size=1, max_size=12),
    more=st.lists(BRANCHING, max_size=6),
    seed=st.integers(0, 1000),
    faults=st.sampled_from([0.0, 0.5]),
)
def test_a_resume_from_its_record_is_the_session_a_full_check_gives(
    actions: list[str], more: list[str], seed: int, faults: float, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("played")
    with pytest.MonkeyPatch.context() as patch:
        _without_records(patch, folder / "here")
        _check_same_session(folder, actions, more, seed, faults)


def _check_same_session(folder: Path, actions: list[str], more: list[str], seed: int, faults: float) -> None:
    path = folder / "s.jsonl"
    asyncio.run(_play_into(path, actions, seed, faults))
    if more:  # played on after a resume: the record is made at its close, the new records judged from it
        asyncio.run(_play_into(path, more, seed, faults, resumed=True))
    full_copy, record_copy = _copy(path, "full.jsonl"), _copy(path, "record.jsonl")

    from_record, used = _resumed(record_copy, seed, faults)
    assert used, "the save played and closed here has a resume record"
    with pytest.MonkeyPatch.context() as patch:
        _without_records(patch, folder / "elsewhere")
        full, used = _resumed(full_copy, seed, faults)
    assert not used
    assert from_record == full


def test_the_details_of_the_turns_that_had_issues_come_back_from_the_record(tmp_path: Path) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", WALK * 2, faults=0.5)
    full, _ = _resumed(path)
    from_record, used = _resumed(path)
    assert used
    assert [p.turn for p in from_record["past"] if p.events] == [p.turn for p in full["past"] if p.events] != []
    assert from_record["past"] == full["past"]


def test_a_resume_record_is_written_when_a_session_closes_and_after_a_full_check(tmp_path: Path) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", WALK)
    assert not _records()
    _, used = _resumed(path)
    assert not used and len(_records()) == 1, "the full check leaves the record"
    _, used = _resumed(path)
    assert used


def test_records_appended_after_the_record_are_judged(tmp_path: Path) -> None:
    """A forged commit after the record's offset (every hash after it recomputed) is refused."""
    path = tmp_path / "s.jsonl"
    asyncio.run(_play_into(path, WALK[:4], 7, 0.0))
    (record,) = _records()
    kept = record.read_bytes()
    asyncio.run(_play_into(path, WALK[4:], 7, 0.0, resumed=True, closed=False))
    assert record.read_bytes() == kept, "the record stands after turn 4"
    played = path.read_bytes()

    def forge(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        commit = next(r for r in records if r["kind"] == "turn_committed" and r["data"]["turn"] == 5)
        commit["data"]["state_hash"] = "ab" * 32
        return records

    rewrite_records(path, forge)
    header = played[: played.index(b"\n") + 1]
    point = resume_record.load(header, load_pack("lighthouse"), load_save(path).header.rules)
    assert point is not None and path.read_bytes()[: point.at.offset] == played[: point.at.offset]
    with pytest.raises(InvalidCommit, match="the commit of turn 5 leads to state"):
        _resumed(path, faults=0.0)
    assert record.read_bytes() == kept, "a refused save leaves its record as it was"


def test_a_byte_changed_before_the_offset_means_a_full_check_that_refuses_the_save(tmp_path: Path) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", WALK, faults=0.0)
    _resumed(path, faults=0.0)  # leaves the record
    data = bytearray(path.read_bytes())
    at = data.index(b'"narrative":"') + len(b'"narrative":"')
    data[at] = ord("Z") if data[at] != ord("Z") else ord("Y")
    path.write_bytes(bytes(data))
    with pytest.raises(SaveError):
        _resumed(path, faults=0.0)


@pytest.mark.parametrize(
    "spoil",
    [
        "missing",
        "empty",
        "truncated",
        "one byte changed",
        "another version",
        "not a pickle",
        "another key",
    ],
)
def test_a_spoilt_record_falls_back_to_a_full_check_silently(spoil: str, tmp_path: Path, capsys) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", WALK)
    full, _ = _resumed(_copy(path, "first.jsonl"))
    (record,) = _records()
    blob = record.read_bytes()
    key = resume_record.records_folder() / "key"
    if spoil == "missing":
        record.unlink()
    elif spoil == "empty":
        record.write_bytes(b"")
    elif spoil == "truncated":
        record.write_bytes(blob[: len(blob) // 2])
    elif spoil == "one byte changed":
        record.write_bytes(blob[:-10] + bytes([blob[-10] ^ 1]) + blob[-9:])
    elif spoil == "another version":
        record.write_bytes(blob.replace(resume_record.MAGIC, b"storyloom resume record 9\n", 1))
    elif spoil == "not a pickle":
        import hashlib
        import hmac

        body, offset = b"not a pickle at all", b"%d\n" % resume_record.remembered_offset(_header(path))
        magic = blob[: blob.index(b"\n") + 1]
        made_by = blob[len(magic) : blob.index(b"\n", len(magic)) + 1]
        mac = hmac.new(key.read_bytes(), made_by + offset + body, hashlib.sha256).digest()
        record.write_bytes(magic + made_by + mac + offset + body)
    elif spoil == "another key":
        key.write_bytes(b"k" * 32)
    again, used = _resumed(_copy(path, "second.jsonl"))
    assert not used
    assert again == full
    assert capsys.readouterr().err == ""


def test_a_record_of_another_storyloom_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", WALK)
    _resumed(path)
    monkeypatch.setattr(resume_record, "_made_by", lambda: "99" * 32)
    _, used = _resumed(path)
    assert not used


def test_a_rescue_written_before_the_copy_of_the_save_is_done_is_whole(tmp_path: Path) -> None:
    """A resume from a record copies the save's bytes before its offset in a thread; a rescue waits for it."""
    path, _, _ = played_save(tmp_path / "s.jsonl", WALK * 3)
    _resumed(path)
    pack = load_pack("lighthouse")
    again = resume(path, OfflineNarrator(pack))
    assert again.journal.read_to is None, "read on from the record"
    whole = path.read_bytes()
    elsewhere = again.journal.save_as(tmp_path / "rescue.jsonl")
    again.journal.close()
    assert elsewhere.read_bytes() == whole


@pytest.mark.parametrize("copied", [False, True])
def test_a_byte_changed_before_the_offset_while_the_game_runs_is_found_before_it_says_saved(
    copied: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether or not the thread has copied the save's first bytes yet, the check before "saved" reads them back."""
    path, _, _ = played_save(tmp_path / "s.jsonl", WALK * 3)
    _resumed(path)
    again = resume(path, OfflineNarrator(load_pack("lighthouse")))
    with again.journal as journal:
        assert journal.read_to is None, "read on from the record"
        if copied:
            journal._chain.wait()
        data = bytearray(path.read_bytes())
        at = data.index(b'"narrative":"') + len(b'"narrative":"')
        data[at] ^= 1
        with path.open("r+b") as file:  # in place: the same file, the same size
            file.write(data)
        assert journal.check() is not None


def test_a_save_with_a_record_this_storyloom_made_opens_in_the_game_screen_without_the_preview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The preview masks a full check; a save with a usable record is opened before the app instead."""
    from storyloom.tui.cli import ui

    path, _, _ = played_save(tmp_path / "s.jsonl", WALK)
    assert not ui._remembered(path)
    _resumed(path)
    assert ui._remembered(path)
    monkeypatch.setattr(resume_record, "_made_by", lambda: "99" * 32)  # another storyloom's record
    assert not ui._remembered(path)


def test_closing_a_resumed_save_that_has_no_record_judges_nothing_again(tmp_path: Path) -> None:
    """Only a save the session created is judged from its start at close (its own turns); a long save
    resumed without a usable record is never judged whole a second time when the player quits."""
    path, _, _ = played_save(tmp_path / "s.jsonl", WALK)
    pack = load_pack("lighthouse")
    remember(path, pack)
    assert not _records()
    remember(path, pack, new=True)
    assert len(_records()) == 1


def test_headless_play_leaves_the_record_its_next_resume_reads_on_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from storyloom.tui.cli import main

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    commands = tmp_path / "commands.txt"
    commands.write_text("look\ntake rope\n", encoding="utf-8")
    save = tmp_path / "s.jsonl"
    assert main(["play", "--headless", "--commands", str(commands), "--save", str(save)]) == 0
    assert len(_records()) == 1, "closing the session left the save's record"
    kept = _records()[0].read_bytes()
    assert main(["play", "--headless", "--commands", str(commands), "--resume", str(save)]) == 0
    assert _records()[0].read_bytes() != kept, "the record moved on to the end of the second session"
    _, used = _resumed(save)
    assert used
    capsys.readouterr()


def test_a_save_closed_while_its_copy_is_being_made_can_be_resumed_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thread copying the save's first bytes holds a descriptor of the locked file: closing the save
    ends it, so the lock goes with the close (a rescue continued, a save switched to, opened at once)."""
    import time

    from storyloom.saves import chain

    path, _, _ = played_save(tmp_path / "s.jsonl", WALK * 3)
    _resumed(path)
    real = chain.zlib.compressobj

    class Slow:
        def __init__(self, level: int) -> None:
            self._packer = real(level)

        def compress(self, data: bytes) -> bytes:
            time.sleep(0.05)
            return self._packer.compress(data)

        def flush(self) -> bytes:
            return self._packer.flush()

    monkeypatch.setattr(chain, "BLOCK", 256)
    monkeypatch.setattr(chain.zlib, "compressobj", Slow)
    pack = load_pack("lighthouse")
    again = resume(path, OfflineNarrator(pack))
    assert again.journal._chain._copying is not None and again.journal._chain._copying.is_alive(), "still copying"
    again.journal.close()
    resume(path, OfflineNarrator(pack)).journal.close()  # not refused as locked


@pytest.mark.parametrize("from_record", [True, False], ids=["from-its-record", "read-whole"])
def test_quitting_a_resumed_save_reads_its_bytes_once_and_leaves_the_record_its_next_resume_uses(
    from_record: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check before "saved" hashes the save's bytes before where its resume stood (the record's
    offset, or the end of a save read whole); the record written at quit hashes on from there, not from
    the start again (at 50,000 turns each pass is 0.1 s, and unpacking the journal's copy was 0.3 s)."""
    from storyloom.saves.locations import HEADER_MAX_BYTES
    from storyloom.tui.session import PlaySession
    from storyloom.tui.settings import Settings

    path, _, _ = played_save(tmp_path / "s.jsonl", WALK * 40)
    if from_record:
        _resumed(path)
    play = PlaySession(Settings(narrator="offline"), resume=path)
    play.open()
    assert play.journal is not None and (play.journal.read_to is None) == from_record
    point = play._point  # a save read whole: where judging ended (one read on from its record keeps none)
    offset = resume_record.remembered_offset(_header(path)) if from_record else point and point.at.offset
    assert offset is not None and offset > 8 * HEADER_MAX_BYTES, offset
    play.journal._chain.wait()
    read = 0
    real = os.pread

    def counted(fd: int, size: int, at: int) -> bytes:
        nonlocal read
        found = real(fd, size, at)
        read += max(0, min(at + len(found), offset) - at)
        return found

    monkeypatch.setattr(os, "pread", counted)
    assert play.close()
    monkeypatch.setattr(os, "pread", real)
    assert offset <= read < 1.5 * offset, f"{read / offset:.2f} passes over the first bytes"
    _, used = _resumed(path)
    assert used, "the record written at quit is read on from"


def _resumed_hashed(path: Path, hashed: Any) -> tuple[dict[str, Any], bool]:
    """`_resumed`, with the save's first bytes hashed by a thread beforehand (as `storyloom play --resume` does)."""
    from storyloom.saves.choices import SessionChoices
    from storyloom.saves.resume import resume_with

    resumed = resume_with(
        path, lambda pack, kept: OfflineNarrator(pack, seed=7, faults=0.5), SessionChoices(), hashed=hashed
    )
    from_record = resumed.journal.read_to is None
    resumed.journal.close()
    return _session_of(resumed), from_record


def _hashing(path: Path, **options: Any) -> Any:
    from storyloom.saves.chain import PrefixHashing

    offset = resume_record.remembered_offset(_header(path))
    assert offset is not None, "the save has its record"
    return PrefixHashing(path, offset, **options)


def test_a_save_hashed_while_the_program_starts_is_not_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bytes a thread hashed while Textual loaded are the save's, unchanged: the resume takes that digest."""
    from storyloom.saves import writer

    path, _, _ = played_save(tmp_path / "s.jsonl", WALK * 3)
    full, _ = _resumed(_copy(path, "full.jsonl"))
    hashed = _hashing(path, settled_ns=0)
    hashed._thread.join()

    def hashed_again(*args: Any) -> str:
        raise AssertionError("the save's first bytes were hashed again")

    monkeypatch.setattr(writer, "prefix_digest", hashed_again)
    again, used = _resumed_hashed(path, hashed)
    assert used and again == full


@pytest.mark.parametrize("change", ["a byte before the offset", "a turn played on"])
def test_a_save_changed_after_the_thread_hashed_it_is_hashed_again(change: str, tmp_path: Path) -> None:
    """The thread's digest vouches only for the file as it saw it: one changed since is hashed again, and a
    changed byte before the offset means the full check that refuses the save."""
    path, _, _ = played_save(tmp_path / "s.jsonl", WALK * 3)
    _resumed(path)  # its record now ends where the file does
    hashed = _hashing(path, settled_ns=0)
    hashed._thread.join()
    data = bytearray(path.read_bytes())
    if change == "a byte before the offset":
        at = data.index(b'"narrative":"') + len(b'"narrative":"')
        data[at] ^= 1
        written = path.stat()
        with path.open("r+b") as file:  # in place: the same file, the same size
            file.write(data)
        os.utime(path, ns=(written.st_atime_ns, written.st_mtime_ns + 1_000_000_000))
        with pytest.raises(SaveError):
            _resumed_hashed(path, hashed)
    else:
        asyncio.run(_play_into(path, ["look"], 7, 0.0, resumed=True, closed=False))
        _, used = _resumed_hashed(path, hashed)
        assert used, "the record still holds for the bytes before its offset, hashed again"


def test_a_save_written_just_before_it_is_hashed_is_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's times move in the clock's coarse steps, so a save written within the last second could change
    again with the same times: the thread's digest is not taken, and the resume hashes the bytes itself."""
    from storyloom.saves import writer

    path, _, _ = played_save(tmp_path / "s.jsonl", WALK)
    _resumed(path)
    hashed = _hashing(path)  # written just now
    calls = []
    real = writer.prefix_digest
    monkeypatch.setattr(writer, "prefix_digest", lambda *args: calls.append(args) or real(*args))
    _, used = _resumed_hashed(path, hashed)
    assert used and len(calls) == 1


def test_the_save_latest_names_is_hashed_from_the_start_and_a_save_without_a_record_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`storyloom play --resume latest` starts hashing before loading the engine: the name is resolved as
    the resume resolves it, and only a save with a record is hashed."""
    from storyloom.saves import writer
    from storyloom.saves.locations import saves_dir
    from storyloom.saves.resume_hint import hash_before_record

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    folder = saves_dir()
    folder.mkdir(parents=True)
    path, _, _ = played_save(folder / "s.jsonl", WALK)
    assert hash_before_record("latest") is None, "no record yet"
    assert hash_before_record(tmp_path / "missing.jsonl") is None
    _resumed(path)  # leaves the record
    monkeypatch.setattr("storyloom.saves.chain.SETTLED_NS", 0)
    hashed = hash_before_record("latest")
    assert hashed is not None and hashed.size == resume_record.remembered_offset(_header(path))
    monkeypatch.setattr(writer, "prefix_digest", lambda *args: pytest.fail("hashed again"))
    _, used = _resumed_hashed(path, hashed)
    assert used
