"""Whatever a model sends, the committed state only ever changes by a turn that passes every rule."""

from __future__ import annotations

import asyncio
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import event as note_outcome
from hypothesis import strategies as st

from storyloom.engine.lifecycle import Session
from storyloom.engine.rules import judge
from storyloom.engine.state import initial_state, state_model
from tests.conftest import Reply, ScriptedNarrator

NARRATIVES = [
    "You wait.",
    "You take the brass lamp.",
    "You walk north to the Cliff Path.",
    "You take the iron key.",
    "You climb to the Lamp Room.",
    "You lift the boulder.",
    "Back on the Rocky Shore, you drop the lantern.",
    "",
]
PLACES = ["shore", "path", "tower", "player", "nowhere", "moon", 3, None]
VALUES = st.one_of(st.sampled_from(PLACES), st.integers(-3, 14), st.booleans(), st.text(max_size=4))

ops = st.one_of(
    st.builds(lambda v: {"op": "replace", "path": "/location", "value": v}, st.sampled_from(PLACES)),
    st.builds(
        lambda i, v: {"op": "replace", "path": f"/items/{i}", "value": v},
        st.sampled_from(["lamp", "key", "boulder", "sword"]),
        st.sampled_from(PLACES),
    ),
    st.builds(lambda v: {"op": "replace", "path": "/stats/health", "value": v}, VALUES),
    st.builds(lambda v: {"op": "add", "path": "/flags/door_open", "value": v}, VALUES),
    st.builds(
        lambda p, o: {"op": o, "path": p},
        st.sampled_from(["/items/lamp", "/stats", "/x", ""]),
        st.sampled_from(["remove", "move", "copy"]),
    ),
    st.builds(lambda v: {"op": "test", "path": "/location", "value": v}, st.sampled_from(PLACES)),
)


@st.composite
def replies(draw):
    turn = {"narrative": draw(st.sampled_from(NARRATIVES)), "state_patch": draw(st.lists(ops, max_size=4))}
    if draw(st.booleans()):
        del turn["narrative"]
    text = json.dumps(turn)
    kind = draw(st.sampled_from(["whole", "whole", "whole", "cut", "garbage", "plain", "other"]))
    if kind == "cut":
        return Reply(structured=text[: draw(st.integers(0, len(text) - 1))])
    if kind == "garbage":
        return Reply(structured=draw(st.text(max_size=40)))
    if kind == "plain":
        return Reply(text=draw(st.text(max_size=40)))
    if kind == "other":
        return Reply(structured=json.dumps(draw(st.one_of(st.integers(), st.lists(st.integers()), st.none()))))
    return Reply(structured=text)


def satisfies_every_rule(state, pack) -> bool:
    state_model(pack).model_validate(state)
    return all(pack.stats[s].min <= v <= pack.stats[s].max for s, v in state["stats"].items())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    plan=st.lists(replies(), min_size=1, max_size=12),
    budget=st.integers(0, 2),
    cancel_at=st.one_of(st.none(), st.integers(0, 30)),
)
def test_arbitrary_outputs_never_commit_an_invalid_state(pack, plan, budget, cancel_at):
    async def play() -> None:
        narrator = ScriptedNarrator(list(plan), chunk=5)
        session = Session(pack, narrator, budget=budget)
        seen = 0
        while narrator.replies:
            before, history = session.state, session.history
            last = None
            async for event in session.play("do something"):
                seen += 1
                if cancel_at is not None and seen == cancel_at:
                    session.cancel()
                last = event
            assert satisfies_every_rule(session.state, pack)
            note_outcome(last.event)
            if last.event in ("turn_failed", "turn_cancelled"):
                assert session.state == before and session.history == history
            else:
                committed = session.history[-1].turn
                again = judge(json.dumps(committed.to_json()), before, pack)
                assert again.ok and again.after == session.state

    asyncio.run(play())
    assert satisfies_every_rule(initial_state(pack), pack)
