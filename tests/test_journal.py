"""The journal: what a save holds, that a commit is on disk before it is shown, and the writer lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from storyloom.engine.events import NarratorRetrying, ProseDelta, TurnCommitted
from storyloom.saves.errors import SaveExists, SaveLocked
from storyloom.saves.format import VERSION, SaveHeader, record_hash
from storyloom.saves.reader import load_save
from storyloom.saves.writer import Journal
from tests.conftest import ScriptedNarrator, structured
from tests.test_saves_kit import kinds, play, played_save


def test_the_first_record_names_format_story_narrator_seed_and_budget(tmp_path: Path) -> None:
    path, session, _ = played_save(tmp_path / "s.jsonl", ["look"], seed=11, budget=3, faults=0.0)
    first = json.loads(path.read_text().splitlines()[0])
    header = first["data"]
    assert first["kind"] == "header" and first["seq"] == 0
    assert header["format"] == "storyloom-save" and header["version"] == VERSION
    assert header["story"]["id"] == "lighthouse" and header["story"]["digest"] == session.pack.digest
    assert (header["narrator"], header["model"], header["seed"], header["budget"]) == ("offline", "offline-1", 11, 3)
    assert header["storyloom"]


def test_every_record_is_numbered_timed_and_chained_to_the_one_before(tmp_path: Path) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look", "north"], faults=0.0)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["seq"] for r in records] == list(range(len(records)))
    for before, record in zip(records, records[1:], strict=False):
        assert record["prev"] == before["hash"]
        assert record["hash"] == record_hash(record)
        assert record["time"].endswith("Z")


def test_a_session_records_inputs_attempts_corrections_and_commits_but_not_prose_deltas(tmp_path: Path) -> None:
    path, _, events = played_save(
        tmp_path / "s.jsonl", ["look", "take rope", "north"], faults=1.0, seed=1, stubborn=0.0
    )
    recorded = kinds(path)
    assert "prose_delta" not in recorded and any(isinstance(e, ProseDelta) for e in events)
    for kind in ("turn_started", "attempt_finished", "validation_failed", "correction_started", "turn_committed"):
        assert kind in recorded
    attempt = next(r.data for r in load_save(path).records if r.kind == "attempt_finished")
    assert {"raw", "text", "stop_reason", "usage", "deltas", "issues"} <= set(attempt)
    started = [
        json.loads(line)["data"] for line in path.read_text().splitlines() if json.loads(line)["kind"] == "turn_started"
    ]
    assert [s["player_input"] for s in started] == ["look", "take rope", "north"]


def test_a_commit_records_its_patch_and_state_hash(tmp_path: Path) -> None:
    path, session, events = played_save(tmp_path / "s.jsonl", ["take rope"], faults=0.0)
    commit = next(r for r in load_save(path).records if r.kind == "turn_committed")
    live = next(e for e in events if isinstance(e, TurnCommitted))
    assert commit.data["state_patch"] == [dict(op) for op in live.state_patch]
    assert commit.data["state_hash"] == live.state_hash


def test_a_commit_is_fsynced_before_record_returns(tmp_path: Path, pack, monkeypatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    journal = Journal.create(tmp_path / "s.jsonl", SaveHeader.for_session(pack, ScriptedNarrator([])))
    synced.clear()
    journal.record(TurnCommitted(turn=1, state_hash="0" * 64, narrative="You look around."))
    assert synced, "the commit returned before it was fsynced"
    assert "turn_committed" in (tmp_path / "s.jsonl").read_text()
    journal.close()


def test_the_header_never_holds_an_api_key_or_other_settings(tmp_path: Path, pack) -> None:
    from storyloom.saves.resume import header_for
    from storyloom.tui.settings import Settings

    settings = Settings(
        seed=1, budget=2, faults=0.0, api_key="sk-ant-secret-123", base_url="https://user:password@example.test"
    )
    narrator = ScriptedNarrator([])
    narrator.api_key = "sk-ant-secret-123"  # type: ignore[attr-defined]
    with Journal.create(tmp_path / "s.jsonl", header_for(pack, narrator, settings.choices())):
        pass
    text = (tmp_path / "s.jsonl").read_text()
    assert "secret" not in text and "password" not in text and "api_key" not in text


def test_a_new_save_never_overwrites_an_existing_file(tmp_path: Path, pack) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("precious\n")
    with pytest.raises(SaveExists, match="resume it"):
        Journal.create(path, SaveHeader.for_session(pack, ScriptedNarrator([])))
    assert path.read_text() == "precious\n"


async def test_a_cancelled_turn_keeps_the_prose_that_was_shown(tmp_path: Path, pack) -> None:
    narrator = ScriptedNarrator([structured("You walk along the shore for a long while.")], chunk=5)
    from storyloom.engine.lifecycle import Session

    session = Session(pack, narrator)
    with Journal.create(tmp_path / "s.jsonl", SaveHeader.for_session(pack, narrator)) as journal:
        await play(session, journal, ["/cancel walk"], cancel_after_deltas=2)
    cancelled = next(r for r in load_save(tmp_path / "s.jsonl").records if r.kind == "turn_cancelled")
    shown = "".join(text for _, text in cancelled.data["partial"]["prose"])
    assert shown and "You walk along the shore".startswith(shown)


_HOLDER = textwrap.dedent("""
    import sys
    from storyloom.saves.writer import Journal
    journal = Journal.open_for_append(sys.argv[1])
    print("locked", flush=True)
    sys.stdin.readline()
