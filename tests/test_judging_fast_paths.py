"""A turn is judged the same whether its patch and its state are read the quick way or by jsonpatch
and the state's pydantic model (the quick way only says yes to what they accept, and hands them
everything else, so every issue keeps its words)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storyloom.engine import rules
from storyloom.engine.rules import judge_data
from storyloom.engine.state import initial_state, plainly_valid, state_model

PLACES = ["shore", "path", "tower", "player", "nowhere", "moon", 3, None, True]
VALUES = st.one_of(
    st.sampled_from(PLACES),
    st.integers(-3, 14),
    st.integers(10**19, 10**20),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.just({"a": 1}),
    st.just([1]),
    st.text(max_size=3),
)
PATHS = [
    "/location",
    "/items/lamp",
    "/items/key",
    "/items/boulder",
    "/items/sword",
    "/stats/health",
    "/flags/door_open",
    "/items",
    "/stats",
    "/items/la~1mp",
    "/items/lamp/x",
    "/location/x",
    "",
    "/",
    "items/lamp",
]
ops = st.builds(
    lambda op, path, value, has_value: {"op": op, "path": path, **({"value": value} if has_value else {})},
    st.sampled_from(["add", "replace", "test", "remove"]),
    st.sampled_from(PATHS),
    VALUES,
    st.booleans(),
)


@st.composite
def states(draw: Any, pack: Any) -> dict[str, Any]:
    """The pack's first state, now and then changed (sometimes so that it is no longer valid)."""
    state = initial_state(pack)
    for item in draw(st.lists(st.sampled_from(sorted(state["items"])), max_size=3)):
        state["items"][item] = draw(st.sampled_from(PLACES))
    if draw(st.booleans()):
        state["location"] = draw(st.sampled_from(PLACES))
    if draw(st.booleans()):
        state["stats"]["health"] = draw(VALUES)
    if draw(st.booleans()):
        state["flags"]["door_open"] = draw(st.sampled_from([True, False, 0, 1, None]))
    return state


def the_slow_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "_patched", lambda before, turn: None)
    monkeypatch.setattr(rules, "plainly_valid", lambda state, pack: False)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), patch=st.lists(ops, max_size=4), rule_set=st.sampled_from(sorted(rules.RULE_SETS)))
def test_a_turn_gets_the_same_verdict_the_quick_way_and_the_slow_way(pack, data, patch, rule_set):
    before = data.draw(states(pack))
    turn = {"narrative": "You take the brass lamp and walk to the Cliff Path.", "state_patch": patch}
    quick = judge_data(turn, before, pack, rules=rule_set)
    with pytest.MonkeyPatch.context() as monkeypatch:
        the_slow_way(monkeypatch)
        slow = judge_data(turn, before, pack, rules=rule_set)
    assert quick == slow
    if quick.after is not None:
        assert quick.after is not before and all(quick.after[s] is not before[s] for s in ("items", "stats", "flags"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_state_is_plainly_valid_only_when_its_model_accepts_it(pack, data):
    state = data.draw(states(pack))
    if data.draw(st.booleans()):
        section = data.draw(st.sampled_from(["items", "stats", "flags"]))
        state[section] = {**state[section], "extra": 1} if data.draw(st.booleans()) else {}
    accepted = True
    try:
        state_model(pack).model_validate(state)
    except ValueError:
        accepted = False
    assert plainly_valid(state, pack) == accepted
