"""`verify` and `replay` judge a doctored save alike and say precisely what is wrong with it."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.saves.resume import resume
from storyloom.saves.verify import verify_save
from storyloom.tui.cli import save_commands as commands
from tests.test_saves_kit import LIGHTHOUSE_WALK, played_save, played_save_async, rewrite_records


def _replay(path: Path) -> int:
    return commands.replay(argparse.Namespace(save=str(path), speed=math.inf, headless=True))


def test_prose_edited_with_the_chain_recomputed_is_refused_by_verify_and_replay_in_the_same_words(tmp_path, capsys):
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope", "north"], faults=0.0)

    def edit_prose(records):
        for record in records:
            if record["kind"] == "turn_committed" and record["data"]["turn"] == 2:
                record["data"]["narrative"] = record["data"]["narrative"].replace("rope", "dragon", 1) + " Edited."
        return records

    rewrite_records(path, edit_prose)
    report = verify_save(path)
    text = "\n".join(report.lines)
    assert not report.sound and report.readable, text
    assert "the commit of turn 2 is not what the model's answer recorded for it" in text
    assert "its narrative differs" in text and "state_patch differs" not in text
    assert commands.verify(argparse.Namespace(save=str(path))) == 1
    capsys.readouterr()

    assert "dragon" in text  # what differs, from where it parts

    assert _replay(path) == 1
    err = capsys.readouterr().err
    assert "the commit of turn 2 is not what the model's answer recorded for it" in err  # verify's words
    assert "its narrative differs" in err and "dragon" in err


def test_a_sound_save_with_corrections_and_faults_still_verifies(tmp_path):
    path, _, _ = played_save(tmp_path / "s.jsonl", LIGHTHOUSE_WALK, faults=0.5)
    report = verify_save(path)
    assert report.sound, report.lines
    assert "every commit is what the model's recorded answer gives" in "\n".join(report.lines)


def test_a_duplicated_record_is_named_in_a_sentence(tmp_path):
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope"], faults=0.0)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:5], lines[3], *lines[5:]]))
    text = "\n".join(verify_save(path).lines)
    assert "record 3 is a second copy of an earlier record: it comes where record 5 belongs" in text, text


async def test_a_replay_of_a_save_that_went_on_after_an_interrupted_turn_says_so(tmp_path, capsys):
    path, _, _ = await played_save_async(tmp_path / "s.jsonl", ["take rope", "north"], faults=0.0)
    lines = path.read_bytes().splitlines(keepends=True)
    cut = max(i for i, line in enumerate(lines) if b'"attempt_finished"' in line)
    path.write_bytes(b"".join(lines[: cut + 1]))  # a crash in the middle of turn 2
    pack = load_pack("lighthouse")
    resumed = resume(path, OfflineNarrator(pack, seed=7))
    with resumed.journal:
        async for event in resumed.session.play("look"):
            resumed.journal.record(event)
    capsys.readouterr()
    import asyncio

    code = await asyncio.to_thread(_replay, path)
    err = capsys.readouterr().err
    assert code == 0, err
    assert "the save stops while turn 2 was in flight" not in err
    assert "turn 2 was in flight when the game stopped (never committed); the save goes on after it" in err