""")


def test_a_second_writer_is_refused_with_the_pid_of_the_first(tmp_path: Path) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look"], faults=0.0)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parent.parent,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        before = path.read_bytes()
        with pytest.raises(SaveLocked) as refused:
            Journal.open_for_append(path)
        assert refused.value.pid == holder.pid
        assert f"pid {holder.pid}" in str(refused.value)
        assert path.read_bytes() == before
    finally:
        holder.communicate("\n", timeout=10)
    with Journal.open_for_append(path):  # the lock went with the process
        pass


def test_the_lock_is_released_on_close_so_the_save_can_be_continued(tmp_path: Path) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look"], faults=0.0)
    with Journal.open_for_append(path):
        pass
    with Journal.open_for_append(path):
        pass
    assert not (tmp_path / "s.jsonl.lock").exists()


def test_migrating_a_version_1_save_changes_nothing_and_an_unknown_version_is_refused() -> None:
    from storyloom.saves.format import migrate

    header, records = {"format": "storyloom-save", "version": 1}, [{"kind": "turn_started", "data": {"turn": 1}}]
    assert migrate(1, header, records) == (header, records)
    with pytest.raises(ValueError, match="unknown save format version 0"):
        migrate(0, header, records)


def test_an_attempt_s_output_is_stored_once_and_read_back_whole(tmp_path: Path, pack) -> None:
    """The raw output is its structured deltas joined: the save keeps the deltas and rebuilds the rest."""
    from storyloom.engine.events import AttemptFinished

    deltas = ((0, "t", "Let me think. "), (5, "s", '{"narrative": "You '), (9, "s", 'look."}'))
    odd = AttemptFinished(turn=1, attempt=2, kind="correction", raw='{"narrative": "other"}', deltas=deltas)
    usual = AttemptFinished(
        turn=1, attempt=1, kind="turn", raw='{"narrative": "You look."}', text="Let me think. ", deltas=deltas
    )
    with Journal.create(tmp_path / "s.jsonl", SaveHeader.for_session(pack, ScriptedNarrator([]))) as journal:
        journal.record(usual)
        journal.record(odd)
    lines = [json.loads(line)["data"] for line in (tmp_path / "s.jsonl").read_text().splitlines()[1:]]
    assert "raw" not in lines[0] and "text" not in lines[0]
    assert lines[1]["raw"] == '{"narrative": "other"}'
    events = [e for _, e in load_save(tmp_path / "s.jsonl").events]
    assert events == [usual, odd]


def _both_readings(path: Path):
    """A save read line by line as written (how `load_save` reads a sound save) and read carefully
    (generic JSON, then each event checked: how it names damage)."""
    from storyloom.saves.careful import read_carefully
    from storyloom.saves.reader import _read_as_written

    lines = path.read_bytes().split(b"\n")[:-1]
    return _read_as_written(path, lines), read_carefully(path, lines)


def test_a_sound_save_reads_the_same_record_for_record_as_the_careful_reading(tmp_path: Path) -> None:
    path, _, _ = played_save(
        tmp_path / "s.jsonl",
        ["look", "take rope", "/undo", "/cancel north", "/retry", "north", "up", "west", "take key"],
        faults=0.6,
        seed=3,
    )
    with Journal.open_for_append(path) as journal:
        journal.note_resumed(ScriptedNarrator([]))
        journal.record(NarratorRetrying(turn=99, attempt=1, delay=1, reason="overloaded"))  # an int delay stays an int
        journal.record_interrupted(99)
    fast, careful = _both_readings(path)
    assert fast is not None, "a save as the journal writes it was not read as written"
    assert {
        "resumed",
        "turn_undone",
        "turn_cancelled",
        "attempt_finished",
        "validation_failed",
        "correction_started",
        "narrator_retrying",
        "prose_replaced",
    } <= set(kinds(path))
    assert fast[:2] == careful[:2] and len(fast[2]) == len(careful[2])
    for quick, slow in zip(fast[2], careful[2], strict=True):
        assert quick == slow and quick.turn == slow.turn
        assert repr(quick.event) == repr(slow.event) and quick.data == slow.data
        assert quick.event == slow.event and quick.raw == slow.raw  # an attempt's answer, as a rebuild reads it


def _resigned_line(record: dict[str, object], seq: int, prev: str) -> tuple[bytes, str]:
    """A record re-signed over its JSON as spelled, NaN and all (a forgery the journal itself never writes)."""
    import hashlib

    body = {**record, "seq": seq, "prev": prev}
    body.pop("hash", None)
    spell = lambda value: json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)  # noqa: E731
    digest = hashlib.sha256(spell(body).encode()).hexdigest()
    return (spell({**body, "hash": digest}) + "\n").encode(), digest


def test_a_record_holding_nan_is_refused_as_not_json_even_re_signed(tmp_path: Path) -> None:
    from storyloom.saves.errors import CorruptRecord

    path, _, _ = played_save(tmp_path / "s.jsonl", ["take rope", "north"], faults=0.0)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    commit = next(r for r in records if r["kind"] == "turn_committed")
    commit["data"]["state_patch"][0]["value"] = float("nan")
    lines, prev = [], "0" * 64
    for seq, record in enumerate(records):
        line, prev = _resigned_line(record, seq, prev)
        lines.append(line)
    path.write_bytes(b"".join(lines))
    with pytest.raises(CorruptRecord, match="not valid JSON") as raised:
        load_save(path)
    assert raised.value.seq is None and raised.value.line == records.index(commit) + 1


@pytest.mark.parametrize(
    "forge", [lambda data: data.update(attempt="1"), lambda data: data.pop("attempt")], ids=["wrong type", "left out"]
)
def test_an_attempt_with_a_bad_field_is_refused_on_loading_even_re_signed(tmp_path: Path, forge) -> None:
    from storyloom.saves.errors import CorruptRecord
    from tests.test_saves_kit import rewrite_records

    path, _, _ = played_save(tmp_path / "s.jsonl", ["take rope", "north"], faults=0.0)

    def forged(records):
        forge(next(r for r in records if r["kind"] == "attempt_finished")["data"])
        return records

    rewrite_records(path, forged)
    with pytest.raises(CorruptRecord, match="record 2 is not a valid attempt_finished event"):
        load_save(path)
