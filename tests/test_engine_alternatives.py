"""Alternatives of the latest committed turn, as a player lives them: ask for another version,
browse the versions, choose one, keep playing; each version is a whole validated turn with its own
world, and choosing swaps prose and world together."""

from __future__ import annotations

import asyncio

import pytest

from storyloom.engine.events import AlternativeChosen, event_from_json
from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.state import initial_state, state_hash
from tests.conftest import Reply, collect, event_names, prose_on_screen, structured

TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
TAKE_KEY = [{"op": "replace", "path": "/items/key", "value": "player"}]
GO_NORTH = [{"op": "replace", "path": "/location", "value": "path"}]


async def test_another_version_streams_validates_and_becomes_the_chosen_one(pack, script):
    session, narrator = script(
        pack,
        structured("You lift the brass lamp.", TAKE_LAMP),
        structured("You leave the brass lamp where it lies.", []),
    )
    await collect(session.play("take lamp"))
    assert session.can_regenerate
    events = await collect(session.regenerate())
    assert events[0].event == "alternative_started"
    assert (events[0].turn, events[0].alternative, events[0].player_input) == (1, 2, "take lamp")
    assert "prose_delta" in event_names(events) and events[-1].event == "turn_committed"
    assert prose_on_screen(events) == "You leave the brass lamp where it lies."
    assert session.state == initial_state(pack)
    assert [x.turn.narrative for x in session.history] == ["You leave the brass lamp where it lies."]
    versions = session.versions
    assert versions is not None and versions.chosen == 2 and len(versions.alternatives) == 2
    request = narrator.requests[-1]
    assert request.alternative == 2 and request.earlier_versions == ("You lift the brass lamp.",)


async def test_another_version_is_judged_against_the_state_before_the_turn(pack, script):
    # The first version takes the lamp; a second that takes it again is judged against the shore
    # before the turn (lamp on the rocks), so it is valid there, never "already carried".
    session, narrator = script(
        pack,
        structured("You lift the brass lamp.", TAKE_LAMP),
        structured("You go north, up the Cliff Path.", GO_NORTH),
        structured("You pick up the brass lamp, warm from the sun.", TAKE_LAMP),
    )
    await collect(session.play("take lamp"))
    await collect(session.regenerate())
    assert session.state["location"] == "path" and session.state["items"]["lamp"] == "shore"
    events = await collect(session.regenerate())
    assert events[-1].event == "turn_committed" and "validation_failed" not in event_names(events)
    assert session.state == {**initial_state(pack), "items": {**initial_state(pack)["items"], "lamp": "player"}}
    assert narrator.requests[-1].state == initial_state(pack)
    assert narrator.requests[-1].history == ()


async def test_an_invalid_version_gets_corrections_within_the_budget_like_any_turn(pack, script):
    session, _ = script(
        pack,
        structured("You lift the brass lamp.", TAKE_LAMP),
        structured("You take the iron key.", TAKE_KEY),
        structured("You leave the lamp be.", []),
    )
    await collect(session.play("take lamp"))
    events = await collect(session.regenerate())
    assert event_names(events).count("correction_started") == 1
    assert events[-1].event == "turn_committed"
    assert session.versions is not None and session.versions.chosen == 2


async def test_choosing_swaps_state_and_history_together_and_never_asks_the_narrator(pack, script):
    session, narrator = script(
        pack,
        structured("You lift the brass lamp.", TAKE_LAMP),
        structured("You go north to the Cliff Path.", GO_NORTH),
        structured("You look about the Cliff Path.", []),
    )
    await collect(session.play("take lamp"))
    first = session.state
    await collect(session.regenerate())
    asked = len(narrator.requests)
    chosen = session.choose(1)
    assert isinstance(chosen, AlternativeChosen)
    assert (chosen.turn, chosen.alternative, chosen.alternatives) == (1, 1, 2)
    assert chosen.narrative == "You lift the brass lamp." and chosen.state == first
    assert chosen.state_hash == state_hash(first)
    assert session.state == first and [x.turn.narrative for x in session.history] == ["You lift the brass lamp."]
    assert len(narrator.requests) == asked
    assert event_from_json(chosen.to_json()) == chosen
    back = session.choose(2)
    assert (
        back is not None and back.narrative == "You go north to the Cliff Path." and session.state["location"] == "path"
    )
    assert session.choose(3) is None and session.choose(0) is None
    assert session.state["location"] == "path"


