"""Reading an event checks all its fields in one call; it refuses exactly what a check per field refuses.

A save is a file anyone can edit, so `event_from_json` checks every field strictly; the
one-call check (`_event_check`) must agree with the per-field checks (`_field_checks`)
on every input, or a doctored save could slip through (or a sound one be refused).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from storyloom.engine.events import EVENT_TYPES, _event_check, _field_checks, _field_names, event_from_json
from storyloom.engine.turns import Issue

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=5)
    | st.builds(Issue, st.text(max_size=3), st.text(max_size=3), st.text(max_size=3))
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=3)
    ),
    max_leaves=8,
)


def _passes(check: Any, value: Any) -> bool:
    try:
        check.validate_python(value, strict=True)
    except ValidationError:
        return False
    return True


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # drawing is slow on a busy 2-core machine
@given(st.sampled_from(sorted(EVENT_TYPES)), st.data())
def test_the_one_call_check_refuses_exactly_what_the_per_field_checks_refuse(kind: str, data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(_field_names(kind)), unique=True))
    kwargs = {name: data.draw(values, label=name) for name in names}
    per_field = all(_passes(_field_checks(kind)[name], value) for name, value in kwargs.items())
    assert _passes(_event_check(kind), kwargs) == per_field


def test_a_field_of_the_wrong_type_is_named_in_the_refusal() -> None:
    try:
        event_from_json({"event": "turn_started", "turn": 1, "attempt": "1", "player_input": "look"})
    except ValueError as exc:
        assert "attempt" in str(exc)
    else:
        raise AssertionError("a text attempt number was accepted")
    event = event_from_json(
        {
            "event": "attempt_finished",
            "turn": 2,
            "attempt": 1,
            "kind": "turn",
            "raw": None,
            "deltas": [[0, "s", "{"]],
            "issues": [{"path": "", "rule": "r", "message": "m"}],
        }
    )
    assert event.deltas == ((0, "s", "{"),) and event.issues == (Issue("", "r", "m"),)
