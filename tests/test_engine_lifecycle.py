"""The turn lifecycle as a player lives it: stream, correct, commit, fail, retry, cancel."""

from __future__ import annotations

import asyncio

from storyloom.engine.narration import NarratorRefusal, TransientNarratorError
from storyloom.engine.state import initial_state
from tests.conftest import Reply, collect, event_names, prose_on_screen, structured

TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
TAKE_KEY = [{"op": "replace", "path": "/items/key", "value": "player"}]


async def test_a_valid_turn_streams_its_prose_then_commits(pack, script):
    session, _ = script(pack, structured("You lift the brass lamp from the rocks.", TAKE_LAMP))
    events = await collect(session.play("take lamp"))
    assert event_names(events)[0] == "turn_started"
    assert event_names(events).count("prose_delta") > 3
    assert event_names(events)[-1] == "turn_committed"
    assert prose_on_screen(events) == "You lift the brass lamp from the rocks."
    assert session.state["items"]["lamp"] == "player"
    assert [x.player_input for x in session.history] == ["take lamp"]


async def test_malformed_then_corrected_keeps_the_prose_when_the_correction_omits_it(pack, script):
    session, narrator = script(
        pack,
        Reply(
            structured='{"narrative": "You lift the brass lamp.", '
            '"state_patch": [{"op": "replace", "path": "/items/lamp"'
        ),
        structured(None, TAKE_LAMP),
    )
    events = await collect(session.play("take lamp"))
    assert event_names(events)[-4:] == ["correction_started", "attempt_finished", "prose_replaced", "turn_committed"]
    failed = next(e for e in events if e.event == "validation_failed")
    assert failed.issues[0].rule == "output.json"
    replaced = next(e for e in events if e.event == "prose_replaced")
    assert replaced.changed is False
    assert prose_on_screen(events) == "You lift the brass lamp."
    assert session.state["items"]["lamp"] == "player"
    correction = narrator.requests[1].correction
    assert correction is not None and correction.issues == failed.issues


async def test_a_correction_that_rewrites_the_prose_swaps_it_in_one_event(pack, script):
    session, _ = script(
        pack,
        structured("You take it.", TAKE_LAMP),
        structured("You take the lantern, warm from the sun.", TAKE_LAMP),
    )
    events = await collect(session.play("take lamp"))
    swaps = [e for e in events if e.event == "prose_replaced"]
    assert len(swaps) == 1 and swaps[0].changed
    after_correction = events[events.index(swaps[0]) - 2 :]
    assert "prose_delta" not in event_names(after_correction)
    assert prose_on_screen(events) == "You take the lantern, warm from the sun."
    assert events[-1].narrative == "You take the lantern, warm from the sun."


async def test_an_exhausted_budget_fails_without_touching_state_then_retry_succeeds(pack, script):
    bad = structured("You take the iron key.", TAKE_KEY)
    session, narrator = script(pack, bad, bad, bad, structured("You take the brass lamp.", TAKE_LAMP), budget=2)
    before = session.state
    events = await collect(session.play("take key"))
    assert event_names(events).count("correction_started") == 2
    assert [e.correction for e in events if e.event == "correction_started"] == [1, 2]
    assert events[-1].event == "turn_failed"
    assert events[-1].issues[0].rule == "item.take_reach"
    assert session.state == before and session.history == ()
    retried = await collect(session.retry())
    assert retried[0].event == "turn_started" and retried[0].retry == 1 and retried[0].turn == events[0].turn
    assert retried[-1].event == "turn_committed"
    assert session.state["items"]["lamp"] == "player"
    assert narrator.requests[-1].correction is None


async def test_a_correction_carries_only_the_latest_rejection(pack, script):
    first = structured("You take the iron key.", TAKE_KEY)
    second = structured("You take the boulder.", [{"op": "replace", "path": "/items/boulder", "value": "player"}])
    session, narrator = script(pack, first, second, structured("You take the lamp.", TAKE_LAMP), budget=2)
    await collect(session.play("take something"))
    third = narrator.requests[2]
    assert third.correction.raw == second.structured
    assert {i.rule for i in third.correction.issues} == {"item.not_portable"}
    assert third.history == ()


async def test_a_plain_text_reply_gets_the_corrective_request_then_commits(pack, script):
    session, narrator = script(
        pack, Reply(text="I think the player takes the lamp."), structured("You take the lamp.", TAKE_LAMP)
    )
    events = await collect(session.play("take lamp"))
    failed = next(e for e in events if e.event == "validation_failed")
    assert [i.rule for i in failed.issues] == ["output.missing"]
    assert narrator.requests[1].correction.missing_output
    assert narrator.requests[1].correction.text == "I think the player takes the lamp."
    assert events[-1].event == "turn_committed"
    assert prose_on_screen(events) == "You take the lamp."


async def test_a_zero_budget_fails_at_the_first_invalid_attempt(pack, script):
    session, _ = script(pack, structured("You take the iron key.", TAKE_KEY), budget=0)
    events = await collect(session.play("take key"))
    assert "correction_started" not in event_names(events)
    assert events[-1].event == "turn_failed"


async def _play_until(session, text, stop_at, on_stop):
    events = []
    async for event in session.play(text):
        events.append(event)
        if event.event == stop_at:
            on_stop()
    return events


async def test_cancel_while_streaming_closes_the_stream_and_keeps_state(pack, script):
    session, narrator = script(pack, Reply(structured='{"narrative": "You reach for the lamp and', hang=True))
    before = session.state
    events = await asyncio.wait_for(_play_until(session, "take lamp", "prose_delta", session.cancel), 2)
    assert events[-1].event == "turn_cancelled"
    assert narrator.closed == 1
    assert session.state == before and session.history == ()
    assert session.pending is not None and session.pending.player_input == "take lamp"