async def test_the_version_showing_when_the_next_command_is_played_counts_and_is_then_fixed(pack, script):
    session, narrator = script(
        pack,
        structured("You lift the brass lamp.", TAKE_LAMP),
        structured("You go north to the Cliff Path.", GO_NORTH),
        structured("You look around the shore, lamp in hand.", []),
    )
    await collect(session.play("take lamp"))
    await collect(session.regenerate())
    session.choose(1)
    await collect(session.play("look"))
    assert [x.turn.narrative for x in narrator.requests[-1].history] == ["You lift the brass lamp."]
    assert narrator.requests[-1].state["items"]["lamp"] == "player"
    versions = session.versions
    assert versions is not None and versions.turn == 2 and len(versions.alternatives) == 1
    assert session.undo() is not None  # turn 1 is the latest again: its versions come back, as they were
    assert session.versions is not None and session.versions.turn == 1 and session.versions.chosen == 1
    assert session.can_regenerate
    chosen = session.choose(2)
    assert chosen is not None and chosen.alternative == 2 and chosen.alternatives == 2
    assert session.state == session.versions.showing.state


async def test_undo_removes_the_turn_with_all_its_versions(pack, script):
    session, _ = script(
        pack, structured("You lift the brass lamp.", TAKE_LAMP), structured("You go north to the Cliff Path.", GO_NORTH)
    )
    await collect(session.play("take lamp"))
    await collect(session.regenerate())
    undone = session.undo()
    assert undone is not None and undone.state == initial_state(pack)
    assert session.state == initial_state(pack) and session.history == ()
    assert session.versions is None and session.showing() is None
    assert session.undo() is None


async def test_a_failed_version_leaves_the_chosen_one_committed_and_regenerating_again_retries_it(pack, script):
    bad = structured("You take the iron key.", TAKE_KEY)
    session, narrator = script(
        pack,
        structured("You lift the brass lamp.", TAKE_LAMP),
        bad,
        bad,
        structured("You go north to the Cliff Path.", GO_NORTH),
        budget=1,
    )
    await collect(session.play("take lamp"))
    kept, history = session.state, session.history
    events = await collect(session.regenerate())
    assert events[-1].event == "turn_failed"
    assert session.state == kept and session.history == history
    assert session.pending is None and session.can_regenerate
    with pytest.raises(RuntimeError):
        session.retry()  # a failed version is not a pending turn: regenerate again
    again = await collect(session.regenerate())
    assert again[0].alternative == 2 and again[-1].event == "turn_committed"
    assert session.versions is not None and len(session.versions.alternatives) == 2
    assert narrator.requests[-1].earlier_versions == ("You lift the brass lamp.",)


async def test_a_cancelled_version_leaves_the_chosen_one_committed(pack, script):
    session, narrator = script(
        pack,
        structured("You lift the brass lamp.", TAKE_LAMP),
        Reply(structured='{"narrative": "You turn from the lamp and', hang=True),
    )
    await collect(session.play("take lamp"))
    kept, history = session.state, session.history

    async def cancel_midway():
        events = []
        async for event in session.regenerate():
            events.append(event)
            if event.event == "prose_delta":
                session.cancel()
        return events

    events = await asyncio.wait_for(cancel_midway(), 2)
    assert events[-1].event == "turn_cancelled"
    assert session.state == kept and session.history == history and session.pending is None
    assert session.versions is not None and session.versions.chosen == 1 and not session.busy
    assert narrator.closed == 2


async def test_busy_refuses_choosing_and_another_regeneration(pack, script):
    session, _ = script(
        pack,
        structured("You lift the brass lamp.", TAKE_LAMP),
        Reply(structured='{"narrative": "You', hang=True),
    )
    await collect(session.play("take lamp"))
    stream = session.regenerate()
    first = await anext(stream)
    assert first.event == "alternative_started" and session.busy
    assert session.choose(1) is None and not session.can_regenerate
    with pytest.raises(RuntimeError):
        session.regenerate()
    session.cancel()
    rest = [e async for e in stream]
    assert rest[-1].event == "turn_cancelled"


