"""Branches in a save: recorded in the one hash chain, judged from their forks by verify, resumed on
the branch played last, replayed and exported one path at a time; older formats still open."""

from __future__ import annotations

import shutil
from pathlib import Path

from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.engine.state import state_hash
from storyloom.saves.export import export_json, export_markdown, read_story
from storyloom.saves.format import VERSION
from storyloom.saves.locations import saves_dir
from storyloom.saves.reader import load_save
from storyloom.saves.replay import Replayer, replay_plan
from storyloom.saves.resume import resume
from storyloom.saves.summary import summarize_save
from storyloom.saves.verify import verify_save
from storyloom.tui.cli import main
from tests.test_saves_kit import kinds, play, played_save_async, rewrite_records

SIX = ["look", "take rope", "north", "up", "west", "take key"]
DONE_WHEN = [*SIX, "/branch 2", "up", "open the tower door", "west", "/switch 1"]
"""The issue's walk: six turns, continue from turn 2 on a new branch, three turns there, switch back."""
V2_SAVE = Path(__file__).parent / "saves" / "format_v2_lighthouse.jsonl"
"""Written by storyloom before branches existed (format 2, commit 79b6f53): `storyloom play --headless
--story lighthouse --seed 3` of look, take rope, /regenerate, /choose 1, north, take lamp, /undo, up."""


def _narrator(seed: int = 7) -> OfflineNarrator:
    return OfflineNarrator(load_pack("lighthouse"), seed=seed, faults=0.0)


def _export(path: Path, branch: int | None = None):
    save = load_save(path)
    return read_story(path, save.header, save.records, load_pack("lighthouse"), branch=branch)


async def test_the_walk_records_branches_in_the_chain_and_every_reader_follows_them(tmp_path: Path) -> None:
    path, live, events = await played_save_async(tmp_path / "s.jsonl", DONE_WHEN, faults=0.0)
    assert kinds(path).count("branch_started") == 1 and kinds(path).count("branch_switched") == 1
    save = load_save(path)
    assert save.header.version == VERSION == 3 and not save.warnings
    started = next(e for e in events if e.event == "branch_started")
    after_two = [e for e in events if e.event == "turn_committed" and e.turn == 2][-1]
    assert started.state_hash == after_two.state_hash  # the branch starts from the world after turn 2

    report = verify_save(path)
    assert report.sound, report.lines
    assert "branches: 2, each judged from its fork; branch 1 was played last" in report.lines
    assert "  branch 1: the story as first played; 6 turns, played last" in report.lines
    assert "  branch 2: from turn 2 of branch 1 (take rope); 5 turns" in report.lines
    assert report.lines[-2] == f"final state: {state_hash(live.state)}"

    replayed = await Replayer(replay_plan(save)).run()
    assert replayed.faithful, str(replayed.divergence)

    one, two = _export(path, 1), _export(path, 2)
    assert [t["turn"] for t in export_json(one)["turns"]] == [1, 2, 3, 4, 5, 6]
    assert [t["turn"] for t in export_json(two)["turns"]] == [1, 2, 7, 8, 9]
    assert [t["player_input"] for t in export_json(two)["turns"]][2:] == ["up", "open the tower door", "west"]
    assert export_json(_export(path))["branch"] == 1  # the default: the branch played last
    assert export_json(one)["final_state"] == live.state
    assert export_json(two)["final_state"] != live.state
    assert "*Branch 2 of 2.*" in export_markdown(two) and "open the tower door" in export_markdown(two)
    assert "open the tower door" not in export_markdown(one)
    summary = summarize_save(path)
    assert summary.tally is not None and summary.tally.branches == 2


async def test_resume_continues_the_branch_played_last_and_switching_finds_the_other_where_it_stood(
    tmp_path: Path,
) -> None:
    walk = [*SIX, "/branch 2", "up", "open the tower door", "west"]
    _, live, _ = await played_save_async(tmp_path / "s.jsonl", walk, faults=0.0)
    branch_two = live.state
    path_b, live_b, _ = await played_save_async(tmp_path / "b.jsonl", [*walk, "/switch 1"], faults=0.0)
    resumed = resume(path_b, _narrator())
    with resumed.journal:
        session = resumed.session
        assert session.ledger.branch == 1 and session.state == live_b.state
        assert [x.number for x in session.history] == [1, 2, 3, 4, 5, 6]
        events = await play(session, resumed.journal, ["/switch 2"])
        assert events[-1].event == "branch_switched" and session.state == branch_two
        assert [x.number for x in session.history] == [1, 2, 7, 8, 9]
        await play(session, resumed.journal, ["east", "/undo", "/branch 7", "look"])
        assert session.ledger.branch == 3
    report = verify_save(path_b)
    assert report.sound, report.lines
    assert "branches: 3, each judged from its fork; branch 3 was played last" in report.lines
    assert (await Replayer(replay_plan(load_save(path_b))).run()).faithful


