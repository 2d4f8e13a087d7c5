"""A correction asks for only what was wrong (issue 29): when only the patch broke a rule, the model
sends the corrected patch alone; its prose on screen and its suggestions are kept from the rejected
turn, referenced in the request rather than repeated. The engine lays the answer over the rejected
turn and judges the merged whole as any turn: a field the answer sends replaces the rejected one
(asked for or not), one it leaves out is kept, so no rule is relaxed. Saves played under the rule
set before this (3 and older: only a narrative left out was kept) still verify and replay as played.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.anthropic import AnthropicNarrator
from storyloom.engine.narrators.openai import OpenAINarrator
from tests.conftest import Reply, ScriptedNarrator, structured

PROSE = "You take the brass lamp from among the black rocks, and the sea goes on breaking below you."
HINTS = ["go north", "look at the boulder"]
TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
TAKE_KEY = [{"op": "replace", "path": "/items/key", "value": "player"}]
TOO_HEALTHY = [{"op": "replace", "path": "/stats/health", "value": 11}]
BAD_PATCH = structured(PROSE, TAKE_LAMP + TOO_HEALTHY, suggestions=HINTS)
"""A turn whose prose and suggestions are fine and whose patch pushes health past its bound."""


def answer(**fields: Any) -> Reply:
    return Reply(structured=json.dumps(fields))


async def played(pack, *replies: Reply, budget: int = 2, rules: int | None = None):
    narrator = ScriptedNarrator(list(replies))
    session = Session(pack, narrator, budget=budget, **({"rules": rules} if rules is not None else {}))
    events = [e async for e in session.play("take lamp")]
    return session, narrator, events


def issues_of(events) -> list[str]:
    return [issue.rule for e in events if e.event == "validation_failed" for issue in e.issues]


async def test_only_the_patch_was_wrong_so_the_correction_sends_the_patch_and_keeps_prose_and_suggestions(pack):
    session, narrator, events = await played(pack, BAD_PATCH, answer(state_patch=TAKE_LAMP))
    committed = events[-1]
    assert committed.event == "turn_committed"
    assert committed.narrative == PROSE and list(committed.suggestions) == HINTS
    assert session.state["items"]["lamp"] == "player" and session.state["stats"]["health"] == 10
    [swap] = [e for e in events if e.event == "prose_replaced"]
    assert swap.changed is False  # the prose the player read stays, untouched
    assert dict(narrator.requests[1].kept) == {
        "narrative": PROSE,
        "state_patch": TAKE_LAMP + TOO_HEALTHY,
        "suggestions": HINTS,
    }


def _anthropic_correction(request) -> tuple[dict[str, Any], str]:
    """The rejected tool call the Anthropic request shows back, and the correction it carries."""
    messages = AnthropicNarrator(api_key="test-not-sent").request_params(request)["messages"]
    call = messages[-2]["content"][-1]
    result = messages[-1]["content"][0]
    assert call["type"] == "tool_use" and result["tool_use_id"] == call["id"] and result["is_error"]
    return call["input"], result["content"]


async def test_the_request_names_the_prose_and_suggestions_as_kept_and_shows_only_the_patch(pack):
    _, narrator, _ = await played(pack, BAD_PATCH, answer(state_patch=TAKE_LAMP))
    shown, message = _anthropic_correction(narrator.requests[1])
    assert shown == {"state_patch": TAKE_LAMP + TOO_HEALTHY}  # the prose and suggestions are referenced
    assert "stat.bounds" in message and "`state_patch` whole" in message
    assert "leave `narrative` out to keep it" in message and "leave `suggestions` out to keep them" in message
    assert PROSE not in json.dumps(shown) + message
    openai = OpenAINarrator(base_url="http://127.0.0.1:9/v1", model="m", output="tools")
    call = openai.request_body(narrator.requests[1])["messages"][-2]["tool_calls"][0]["function"]
    assert json.loads(call["arguments"]) == {"state_patch": TAKE_LAMP + TOO_HEALTHY}
    thinking = AnthropicNarrator(api_key="test-not-sent", thinking=True).request_params(narrator.requests[1])
    said_as_text = thinking["messages"][-2]["content"][-1]["text"]
    assert json.loads(said_as_text) == {"state_patch": TAKE_LAMP + TOO_HEALTHY}
    as_json = OpenAINarrator(base_url="http://127.0.0.1:9/v1", model="m", output="json")
    said = as_json.request_body(narrator.requests[1])["messages"][-2]["content"]
    assert json.loads(said) == {"state_patch": TAKE_LAMP + TOO_HEALTHY} and PROSE not in said


async def test_suggestions_that_were_wrong_are_asked_for_again(pack):
    broken = structured(PROSE, TAKE_LAMP, suggestions="go north; look")  # a string, not a list
    _, narrator, events = await played(pack, broken, answer(state_patch=TAKE_LAMP, suggestions=HINTS))
    assert events[-1].event == "turn_committed" and list(events[-1].suggestions) == HINTS
    shown, message = _anthropic_correction(narrator.requests[1])
    assert "suggestions" in shown and "and `suggestions`" in message and "leave `suggestions` out" not in message
    assert "narrative" not in shown and "leave `narrative` out" in message


async def test_a_prose_change_sneaked_into_a_patch_correction_is_judged_with_the_whole_turn(pack):
    silent = answer(narrative="You wait a while.", state_patch=TAKE_LAMP)  # the lamp moves, unnamed
    _, _, events = await played(pack, BAD_PATCH, silent, budget=1)
    assert events[-1].event == "turn_failed" and issues_of(events)[-1] == "prose.item"
    assert "prose_replaced" not in [e.event for e in events]  # a rejected correction never shows
    told = answer(narrative="You lift the brass lamp and turn back.", state_patch=TAKE_LAMP)
    _, _, events = await played(pack, BAD_PATCH, told)
    [swap] = [e for e in events if e.event == "prose_replaced"]
    assert swap.changed and events[-1].narrative == "You lift the brass lamp and turn back."
    assert list(events[-1].suggestions) == HINTS  # still kept: it sent no suggestions


async def test_an_extra_patch_operation_is_judged_with_the_whole_turn(pack):
    _, _, events = await played(pack, BAD_PATCH, answer(state_patch=TAKE_LAMP + TAKE_KEY), budget=1)
    assert events[-1].event == "turn_failed"
    last = {issue.rule for issue in events[-1].issues}
    assert {"item.take_reach", "prose.item"} <= last  # the key is out of reach, and the kept prose never names it


async def test_a_correction_that_leaves_out_the_patch_it_was_asked_for_keeps_the_rejected_one(pack):
    """Under the old rule a patch left out was none, and a turn that changed nothing could commit in
    place of the deed its prose tells; now the rejected patch stands and is refused again."""
    _, _, events = await played(pack, BAD_PATCH, answer(suggestions=["look"]), budget=1)
    assert events[-1].event == "turn_failed" and issues_of(events) == ["stat.bounds", "stat.bounds"]


@pytest.mark.parametrize(
    ("fields", "outcome"),
    [
        ({"state_patch": TAKE_LAMP, "suggestions": ["light the lamp"]}, ["light the lamp"]),  # replaces the kept
        ({"state_patch": TAKE_LAMP, "narrative": PROSE, "suggestions": HINTS}, HINTS),  # the same turn again
        ({"state_patch": TAKE_LAMP, "text": "Sorry!"}, "turn.schema"),  # not a field of a turn: refused
    ],
    ids=["unasked suggestions", "the whole turn", "an unknown field"],
)
async def test_a_field_it_was_not_asked_for_replaces_the_kept_one_and_an_unknown_field_is_refused(
    pack, fields, outcome
):
    _, _, events = await played(pack, BAD_PATCH, answer(**fields), budget=1)
    if isinstance(outcome, str):
        assert events[-1].event == "turn_failed" and issues_of(events)[-1] == outcome
    else:
        assert events[-1].event == "turn_committed" and list(events[-1].suggestions) == outcome
        assert events[-1].narrative == PROSE


async def test_under_rule_set_3_a_correction_keeps_only_the_narrative_and_is_asked_for_suggestions(pack):
    session, narrator, events = await played(pack, BAD_PATCH, answer(state_patch=TAKE_LAMP), rules=3)
    assert events[-1].event == "turn_committed" and events[-1].narrative == PROSE
    assert list(events[-1].suggestions) == []  # left out, so none: as that rule set played it
    assert dict(narrator.requests[1].kept) == {"narrative": PROSE}
    shown, message = _anthropic_correction(narrator.requests[1])
    assert shown == {"state_patch": TAKE_LAMP + TOO_HEALTHY, "suggestions": HINTS}
    assert "and `suggestions`" in message and "leave `narrative` out" in message


async def _journaled(pack, path: Path, rules: int) -> Path:
    from storyloom.saves.format import SaveHeader
    from storyloom.saves.writer import Journal
    from tests.test_saves_kit import play

    replies = [BAD_PATCH, answer(state_patch=TAKE_LAMP), structured("You look at the rocks.", [])]
    narrator = ScriptedNarrator(replies)
    session = Session(pack, narrator, rules=rules)
    header = dataclasses.replace(SaveHeader.for_session(pack, narrator), rules=rules)
    with Journal.create(path, header) as journal:
        await play(session, journal, ["take lamp", "look"])
    return path


@pytest.mark.parametrize("rules", [3, 4])
async def test_a_save_verifies_and_replays_by_the_correction_shape_it_was_played_under(pack, tmp_path, rules):
    from storyloom.saves.reader import load_save
    from storyloom.saves.replay import Replayer, replay_plan
    from storyloom.saves.verify import verify_save

    path = await _journaled(pack, tmp_path / "save.jsonl", rules)
    commit = next(json.loads(line) for line in path.read_text().splitlines() if '"turn_committed"' in line)
    assert commit["data"]["suggestions"] == ([] if rules == 3 else HINTS)
    report = verify_save(path, pack)
    assert report.sound, report.lines
    assert not any("would refuse" in line for line in report.lines)
    replayed = await Replayer(replay_plan(load_save(path), pack=pack)).run()
    assert replayed.faithful, str(replayed.divergence)


@pytest.mark.parametrize("rules", [3, 4])
async def test_a_commit_edited_to_the_other_shapes_suggestions_is_refused(pack, tmp_path, rules):
    from storyloom.saves.verify import verify_save
    from tests.test_saves_kit import rewrite_records

    path = await _journaled(pack, tmp_path / "save.jsonl", rules)

    def other_shape(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        commit = next(r for r in records if r["kind"] == "turn_committed")
        commit["data"]["suggestions"] = HINTS if rules == 3 else []
        return records

    rewrite_records(path, other_shape)
    report = verify_save(path, pack)
    assert not report.sound
    assert any("its suggestions differs" in line for line in report.lines), report.lines


async def test_when_only_the_prose_was_wrong_the_correction_sends_the_prose_and_the_patch_is_kept(pack):
    from storyloom.tui.screens.issue_details import attempts_of

    unnamed = structured("You stoop among the rocks, then stand.", TAKE_LAMP, suggestions=HINTS)
    _, _, events = await played(pack, unnamed, answer(narrative="You pick up the brass lamp."))
    assert issues_of(events) == ["prose.item"]
    committed = events[-1]
    assert committed.event == "turn_committed" and list(committed.state_patch) == TAKE_LAMP
    assert committed.narrative == "You pick up the brass lamp." and list(committed.suggestions) == HINTS
    first, correction = attempts_of(events)
    assert correction.patch == first.patch  # the turn's details say the patch was kept, not lost


async def test_a_commit_that_drops_suggestions_a_correction_kept_is_refused_though_its_answer_has_the_prose(
    pack, tmp_path
):
    """The answer carries prose and patch as committed but no suggestions: they were kept, so a commit
    edited to none is not what the answer gives (a quick look at the answer alone would pass it)."""
    from storyloom.saves.format import SaveHeader
    from storyloom.saves.verify import verify_save
    from storyloom.saves.writer import Journal
    from tests.test_saves_kit import play, rewrite_records

    narrator = ScriptedNarrator([BAD_PATCH, answer(narrative=PROSE, state_patch=TAKE_LAMP)])
    session = Session(pack, narrator)
    path = tmp_path / "save.jsonl"
    with Journal.create(path, SaveHeader.for_session(pack, narrator)) as journal:
        await play(session, journal, ["take lamp"])
    assert verify_save(path, pack).sound

    def no_suggestions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        commit = next(r for r in records if r["kind"] == "turn_committed")
        assert commit["data"]["suggestions"] == HINTS
        commit["data"]["suggestions"] = []
        return records

    rewrite_records(path, no_suggestions)
    report = verify_save(path, pack)
    assert not report.sound and any("its suggestions differs" in line for line in report.lines), report.lines
