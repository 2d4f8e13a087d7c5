"""Every rule refuses what it names, with a message a model can act on."""

from __future__ import annotations

import json

import pytest

from storyloom.engine.rules import RULES, judge
from storyloom.engine.state import initial_state, state_hash
from tests.conftest import turn_json


def rules_of(verdict):
    return {issue.rule for issue in verdict.issues}


def test_a_valid_take_passes_and_changes_only_the_copy(pack):
    before = initial_state(pack)
    frozen = json.dumps(before, sort_keys=True)
    verdict = judge(
        turn_json("You pick up the brass lamp.", [{"op": "replace", "path": "/items/lamp", "value": "player"}]),
        before,
        pack,
    )
    assert verdict.ok
    assert verdict.after["items"]["lamp"] == "player"
    assert json.dumps(before, sort_keys=True) == frozen


def test_no_output_asks_for_the_structured_output(pack):
    verdict = judge(None, initial_state(pack), pack)
    assert rules_of(verdict) == {"output.missing"}
    assert "structured output" in verdict.issues[0].message


@pytest.mark.parametrize("raw", ['{"narrative": "You wa', "[1, 2]", '{"narrative": NaN}', "[" * 10000 + "]" * 10000])
def test_broken_json_is_an_output_json_issue(pack, raw):
    verdict = judge(raw, initial_state(pack), pack)
    assert rules_of(verdict) == {"output.json"}


def test_truncated_json_says_it_ended_early(pack):
    verdict = judge('{"narrative": "You wa', initial_state(pack), pack)
    assert "ends before the JSON is complete" in verdict.issues[0].message


def test_huge_output_is_refused_unparsed(pack):
    verdict = judge('{"narrative": "' + "a" * 300_000 + '"}', initial_state(pack), pack)
    assert rules_of(verdict) == {"output.too_large"}


@pytest.mark.parametrize(
    "data,path",
    [
        ({"state_patch": []}, "/narrative"),
        ({"narrative": "", "state_patch": []}, "/narrative"),
        ({"narrative": "x" * 4001, "state_patch": []}, "/narrative"),
        ({"narrative": 7, "state_patch": []}, "/narrative"),
        ({"narrative": "Hi.", "state_patch": "none"}, "/state_patch"),
        ({"narrative": "Hi.", "state_patch": [{"op": "move", "path": "/location", "from": "/x"}]}, "/state_patch/0/op"),
        ({"narrative": "Hi.", "state_patch": [], "suggestions": ["a", "b", "c", "d", "e"]}, "/suggestions"),
        ({"narrative": "Hi.", "state_patch": [], "mood": "grim"}, "/mood"),
    ],
)
def test_schema_violations_name_the_field(pack, data, path):
    verdict = judge(json.dumps(data), initial_state(pack), pack)
    assert rules_of(verdict) == {"turn.schema"}
    assert any(issue.path.startswith(path) for issue in verdict.issues)


def test_a_patch_of_100000_operations_is_a_schema_issue(pack):
    patch = [{"op": "test", "path": "/location", "value": "shore"}] * 100_000
    verdict = judge(json.dumps({"narrative": "Hi.", "state_patch": patch})[:199_000], initial_state(pack), pack)
    assert not verdict.ok


@pytest.mark.parametrize(
    "path,word",
    [
        ("/items/sword", "no item 'sword'"),
        ("/stats/mana", "no stat 'mana'"),
        ("/flags/gate_open", "no flag 'gate_open'"),
        ("/weather", "only /location"),
        ("/items", "only /location"),
    ],
)
def test_unknown_paths_are_refused_and_the_declared_ones_listed(pack, path, word):
    verdict = judge(turn_json("Hi.", [{"op": "add", "path": path, "value": 1}]), initial_state(pack), pack)
    assert rules_of(verdict) == {"patch.path"}
    assert word in verdict.issues[0].message


def test_removing_a_declared_item_is_refused(pack):
    verdict = judge(
        turn_json("The lamp is gone.", [{"op": "remove", "path": "/items/lamp"}]), initial_state(pack), pack
    )
    assert rules_of(verdict) == {"patch.path"}


def test_a_failed_test_operation_is_a_patch_apply_issue(pack):
    verdict = judge(
        turn_json("Hi.", [{"op": "test", "path": "/location", "value": "tower"}]), initial_state(pack), pack
    )
    assert rules_of(verdict) == {"patch.apply"}


@pytest.mark.parametrize(
    "path,value,section",
    [
        ("/location", "moon", "location"),
        ("/items/lamp", "moon", "items"),
        ("/stats/health", "9", "stats"),
        ("/stats/health", 9.5, "stats"),
        ("/stats/health", True, "stats"),
        ("/flags/door_open", "yes", "flags"),
    ],
)
def test_values_of_the_wrong_kind_are_state_schema_issues(pack, path, value, section):
    verdict = judge(
        turn_json("The lamp and the moon, the Cliff Path.", [{"op": "replace", "path": path, "value": value}]),
        initial_state(pack),
        pack,
    )
    assert rules_of(verdict) == {"state.schema"}
    assert verdict.issues[0].path.startswith(f"/{section}")


