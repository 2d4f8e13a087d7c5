"""The judge applies a state patch exactly as `jsonpatch` does: the same state, or the same refusal.

`engine.rules.apply_patch` applies add, replace, remove and test on the state's leaves
directly and leaves anything else to jsonpatch; these properties hold it to jsonpatch on
states and patches far stranger than any narrator sends.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.rules import apply_patch

keys = st.sampled_from(["rope", "lamp", "oil", "door", "", "-", "0", "a/b", "a~b"])
scalars = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([0.0, 1.0, -0.0]) | st.sampled_from(
    ["shore", "player", "nowhere", ""])
values = scalars | st.lists(scalars, max_size=2) | st.dictionaries(keys, scalars, max_size=2)
states = st.fixed_dictionaries({
    "location": scalars,
    "items": st.dictionaries(keys, values, max_size=4),
    "stats": st.dictionaries(keys, scalars, max_size=3) | scalars,
    "flags": st.dictionaries(keys, scalars, max_size=3),
})
leaf_paths = st.builds(lambda section, key: f"/{section}/{key}", st.sampled_from(["items", "stats", "flags"]), keys)
odd_paths = st.one_of(
    st.builds(lambda section, key: f"/{section}/{key}", st.sampled_from(["nope", "location"]), keys),
    st.sampled_from(["/items/a~1b", "/items/a~0b", "/items/x~2", "/flags/~", "", "/", "/items", "items/rope",
                     "/items/rope/x", "//rope"]),
)
paths = st.sampled_from(["/location"]) | leaf_paths | leaf_paths | odd_paths
ops = st.builds(lambda op, path, value, keep: {"op": op, "path": path, **({"value": value} if keep else {})},
                st.sampled_from(["add", "replace", "remove", "test", "move"]), paths, values,
                st.sampled_from([True, True, True, False]))  # mostly with a value


def _jsonpatch(patch: list[dict[str, Any]], state: dict[str, Any]) -> Any:
    try:
        return jsonpatch.JsonPatch(patch).apply(copy.deepcopy(state))
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
        return type(exc), str(exc)


def _ours(patch: list[dict[str, Any]], state: dict[str, Any]) -> Any:
    try:
        return apply_patch(patch, state)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
        return type(exc), str(exc)


@settings(max_examples=1000)
@given(states, st.lists(ops, min_size=1, max_size=4))
def test_a_patch_leads_to_the_state_jsonpatch_gives_or_fails_with_its_error(state: dict[str, Any],
                                                                             patch: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(state)
    expected = _jsonpatch(patch, state)
    got = _ours(patch, state)
    assert repr(got) == repr(expected)
    assert state == before and repr(state) == repr(before)  # the state judged from is never changed
    if isinstance(got, dict):  # a list or object the patch adds is a copy: later edits cannot reach the patch
        added = {id(op["value"]) for op in patch if isinstance(op.get("value"), list | dict)}
        leaves = [got.get("location"), *(v for section in got.values() if isinstance(section, dict)
                                         for v in section.values())]
        assert not any(id(leaf) in added for leaf in leaves if isinstance(leaf, list | dict))


def test_a_failed_test_op_is_jsonpatchs_refusal() -> None:
    state = {"location": "shore", "items": {"rope": "shore"}, "stats": {"oil": 1}, "flags": {"lit": False}}
    patch = [{"op": "replace", "path": "/items/rope", "value": "player"},
             {"op": "test", "path": "/location", "value": "cottage"}]
    result = _ours(patch, state)
    assert result[0] is jsonpatch.JsonPatchTestFailed and state["items"]["rope"] == "shore"
    for flag_test in ({"op": "test", "path": "/stats/oil", "value": True}, {"op": "test", "path": "/flags/lit", "value": 0}):
        assert _ours([flag_test], state)[0] is jsonpatch.JsonPatchTestFailed  # true is not 1, false is not 0