async def test_cancel_during_correction_keeps_state_and_history(pack, script):
    session, narrator = script(
        pack, structured("You take it.", TAKE_LAMP), Reply(structured='{"state_patch": [', hang=True)
    )

    def cancel_once_the_correction_streams():
        asyncio.get_running_loop().call_later(0.05, session.cancel)

    events = await asyncio.wait_for(
        _play_until(session, "take lamp", "correction_started", cancel_once_the_correction_streams), 2
    )
    assert event_names(events)[-2:] == ["correction_started", "turn_cancelled"]
    assert len(narrator.requests) == 2 and narrator.closed == 2
    assert session.state == initial_state(pack) and session.history == ()
    assert not session.busy


async def test_failed_and_cancelled_attempts_never_reach_later_requests(pack, script):
    session, narrator = script(
        pack,
        structured("You take the iron key.", TAKE_KEY),
        structured("You take the brass lamp.", TAKE_LAMP),
        structured("You look at the sea.", []),
        budget=0,
    )
    await collect(session.play("take key"))
    await _play_until(session, "wait", "turn_started", session.cancel)
    await collect(session.play("take lamp"))
    await collect(session.play("look"))
    assert [x.player_input for x in narrator.requests[-1].history] == ["take lamp"]


async def test_a_transient_fault_is_retried_without_spending_the_budget(pack, script):
    session, narrator = script(
        pack,
        Reply(structured='{"narrative": "You rea', raise_after=TransientNarratorError("overloaded", retry_after=4)),
        structured("You take the brass lamp.", TAKE_LAMP),
        budget=0,
    )
    events = await collect(session.play("take lamp"))
    retrying = next(e for e in events if e.event == "narrator_retrying")
    assert retrying.delay == 4
    assert events[-1].event == "turn_committed"
    assert prose_on_screen(events) == "You take the brass lamp."


async def test_a_refusal_fails_the_turn_at_once(pack, script):
    session, narrator = script(pack, Reply(raise_after=NarratorRefusal("The model declined this turn.")), budget=2)
    events = await collect(session.play("take lamp"))
    assert events[-1].event == "turn_failed"
    assert events[-1].issues[0].rule == "narrator.refusal"
    assert len(narrator.requests) == 1


async def test_a_reply_cut_at_the_token_limit_asks_for_a_shorter_turn(pack, script):
    session, _ = script(
        pack,
        Reply(structured='{"narrative": "You walk and walk', stop_reason="max_tokens"),
        structured("You wait.", []),
    )
    events = await collect(session.play("wait"))
    failed = next(e for e in events if e.event == "validation_failed")
    assert failed.issues[0].rule == "output.truncated"
    assert events[-1].event == "turn_committed"


async def test_reaching_an_ending_is_announced_once(pack, script):
    session, _ = script(pack, structured("You raise the brass lamp in the Lamp Room.", TAKE_LAMP))
    session.state = {**session.state, "location": "tower", "items": {**session.state["items"], "lamp": "tower"}}
    events = await collect(session.play("take lamp"))
    assert events[-1].event == "story_ended" and events[-1].ending == "lit"


async def test_undo_restores_the_previous_committed_state(pack, script):
    session, narrator = script(pack, structured("You take the brass lamp.", TAKE_LAMP), structured("You look.", []))
    await collect(session.play("take lamp"))
    undone = session.undo()
    assert undone is not None and session.state == initial_state(pack) and session.history == ()
    assert session.undo() is None
    await collect(session.play("look"))
    assert narrator.requests[-1].history == ()


async def test_event_json_round_trips(pack, script):
    from storyloom.engine.events import event_from_json

    session, _ = script(pack, structured("You take it.", TAKE_LAMP), structured("You take the lamp.", TAKE_LAMP))
    for event in await collect(session.play("take lamp")):
        assert event_from_json(event.to_json()).to_json() == event.to_json()


async def test_a_rejected_correction_never_reaches_the_screen_and_the_commit_swaps_once(pack, script):
    session, narrator = script(
        pack,
        structured("You take it.", TAKE_LAMP),
        structured("You take the brass lamp, not the iron key.", TAKE_KEY),
        structured(None, TAKE_LAMP),
    )
    events = await collect(session.play("take lamp"))
    swaps = [e for e in events if e.event == "prose_replaced"]
    assert len(swaps) == 1 and swaps[0].changed
    assert prose_on_screen(events) == "You take the brass lamp, not the iron key." == events[-1].narrative
    assert narrator.requests[2].kept_narrative == "You take the brass lamp, not the iron key."


async def test_a_failed_turn_keeps_the_first_attempts_prose_on_screen(pack, script):
    session, _ = script(
        pack, structured("You take it.", TAKE_LAMP), structured("You grab the iron key.", TAKE_KEY), budget=1
    )
    events = await collect(session.play("take lamp"))
    assert events[-1].event == "turn_failed"
    assert "prose_replaced" not in event_names(events)
    assert prose_on_screen(events) == "You take it."


async def test_a_patch_operation_without_op_names_the_missing_field(pack):
    from storyloom.engine.rules import judge
    from storyloom.engine.state import initial_state

    verdict = judge(
        '{"narrative": "Hi.", "state_patch": [{"path": "/location", "value": "path"}]}', initial_state(pack), pack
    )
    assert verdict.issues[0].path == "/state_patch/0/op"
    assert verdict.issues[0].message.startswith("op is required in /state_patch/0")
