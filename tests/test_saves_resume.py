"""Resume and undo: a continued story is the story the player left, undo included."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from storyloom.engine.events import TurnCommitted, TurnUndone
from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.engine.state import state_hash
from storyloom.saves.errors import SaveLocked
from storyloom.saves.format import SaveHeader
from storyloom.saves.reader import load_save
from storyloom.saves.resume import resume
from storyloom.saves.verify import verify_save
from storyloom.saves.writer import Journal
from tests.test_saves_kit import kinds, play, played_save, played_save_async


def _narrator(seed: int = 7, faults: float = 0.5) -> OfflineNarrator:
    return OfflineNarrator(load_pack("lighthouse"), seed=seed, faults=faults)


async def test_a_resumed_session_has_the_state_history_and_turn_number_the_player_left(tmp_path: Path) -> None:
    path, live, _ = await played_save_async(tmp_path / "s.jsonl")
    resumed = resume(path, _narrator())
    with resumed.journal:
        session = resumed.session
        assert session.state == live.state and state_hash(session.state) == state_hash(live.state)
        assert session.history == live.history
        assert session.next_turn == live.next_turn
        assert session.budget == live.budget


async def test_a_resumed_story_plays_on_exactly_as_an_unbroken_one(tmp_path: Path) -> None:
    """Play 12 commands straight, or 6, quit, resume and play 6: the same story and the same save content."""
    _, straight, straight_events = await played_save_async(tmp_path / "straight.jsonl")
    from tests.test_saves_kit import LIGHTHOUSE_WALK

    first, second = LIGHTHOUSE_WALK[:6], LIGHTHOUSE_WALK[6:]
    path, _, _ = await played_save_async(tmp_path / "split.jsonl", first)
    resumed = resume(path, _narrator())
    with resumed.journal:
        await play(resumed.session, resumed.journal, second)
    assert resumed.session.state == straight.state
    assert resumed.session.history == straight.history
    committed = [e.state_hash for _, e in load_save(path).events if isinstance(e, TurnCommitted)]
    assert committed == [e.state_hash for e in straight_events if isinstance(e, TurnCommitted)]
    assert "resumed" in kinds(path) and verify_save(path).sound


async def test_undo_restores_the_previous_committed_state_and_is_recorded_not_deleted(tmp_path: Path) -> None:
    path, session, events = await played_save_async(tmp_path / "s.jsonl", ["take rope", "north", "/undo"], faults=0.0)
    commits = [e for e in events if isinstance(e, TurnCommitted)]
    undo = next(e for e in events if isinstance(e, TurnUndone))
    assert undo.state_hash == commits[0].state_hash
    assert session.state["location"] == "shore" and session.state["items"]["rope"] == "player"
    assert kinds(path).count("turn_committed") == 2 and kinds(path)[-1] == "turn_undone"


async def test_undo_works_across_a_resume(tmp_path: Path) -> None:
    path, live, events = await played_save_async(tmp_path / "s.jsonl", ["take rope", "north"], faults=0.0)
    first_commit = next(e for e in events if isinstance(e, TurnCommitted))
    resumed = resume(path, _narrator(faults=0.0))
    with resumed.journal:
        undone = resumed.session.undo()
        assert undone is not None
        resumed.journal.record(undone)
        assert undone.state_hash == first_commit.state_hash
        assert len(resumed.session.history) == 1
    again = resume(path, _narrator(faults=0.0))
    with again.journal:
        assert state_hash(again.session.state) == first_commit.state_hash
        assert [x.player_input for x in again.session.history] == ["take rope"]
        assert again.session.undo() is not None and again.session.undo() is None  # back to the start, no further


async def test_a_turn_that_failed_can_be_retried_after_a_resume(tmp_path: Path) -> None:
    pack = load_pack("lighthouse")
    narrator = OfflineNarrator(pack, seed=3, faults=1.0, stubborn=1.0)
    path = tmp_path / "s.jsonl"
    session = Session(pack, narrator, budget=1)
    with Journal.create(path, SaveHeader.for_session(pack, narrator, seed=3, budget=1, faults=1.0)) as journal:
        events = await play(session, journal, ["take rope"])
    assert events[-1].event == "turn_failed"
    resumed = resume(path, OfflineNarrator(pack, seed=3, faults=0.0))
    with resumed.journal:
        assert resumed.session.pending is not None and resumed.session.pending.player_input == "take rope"
        retried = await play(resumed.session, resumed.journal, ["/retry"])
    assert retried[-1].event == "turn_committed" and retried[0].turn == 1
    assert verify_save(path).sound


async def test_a_save_cut_off_mid_turn_resumes_with_that_turn_closed_and_retryable(tmp_path: Path) -> None:
    path, _, _ = await played_save_async(tmp_path / "s.jsonl", ["take rope", "north"], faults=0.0)
    lines = path.read_bytes().splitlines(keepends=True)
    last_started = max(i for i, line in enumerate(lines) if b'"turn_started"' in line)
    path.write_bytes(b"".join(lines[: last_started + 1]))  # the process died while turn 2 streamed
    resumed = resume(path, _narrator(faults=0.0))
    with resumed.journal:
        assert resumed.rebuilt.interrupted == 2
        assert resumed.session.pending is not None and resumed.session.pending.player_input == "north"
        assert resumed.session.next_turn == 3
        events = await play(resumed.session, resumed.journal, ["/retry"])
    assert events[-1].event == "turn_committed" and resumed.session.state["location"] == "path"
    assert verify_save(path).sound


def test_resume_refuses_a_save_another_process_is_writing(tmp_path: Path) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look"], faults=0.0)
    with Journal.open_for_append(path), pytest.raises(SaveLocked):
        resume(path, _narrator())


def test_resume_latest_picks_the_newest_save_in_the_saves_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    from storyloom.saves.locations import new_save_path

    older = played_save(new_save_path("lighthouse"), ["look"], faults=0.0)[0]
    import os

    os.utime(older, (1, 1))
    newer = played_save(new_save_path("lighthouse"), ["take rope"], faults=0.0)[0]
    assert older != newer
    resumed = resume("latest", _narrator())
    with resumed.journal:
        assert resumed.journal.path == newer
        assert resumed.session.state["items"]["rope"] == "player"


def test_resume_keeps_a_save_s_budget(tmp_path: Path) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look"], faults=0.0, budget=5)
    resumed = asyncio.run(_resume_budget(path))
    assert resumed == 5


async def _resume_budget(path: Path) -> int:
    resumed = resume(path, _narrator())
    with resumed.journal:
        return resumed.session.budget


def test_a_resume_reads_and_parses_the_save_once(tmp_path: Path, monkeypatch) -> None:
    """The save the writer appends to is the one the session was rebuilt from: one read, one parse,
    a block at a time through the locked descriptor."""
    import os

    from storyloom.saves import reader
    from storyloom.saves.choices import SessionChoices
    from storyloom.saves.resume import resume_with

    path, _, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope"], faults=0.0)
    size = path.stat().st_size
    header = len(path.read_bytes().split(b"\n")[0]) + 1
    parses: list[Path] = []
    read_bytes: list[int] = []
    parse, os_read, os_pread, path_read_bytes = reader._AsWritten.__init__, os.read, os.pread, Path.read_bytes

    def counted_parse(self: object, at: Path, header_line: bytes) -> None:
        parses.append(at)
        parse(self, at, header_line)

    def counted_os_read(fd: int, n: int) -> bytes:
        chunk = os_read(fd, n)
        read_bytes.append(len(chunk))
        return chunk

    def counted_os_pread(fd: int, n: int, offset: int) -> bytes:
        chunk = os_pread(fd, n, offset)
        if n == reader.StreamedSave.BLOCK:  # the records, from the header line's end (not the checks after)
            read_bytes.append(len(chunk))
        return chunk

    def counted_read_bytes(self: Path) -> bytes:
        blob = path_read_bytes(self)
        if self == path:
            read_bytes.append(len(blob))
        return blob

    monkeypatch.setattr(reader._AsWritten, "__init__", counted_parse)
    monkeypatch.setattr(os, "read", counted_os_read)
    monkeypatch.setattr(os, "pread", counted_os_pread)
    monkeypatch.setattr(Path, "read_bytes", counted_read_bytes)
    resumed = resume_with(
        path, lambda pack, kept: OfflineNarrator(pack, seed=kept.seed, faults=kept.faults), SessionChoices()
    )
    with resumed.journal:
        assert parses == [path]
        assert header + sum(read_bytes) == size
        assert resumed.journal.path == path and resumed.session.next_turn == 3


def test_continuing_with_the_offline_narrator_keeps_the_save_s_seed_and_fault_rate(tmp_path: Path) -> None:
    from storyloom.saves.choices import SessionChoices

    header = load_save(played_save(tmp_path / "s.jsonl", ["look"], seed=11, faults=0.25)[0]).header
    assert SessionChoices(narrator="offline", seed=1, faults=0.0).continuing(header) == SessionChoices(
        narrator="offline", seed=11, faults=0.25
    )
    other = SessionChoices(narrator="anthropic", seed=1)
    assert other.continuing(header) is other
