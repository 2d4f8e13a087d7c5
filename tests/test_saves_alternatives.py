"""Other versions of a turn in a save: each version's attempts and commit and every choice are
recorded in the chain; verify re-judges every version against the state before its turn; resume
restores the chosen version and the others for browsing; replay plays them back as they happened;
exports follow the chosen path; a save from before versions existed (format 1) still opens."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

from storyloom.engine.events import AlternativeChosen, TurnCommitted
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.engine.state import state_hash
from storyloom.saves.export import export_json, export_markdown, read_story
from storyloom.saves.format import VERSION
from storyloom.saves.reader import load_save
from storyloom.saves.replay import Replayer, replay_plan
from storyloom.saves.resume import resume
from storyloom.saves.verify import verify_save
from tests.test_journal import _both_readings
from tests.test_replay import _timeless
from tests.test_saves_kit import kinds, play, played_save_async, rewrite_records

V1_SAVE = Path(__file__).parent / "saves" / "format_v1_lighthouse.jsonl"
"""Written by storyloom before versions existed (format 1): `storyloom play --story lighthouse
--headless --faults 0.4 --seed 3` of look, take lamp, /undo, take lamp, go north, examine key,
take key, go south, inventory; five commits, an undo, corrections, and a last turn that failed."""
V1_PACK = V1_SAVE.with_suffix(".toml")
"""The Lighthouse Keeper as it was when that save was made (its digest is the one the save records)."""

WALK = ["look", "take rope", "/regenerate", "/regenerate", "/regenerate", "/choose 2", "north", "/regenerate", "up"]


def _narrator(seed: int = 7, faults: float = 0.0) -> OfflineNarrator:
    return OfflineNarrator(load_pack("lighthouse"), seed=seed, faults=faults)


async def test_a_save_records_every_version_and_choice_in_the_chain_and_verifies_sound(tmp_path: Path) -> None:
    path, live, events = await played_save_async(tmp_path / "s.jsonl", WALK, faults=0.0)
    recorded = kinds(path)
    assert recorded.count("alternative_started") == 4 and recorded.count("alternative_chosen") == 1
    assert recorded.count("turn_committed") == 4 + 4
    save = load_save(path)
    assert save.header.version == VERSION and not save.warnings
    report = verify_save(path)
    assert report.sound, report.lines
    assert any(line.startswith("alternatives: 4 other versions") and "1 choice " in line for line in report.lines)
    committed = [e for e in events if isinstance(e, TurnCommitted)]
    assert report.lines[-2] == f"final state: {state_hash(live.state)}"
    assert committed[-1].state_hash == state_hash(live.state)


async def test_verify_judges_each_version_against_the_state_before_its_turn(tmp_path: Path) -> None:
    """A forged version that is valid only after the version before it (west from the yard the
    first version reached, where the turn started on the cliff path) is refused."""
    path, live, _ = await played_save_async(tmp_path / "s.jsonl", ["north", "up", "/regenerate"], faults=0.0)
    pack = load_pack("lighthouse")
    after_first = live.versions.alternatives[0].state
    assert after_first["location"] == "yard"
    forged_after = {**copy.deepcopy(after_first), "location": "cottage"}

    def forge(records):
        last = max(i for i, r in enumerate(records) if r["kind"] == "turn_committed")
        data = records[last]["data"]
        records[last] = {
            **records[last],
            "data": {
                **data,
                "narrative": f"You go west, into the {pack.rooms['cottage'].name}.",
                "state_patch": [{"op": "replace", "path": "/location", "value": "cottage"}],
                "state_hash": state_hash(forged_after),
            },
        }
        return records

    rewrite_records(path, forge)
    report = verify_save(path)
    assert not report.sound
    assert "does not pass the rules against the state before it" in report.lines[-1]


async def test_a_choice_of_a_version_never_committed_is_refused(tmp_path: Path) -> None:
    path, _, _ = await played_save_async(tmp_path / "s.jsonl", ["look", "/regenerate", "/choose 1"], faults=0.0)

    def forge(records):
        chosen = next(i for i, r in enumerate(records) if r["kind"] == "alternative_chosen")
        records[chosen] = {**records[chosen], "data": {**records[chosen]["data"], "alternative": 3}}
        return records

    rewrite_records(path, forge)
    report = verify_save(path)
    assert not report.sound and "no such committed version" in report.lines[-1]


async def test_resume_restores_the_chosen_version_and_the_others_for_browsing(tmp_path: Path) -> None:
    path, live, _ = await played_save_async(
        tmp_path / "s.jsonl", ["look", "take rope", "/regenerate", "/regenerate", "/choose 2"], faults=0.0
    )
    resumed = resume(path, _narrator())
    with resumed.journal:
        session = resumed.session
        assert session.versions == live.versions and session.versions.chosen == 2
        assert session.state == live.state and session.history == live.history
        assert session.showing() == live.showing()
        third = session.choose(3)
        assert third is not None and session.state == live.versions.alternatives[2].state
        resumed.journal.record(third)
        await play(session, resumed.journal, ["inventory"])
        assert session.history[1] == live.versions.alternatives[2].exchange
    assert verify_save(path).sound
    again = resume(path, _narrator())
    with again.journal:
        assert again.session.history[1] == live.versions.alternatives[2].exchange
        assert again.session.versions is not None and again.session.versions.turn == 3  # turn 2 is fixed now
        assert len(again.session.versions.alternatives) == 1


async def test_replay_plays_regenerations_and_choices_as_they_happened(tmp_path: Path) -> None:
    path, live, events = await played_save_async(
        tmp_path / "s.jsonl",
        [*WALK, "/regenerate", "/cancel /regenerate", "/choose 1", "west", "/undo", "east"],
        faults=0.5,
        seed=3,
    )
    assert {"correction_started", "alternative_chosen"} <= set(kinds(path))
    plan = replay_plan(load_save(path))
    assert [s.action for s in plan.steps].count("regenerate") == 6
    assert [s.action for s in plan.steps].count("choose") == 2
    result = await Replayer(plan).run()
    assert result.divergence is None, str(result.divergence)
    assert _timeless(result.events) == _timeless(events)
    assert result.final_hash == state_hash(live.state) == result.expected_final_hash


async def test_a_cancelled_regeneration_replays_as_cancelled_and_the_chosen_version_stays(tmp_path: Path) -> None:
    path, live, events = await played_save_async(
        tmp_path / "s.jsonl", ["take rope", "/regenerate", "/cancel /regenerate", "north"], faults=0.0
    )
    assert kinds(path).count("turn_cancelled") == 1
    second = [e for e in events if isinstance(e, TurnCommitted) and e.turn == 1][-1]
    assert live.history[0].turn.narrative == second.narrative  # the cancelled third left the second chosen
    result = await Replayer(replay_plan(load_save(path))).run()
    assert result.faithful, str(result.divergence)
    assert _timeless(result.events) == _timeless(events)


async def test_a_replay_that_cannot_choose_what_the_record_chose_is_a_divergence(tmp_path: Path) -> None:
    path, _, _ = await played_save_async(tmp_path / "s.jsonl", ["look", "/regenerate", "/choose 1"], faults=0.0)
    plan = replay_plan(load_save(path))
    plan.steps = [s for s in plan.steps if s.action != "regenerate"]
    result = await Replayer(plan).run()
    assert result.divergence is not None and "version 1 chosen" in str(result.divergence)


async def test_a_torn_write_during_a_regeneration_loses_nothing_committed(tmp_path: Path) -> None:
    path, live, _ = await played_save_async(
        tmp_path / "s.jsonl", ["take rope", "/regenerate", "/choose 1", "/regenerate"], faults=0.0
    )
    lines = path.read_bytes().splitlines(keepends=True)
    started = max(i for i, line in enumerate(lines) if b'"alternative_started"' in line)
    torn = lines[started + 1][: len(lines[started + 1]) // 2]  # the process died writing the attempt
    path.write_bytes(b"".join(lines[: started + 1]) + torn)
    assert load_save(path).warnings
    resumed = resume(path, _narrator())
    with resumed.journal:
        session = resumed.session
        assert resumed.rebuilt.interrupted == 1 and session.pending is None
        assert session.versions is not None and len(session.versions.alternatives) == 2
        assert session.versions.chosen == 1 and session.state == live.versions.alternatives[0].state
        events = await play(session, resumed.journal, ["/regenerate"])
        assert events[0].alternative == 3 and events[-1].event == "turn_committed"
    report = verify_save(path)
    assert report.sound, report.lines
    replayed = await Replayer(replay_plan(load_save(path))).run()
    assert replayed.faithful, str(replayed.divergence)


async def test_exports_follow_the_chosen_path_and_the_json_lists_the_other_versions(tmp_path: Path) -> None:
    path, live, _ = await played_save_async(
        tmp_path / "s.jsonl", ["look", "take rope", "/regenerate", "/regenerate", "/choose 2", "north"], faults=0.0
    )
    pack = load_pack("lighthouse")
    save = load_save(path)
    chosen = next(e for _, e in save.events if isinstance(e, AlternativeChosen))
    others = [
        e.narrative
        for _, e in save.events
        if isinstance(e, TurnCommitted) and e.turn == 2 and e.narrative != chosen.narrative
    ]
    story = read_story(save.path, save.header, save.records, pack, header_time=save.header_time)
    markdown = export_markdown(story)
    assert chosen.narrative.split("\n")[0] in markdown
    assert not any(other.split("\n")[0] in markdown for other in others if other.split("\n")[0] not in chosen.narrative)
    data = export_json(story)
    assert [t["turn"] for t in data["turns"]] == [1, 2, 3]
    turn = data["turns"][1]
    assert turn["narrative"] == chosen.narrative and turn["alternative"] == 2
    assert sorted(o["alternative"] for o in turn["alternatives"]) == [1, 3]
    assert json.loads(json.dumps(data)) == data


async def test_a_format_1_save_opens_verifies_replays_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    shutil.copyfile(V1_SAVE, path)
    pack = load_pack(V1_PACK)
    save = load_save(path)
    assert save.header.version == 1 and not save.warnings
    fast, careful = _both_readings(path)
    assert fast is not None and fast[1:] == careful[1:]  # format 1 records read as written, like format 2
    report = verify_save(path, pack)
    assert report.sound, report.lines
    assert "format version 1" in report.lines[1]
    assert "turns: 4 turns in the story (5 committed, 1 undone)" in report.lines[4]
    replayed = await Replayer(replay_plan(save, pack=pack)).run()
    assert replayed.faithful, str(replayed.divergence)
    resumed = resume(path, OfflineNarrator(pack, seed=3), pack=pack)
    with resumed.journal:
        session = resumed.session
        assert session.pending is not None and session.pending.turn == 6  # the turn that failed
        assert session.versions is None  # the failed command fixed the turn before it
        events = await play(session, resumed.journal, ["/retry"])
        assert events[-1].event == "turn_committed"
        events = await play(session, resumed.journal, ["/regenerate", "/choose 1"])
        assert events[0].event == "alternative_started" and events[-1].event == "alternative_chosen"
    assert path.read_bytes().startswith(V1_SAVE.read_bytes())  # nothing written before is touched
    report = verify_save(path, pack)
    assert report.sound, report.lines
    assert (await Replayer(replay_plan(load_save(path), pack=pack)).run()).faithful


async def test_after_an_undo_the_turn_before_is_latest_again_with_its_versions_in_the_save_too(
    tmp_path: Path,
) -> None:
    """ctrl+z made the turn before the latest again but left its versions fixed: they come back, in
    the live session and in every reading of the save (verify, replay, resume)."""
    walk = ["take rope", "/regenerate", "/choose 1", "north", "/undo", "/choose 2"]
    path, live, events = await played_save_async(tmp_path / "s.jsonl", walk, faults=0.0)
    assert events[-1].event == "alternative_chosen" and events[-1].turn == 1 and events[-1].alternative == 2
    assert live.versions is not None and live.versions.turn == 1 and live.versions.chosen == 2
    report = verify_save(path)
    assert report.sound, report.lines
    assert (await Replayer(replay_plan(load_save(path))).run()).faithful
    resumed = resume(path, _narrator(faults=0.0))
    with resumed.journal:
        session = resumed.session
        assert session.versions is not None and session.versions.turn == 1 and session.versions.chosen == 2
        assert session.state == live.state and session.can_regenerate


async def test_a_save_whose_last_act_is_an_undo_resumes_with_the_new_latest_turns_versions(tmp_path: Path) -> None:
    walk = ["take rope", "/regenerate", "/regenerate", "/choose 2", "north", "/undo"]
    path, live, _ = await played_save_async(tmp_path / "s.jsonl", walk, faults=0.0)
    resumed = resume(path, _narrator(faults=0.0))
    with resumed.journal:
        versions = resumed.session.versions
        assert versions is not None and versions.turn == 1 and len(versions.alternatives) == 3
        assert versions.chosen == 2 and resumed.session.state == live.state