def test_moving_along_no_exit_lists_the_exits(pack):
    verdict = judge(
        turn_json("You climb to the Lamp Room.", [{"op": "replace", "path": "/location", "value": "tower"}]),
        initial_state(pack),
        pack,
    )
    assert rules_of(verdict) == {"move.exit"}
    assert "north to Cliff Path (path)" in verdict.issues[0].message


def test_moving_along_an_exit_naming_the_room_passes(pack):
    verdict = judge(
        turn_json("You walk north to the cliff path.", [{"op": "replace", "path": "/location", "value": "path"}]),
        initial_state(pack),
        pack,
    )
    assert verdict.ok


def test_a_gated_exit_stays_closed_until_its_flag(pack):
    on_path = {**initial_state(pack), "location": "path"}
    climb = turn_json("You climb up to the Lamp Room.", [{"op": "replace", "path": "/location", "value": "tower"}])
    assert rules_of(judge(climb, on_path, pack)) == {"move.gate"}
    opened = {**on_path, "flags": {"door_open": True}}
    assert judge(climb, opened, pack).ok


def test_taking_from_another_room_is_refused(pack):
    verdict = judge(
        turn_json("You take the iron key.", [{"op": "replace", "path": "/items/key", "value": "player"}]),
        initial_state(pack),
        pack,
    )
    assert rules_of(verdict) == {"item.take_reach"}
    assert "Cliff Path" in verdict.issues[0].message


def test_taking_a_non_portable_item_is_refused(pack):
    verdict = judge(
        turn_json("You lift the boulder.", [{"op": "replace", "path": "/items/boulder", "value": "player"}]),
        initial_state(pack),
        pack,
    )
    assert rules_of(verdict) == {"item.not_portable"}


def test_dropping_into_another_room_is_refused(pack):
    holding = initial_state(pack)
    holding = {**holding, "items": {**holding["items"], "lamp": "player"}}
    verdict = judge(
        turn_json("You drop the lamp.", [{"op": "replace", "path": "/items/lamp", "value": "tower"}]), holding, pack
    )
    assert rules_of(verdict) == {"item.drop_reach"}


def test_stats_stay_in_bounds_and_nothing_is_clamped(pack):
    verdict = judge(
        turn_json("You feel mighty.", [{"op": "replace", "path": "/stats/health", "value": 11}]),
        initial_state(pack),
        pack,
    )
    assert rules_of(verdict) == {"stat.bounds"}
    assert verdict.after is None
    assert "0..10" in verdict.issues[0].message


def test_an_item_moved_without_being_named_is_refused(pack):
    verdict = judge(
        turn_json("You take it.", [{"op": "replace", "path": "/items/lamp", "value": "player"}]),
        initial_state(pack),
        pack,
    )
    assert rules_of(verdict) == {"prose.item"}
    assert "'brass lamp', 'lamp', 'lantern'" in verdict.issues[0].message


def test_an_alias_names_the_item_but_a_longer_word_does_not(pack):
    take = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
    assert judge(turn_json("You grab the LANTERN.", take), initial_state(pack), pack).ok
    assert not judge(turn_json("You grab the lamplight.", take), initial_state(pack), pack).ok


def test_a_move_without_naming_the_room_is_refused(pack):
    verdict = judge(
        turn_json("You walk north.", [{"op": "replace", "path": "/location", "value": "path"}]),
        initial_state(pack),
        pack,
    )
    assert rules_of(verdict) == {"prose.room"}


def test_every_rule_id_is_documented_in_the_readme():
    from pathlib import Path

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    for rule in RULES:
        assert f"`{rule}`" in readme


def test_every_rule_id_the_engine_judges_by_is_in_rules():
    """An issue's rule id is how logs and the README name it: each `Issue(where, "rule", ...)` the
    engine writes names one of `RULES` (a narrator's failure kinds are `NarratorError.rule`)."""
    import ast
    from pathlib import Path

    from storyloom.engine import story

    engine = Path(__file__).parent.parent / "engine"
    found = set()
    for path in engine.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Issue" and len(node.args) > 1:
                rule = node.args[1]
                if isinstance(rule, ast.Constant):
                    found.add(rule.value)
    assert found and story.RULE in RULES
    assert found <= set(RULES), found - set(RULES)


def test_state_hash_is_stable_under_key_order(pack):
    state = initial_state(pack)
    shuffled = {
        "flags": state["flags"],
        "stats": state["stats"],
        "items": dict(reversed(state["items"].items())),
        "location": state["location"],
    }
    assert state_hash(state) == state_hash(shuffled)
    assert state_hash(state) != state_hash({**state, "location": "path"})


@pytest.mark.parametrize(
    "raw",
    [
        '{"narrative": "You look.", "state_patch": []}{"narrative": "You look again.", "state_patch": []}',
        '{"narrative": "You look.", "state_patch": []}\n\nDone!',
    ],
)
def test_a_complete_object_with_more_after_it_is_not_called_cut_off(pack, raw):
    verdict = judge(raw, initial_state(pack), pack)
    assert rules_of(verdict) == {"output.json"}
    message = verdict.issues[0].message
    assert "ends before the JSON is complete" not in message
    assert "followed by more text" in message and "exactly one JSON object" in message