async def test_a_write_torn_while_branching_loses_nothing_committed(tmp_path: Path) -> None:
    path, live, _ = await played_save_async(tmp_path / "s.jsonl", [*SIX, "/branch 2"], faults=0.0)
    whole = path.read_bytes()
    last = whole.rstrip(b"\n").rsplit(b"\n", 1)[1]
    assert b'"kind":"branch_started"' in last
    path.write_bytes(whole[: len(whole) - len(last) // 2 - 1])  # the branch's line cut in half
    save = load_save(path)
    assert any("cut off by a crash" in warning for warning in save.warnings)
    assert [r.kind for r in save.records].count("turn_committed") == 6
    report = verify_save(path)
    assert report.sound and not any(line.startswith("branches:") for line in report.lines)
    resumed = resume(path, _narrator())
    with resumed.journal:
        assert resumed.session.ledger.branch_count == 1 and resumed.session.commits == 6
        assert [x.number for x in resumed.session.history] == [1, 2, 3, 4, 5, 6]
        await play(resumed.session, resumed.journal, ["/branch 2", "up"])
    assert verify_save(path).sound


async def test_a_format_2_save_opens_verifies_replays_resumes_and_branches(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    shutil.copyfile(V2_SAVE, path)
    save = load_save(path)
    assert save.header.version == 2 and not save.warnings
    report = verify_save(path)
    assert report.sound, report.lines
    assert "format version 2" in report.lines[1]
    assert (await Replayer(replay_plan(save)).run()).faithful
    resumed = resume(path, _narrator(seed=3))
    with resumed.journal:
        session = resumed.session
        standing = [x.number for x in session.history]
        await play(session, resumed.journal, ["/branch 1", "north", "/switch 1"])
        assert [x.number for x in session.history] == standing
    assert path.read_bytes().startswith(V2_SAVE.read_bytes())  # nothing written before is touched
    report = verify_save(path)
    assert report.sound, report.lines
    assert (await Replayer(replay_plan(load_save(path))).run()).faithful


async def test_verify_refuses_a_branch_that_does_not_start_from_its_fork(tmp_path: Path) -> None:
    path, _, _ = await played_save_async(tmp_path / "s.jsonl", [*SIX, "/branch 2", "up"], faults=0.0)

    def from_turn_three(records):
        for record in records:
            if record["kind"] == "branch_started":
                record["data"]["turn"] = 3
        return records

    forged = tmp_path / "forged.jsonl"
    shutil.copyfile(path, forged)
    rewrite_records(forged, from_turn_three)
    report = verify_save(forged)
    assert not report.sound
    assert "branch 2 stands at state" in report.lines[-1] and "not the recorded" in report.lines[-1]

    def from_nowhere(records):
        for record in records:
            if record["kind"] == "branch_started":
                record["data"]["turn"] = 40
        return records

    shutil.copyfile(path, forged)
    rewrite_records(forged, from_nowhere)
    report = verify_save(forged)
    assert "turn 40 is not on the path of branch 1" in report.lines[-1]


async def test_the_saves_listing_names_the_branches(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    folder = saves_dir()
    await played_save_async(folder / "tree.jsonl", [*SIX[:3], "/branch 1", "north"], faults=0.0)
    await played_save_async(folder / "line.jsonl", SIX[:2], faults=0.0)
    assert main(["saves"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[2:]}
    assert "4 turns in the story (4 committed, 0 undone), 2 branches" in rows["tree.jsonl"]
    assert "branches" not in rows["line.jsonl"]


async def test_the_resume_preview_never_shows_another_branchs_turns(tmp_path: Path) -> None:
    from storyloom.saves.preview import newest_turns

    walk = [*SIX[:4], "/branch 1", "north", "/switch 1"]
    path, _, _ = await played_save_async(tmp_path / "s.jsonl", walk, faults=0.0)
    assert newest_turns(path, 10) == []  # the switch: the tail holds no turn of branch 1 after it
    path, live, _ = await played_save_async(tmp_path / "t.jsonl", [*SIX[:4], "/branch 1", "north", "up"], faults=0.0)
    assert [command for command, _ in newest_turns(path, 10)] == ["north", "up"]
    assert [x.number for x in live.history] == [1, 5, 6]


async def test_a_turn_that_changes_nothing_right_after_a_branch_or_a_switch_verifies_sound(tmp_path: Path) -> None:
    """verify reuses a proven state hash for a turn without a patch: a branch or switch brings another world."""
    path, live, _ = await played_save_async(
        tmp_path / "s.jsonl", [*SIX, "/branch 2", "look", "/switch 1", "look"], faults=0.0
    )
    report = verify_save(path)
    assert report.sound, report.lines
    assert report.lines[-2] == f"final state: {state_hash(live.state)}"