async def test_nothing_to_regenerate_before_the_first_commit_or_after_a_failed_command(pack, script):
    session, _ = script(
        pack,
        structured("You lift the brass lamp.", TAKE_LAMP),
        structured("You take the iron key.", TAKE_KEY),
        budget=0,
    )
    with pytest.raises(RuntimeError):
        session.regenerate()
    await collect(session.play("take lamp"))
    failed = await collect(session.play("take key"))
    assert failed[-1].event == "turn_failed"
    assert not session.can_regenerate  # the next command was played: turn 1 is fixed
    assert session.pending is not None


async def test_a_version_that_reaches_an_ending_announces_it(pack, script):
    session, _ = script(
        pack,
        structured("You set the lamp down.", []),
        structured("You raise the brass lamp in the Lamp Room.", TAKE_LAMP),
    )
    tower = {**session.state, "location": "tower", "items": {**session.state["items"], "lamp": "tower"}}
    session.state = tower
    await collect(session.play("take lamp"))
    events = await collect(session.regenerate())
    assert event_names(events)[-2:] == ["turn_committed", "story_ended"]


def test_restoring_versions_checks_they_match_the_committed_state(pack):
    session = Session(pack, OfflineNarrator(pack))
    with pytest.raises(ValueError):
        from storyloom.engine.lifecycle import CommittedStory, Versions

        session.restore(CommittedStory(initial_state(pack), (), (), 0, Versions(1, (), 1)))
    with pytest.raises(ValueError):
        session.restore(CommittedStory(initial_state(pack), (), ((initial_state(pack), ()),), 1, Versions(1, (), 1)))


# the offline narrator ---------------------------------------------------------------------------


async def test_offline_versions_are_worded_differently_and_deterministic(pack):
    async def three_versions(seed: int) -> list[str]:
        session = Session(pack, OfflineNarrator(pack, seed=seed))
        await collect(session.play("look"))
        for _ in range(2):
            await collect(session.regenerate())
        assert session.versions is not None
        return [a.exchange.turn.narrative for a in session.versions.alternatives]

    first = await three_versions(7)
    assert len(set(first)) == 3
    assert await three_versions(7) == first


async def test_offline_versions_of_a_deed_sometimes_turn_out_otherwise(pack):
    session = Session(pack, OfflineNarrator(pack, seed=3))
    await collect(session.play("take lamp"))
    for _ in range(5):
        await collect(session.regenerate())
    assert session.versions is not None
    worlds = {state_hash(a.state) for a in session.versions.alternatives}
    assert len(worlds) == 2  # the lamp taken, or left where it lies
    for number in range(1, 7):
        chosen = session.choose(number)
        assert chosen is not None and chosen.state == session.state


async def test_a_failed_command_after_a_choice_retries_on_the_chosen_version(pack, script):
    session, narrator = script(
        pack,
        structured("You lift the brass lamp.", TAKE_LAMP),
        structured("You go north to the Cliff Path.", GO_NORTH),
        structured("You take the iron key.", TAKE_KEY),
        structured("You look at the lamp in your hand.", []),
        budget=0,
    )
    await collect(session.play("take lamp"))
    await collect(session.regenerate())
    session.choose(1)
    failed = await collect(session.play("take key"))
    assert failed[-1].event == "turn_failed" and session.pending is not None
    assert not session.can_regenerate and session.choose(2) is None
    retried = await collect(session.retry())
    assert retried[0].event == "turn_started" and retried[-1].event == "turn_committed"
    assert [x.turn.narrative for x in narrator.requests[-1].history] == ["You lift the brass lamp."]
    assert session.state["items"]["lamp"] == "player" and session.state["location"] == "shore"


async def test_a_regeneration_started_after_the_next_command_is_refused_and_the_session_stays_usable(pack, script):
    session, _ = script(
        pack, structured("You lift the brass lamp.", TAKE_LAMP), structured("You look at the lamp in your hand.", [])
    )
    await collect(session.play("take lamp"))
    late = session.regenerate()
    await collect(session.play("look"))
    with pytest.raises(RuntimeError):
        await anext(late)
    assert not session.busy and session.versions is not None and session.versions.turn == 2
