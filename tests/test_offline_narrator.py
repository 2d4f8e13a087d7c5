"""The offline narrator plays a classic adventure over any pack, deterministically and by the rules."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from storyloom.engine.events import ProseDelta, TurnCancelled, TurnCommitted, ValidationFailed
from storyloom.engine.lifecycle import Session
from storyloom.engine.narration import Finish, NarrationRequest, StructuredDelta
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.engine.rules import judge, names
from storyloom.engine.state import initial_state

PACKS = Path(__file__).parent / "packs"
WALKS = Path(__file__).parent / "walkthroughs"


@pytest.fixture
def cellar():
    return load_pack(PACKS / "example.toml")


def commands(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


async def play(session: Session, *lines: str) -> list:
    events = []
    for line in lines:
        events += [e async for e in session.play(line)]
    return events


def committed(events: list) -> list[TurnCommitted]:
    return [e for e in events if isinstance(e, TurnCommitted)]


def turn_for(pack, state, line: str, seed: int = 0) -> dict:
    """The narrator's first answer to a line, judged like the engine judges it; must pass as is."""
    narrator = OfflineNarrator(pack, seed=seed)
    output = narrator.respond(NarrationRequest(pack, state, (), line, turn=1))
    verdict = judge(output.structured, state, pack)
    assert verdict.ok, verdict.issues
    return {"turn": verdict.turn, "after": verdict.after}


async def test_the_same_pack_seed_and_inputs_give_byte_identical_events():
    pack = load_pack("lighthouse")
    lines = commands(WALKS / "lighthouse.txt")

    async def run() -> list[str]:
        session = Session(pack, OfflineNarrator(pack, seed=11, faults=0.5))
        return [json.dumps(e.to_json()) for e in await play(session, *lines)]

    first, second = await run(), await run()
    assert first == second
    assert any('"validation_failed"' in line for line in first)  # the faults were part of what repeated


async def test_a_different_seed_tells_the_same_story_in_other_words(cellar):
    openings = set()
    for seed in range(12):
        session = Session(cellar, OfflineNarrator(cellar, seed=seed))
        [event] = committed(await play(session, "look"))
        openings.add(event.narrative.split(".")[0])
        assert event.state == initial_state(cellar)
    assert len(openings) >= 3


@pytest.mark.parametrize("line", ["look", "l", "look around", "LOOK"])
def test_look_names_the_room_what_lies_in_it_and_the_ways_out(cellar, line):
    result = turn_for(cellar, initial_state(cellar), line)
    text = result["turn"].narrative
    assert "Kitchen" in text and "candle" in text and "brass key" in text and "east" in text
    assert result["turn"].state_patch == []


@pytest.mark.parametrize(
    "line", ["examine the key", "x key", "Examine The BRASS KEY", "look at the key", "inspect key"]
)
def test_examine_describes_an_item_by_name_or_alias_in_any_case(cellar, line):
    text = turn_for(cellar, initial_state(cellar), line)["turn"].narrative
    assert "warm from the hook" in text


def test_examining_something_not_here_changes_nothing(cellar):
    result = turn_for(cellar, initial_state(cellar), "examine the jar")
    assert "jar" in result["turn"].narrative and result["turn"].state_patch == []


@pytest.mark.parametrize("line", ["east", "e", "go east", "walk east", "go to the hall", "go to back hall", "go hall"])
def test_going_moves_along_an_exit_and_names_the_new_room(cellar, line):
    result = turn_for(cellar, initial_state(cellar), line)
    assert result["after"]["location"] == "hall"
    assert names(result["turn"].narrative, ["Back Hall", "hall"])


@pytest.mark.parametrize("line", ["north", "n", "go west", "u", "go to the cellar"])
def test_a_way_that_does_not_exist_is_refused_in_story(cellar, line):
    result = turn_for(cellar, initial_state(cellar), line)
    assert result["after"]["location"] == "kitchen"
    assert result["turn"].narrative


def test_a_gated_exit_is_shut_until_its_flag_is_true(cellar):
    hall = {**initial_state(cellar), "location": "hall"}
    shut = turn_for(cellar, hall, "down")
    assert shut["after"]["location"] == "hall"
    assert "shut" in shut["turn"].narrative or "closed" in shut["turn"].narrative
    opened = {**hall, "flags": {**hall["flags"], "cellar_open": True}}
    assert turn_for(cellar, opened, "d")["after"]["location"] == "cellar"


@pytest.mark.parametrize(
    "line",
    ["take candle", "get the candle", "pick up the candle", "pick the candle up", "grab stub", "take stub of candle"],
)
def test_take_puts_an_item_in_the_pocket_and_names_it(cellar, line):
    result = turn_for(cellar, initial_state(cellar), line)
    assert result["after"]["items"]["candle"] == "player"
    assert names(result["turn"].narrative, cellar.item_words("candle"))


def test_take_all_takes_every_portable_thing_here(cellar):
    after = turn_for(cellar, initial_state(cellar), "take all")["after"]
    assert after["items"] == {**initial_state(cellar)["items"], "candle": "player", "key": "player"}


@pytest.mark.parametrize("line", ["take table", "take the jar", "take unicorn", "take"])
def test_what_cannot_be_taken_is_refused_without_a_change(cellar, line):
    result = turn_for(cellar, initial_state(cellar), line)
    assert result["turn"].state_patch == []
    assert result["turn"].narrative


@pytest.mark.parametrize("line", ["drop candle", "put down the candle", "put the candle down", "discard candle"])
def test_drop_leaves_a_carried_item_in_the_room(cellar, line):
    state = initial_state(cellar)
    state = {**state, "location": "hall", "items": {**state["items"], "candle": "player"}}
    result = turn_for(cellar, state, line)
    assert result["after"]["items"]["candle"] == "hall"
    assert names(result["turn"].narrative, cellar.item_words("candle"))


def test_dropping_what_you_do_not_carry_changes_nothing(cellar):
    assert turn_for(cellar, initial_state(cellar), "drop key")["turn"].state_patch == []


@pytest.mark.parametrize("line", ["inventory", "i", "inv"])
def test_inventory_lists_what_is_carried(cellar, line):
    state = initial_state(cellar)
    empty = turn_for(cellar, state, line)["turn"].narrative
    carrying = turn_for(cellar, {**state, "items": {**state["items"], "key": "player"}}, line)["turn"].narrative
    assert "brass key" not in empty and "brass key" in carrying


def test_use_runs_the_packs_action_where_it_applies(cellar):
    state = initial_state(cellar)
    state = {**state, "location": "hall", "items": {**state["items"], "key": "player"}}
    result = turn_for(cellar, state, "use the key")
    assert result["after"]["flags"]["cellar_open"] is True
    assert "cellar door" in result["turn"].narrative
    elsewhere = turn_for(cellar, {**state, "location": "kitchen"}, "use key")
    assert elsewhere["turn"].state_patch == []


def test_open_and_close_work_through_the_packs_actions(cellar):
    state = initial_state(cellar)
    hall = {**state, "location": "hall", "items": {**state["items"], "key": "player"}}
    opened = turn_for(cellar, hall, "open door")["after"]
    assert opened["flags"]["cellar_open"] is True
    closed = turn_for(cellar, opened, "shut the cellar door")["after"]
    assert closed["flags"]["cellar_open"] is False
    again = turn_for(cellar, closed, "close door")
    assert again["turn"].state_patch == [] and again["turn"].narrative


def test_an_action_whose_requirement_fails_gives_the_packs_refusal(cellar):
    hall = {**initial_state(cellar), "location": "hall"}
    result = turn_for(cellar, hall, "open the door")
    assert result["turn"].narrative == cellar.actions["open_door"].refusal
    assert result["turn"].state_patch == []


def test_an_action_changes_stats_within_their_bounds(cellar):
    state = initial_state(cellar)
    state = {**state, "items": {**state["items"], "candle": "player"}, "stats": {"courage": 4}}
    after = turn_for(cellar, state, "light candle")["after"]
    assert after["stats"]["courage"] == 5 and after["flags"]["candle_lit"] is True


@pytest.mark.parametrize("line", ["open the table", "use table", "close key", "use"])
def test_open_close_and_use_without_a_matching_action_change_nothing(cellar, line):
    result = turn_for(cellar, initial_state(cellar), line)
    assert result["turn"].state_patch == [] and result["turn"].narrative


@pytest.mark.parametrize("line", ["wait", "z", "help", "?"])
def test_wait_and_help_answer_without_changing_the_world(cellar, line):
    result = turn_for(cellar, initial_state(cellar), line)
    assert result["turn"].state_patch == [] and len(result["turn"].narrative) > 10


@pytest.mark.parametrize("line", ["dance wildly", "xyzzy", "", "   ", "!!!", "eat the moon", "go", "take the " * 50])
def test_input_it_cannot_act_on_gets_an_in_story_reply_and_no_change(cellar, line):
    result = turn_for(cellar, initial_state(cellar), line)
    assert result["turn"].state_patch == [] and result["turn"].narrative


def test_suggestions_are_at_most_four_short_next_actions(cellar):
    turn = turn_for(cellar, initial_state(cellar), "look")["turn"]
    assert 1 <= len(turn.suggestions) <= 4
    assert "go east" in turn.suggestions and "take candle" in turn.suggestions


async def test_the_turn_streams_in_small_deltas_on_a_virtual_clock(cellar):
    narrator = OfflineNarrator(cellar, pace=0.001)
    request = NarrationRequest(cellar, initial_state(cellar), (), "look", turn=1)
    chunks = [c async for c in narrator.narrate(request)]
    deltas = [c for c in chunks if isinstance(c, StructuredDelta)]
    assert isinstance(chunks[-1], Finish) and len(deltas) > 20
    assert all(len(d.text.strip()) <= 8 for d in deltas)
    assert [d.at_ms for d in deltas] == [round(i * 1) for i in range(len(deltas))]
    assert json.loads("".join(d.text for d in deltas))["narrative"].startswith(("Kitchen", "You", "A warm"))


async def test_cancelling_while_it_waits_between_chunks_stops_it_at_once(cellar):
    narrator = OfflineNarrator(cellar, pace=3600.0)
    stream = narrator.narrate(NarrationRequest(cellar, initial_state(cellar), (), "look", turn=1))
    assert isinstance(await anext(stream), StructuredDelta)
    waiting = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await stream.aclose()


async def test_the_engine_cancelling_a_turn_commits_nothing(cellar):
    session = Session(cellar, OfflineNarrator(cellar))
    events = []
    async for event in session.play("take candle"):
        events.append(event)
        if isinstance(event, ProseDelta):
            session.cancel()
    assert isinstance(events[-1], TurnCancelled)
    assert session.state == initial_state(cellar) and not session.busy


async def test_a_whole_story_plays_without_a_single_rejected_turn():
    pack = load_pack("lighthouse")
    session = Session(pack, OfflineNarrator(pack, seed=5))
    events = await play(session, *commands(WALKS / "lighthouse.txt"))
    assert not [e for e in events if isinstance(e, ValidationFailed)]
    assert len(committed(events)) == len(commands(WALKS / "lighthouse.txt"))


def test_the_narrator_rejects_a_fault_rate_outside_zero_to_one(cellar):
    with pytest.raises(ValueError):
        OfflineNarrator(cellar, faults=1.5)
    with pytest.raises(ValueError, match="unknown fault kind"):
        OfflineNarrator(cellar, fault_kinds=["gremlins"])


def test_it_is_built_by_the_settings_with_its_pace(cellar):
    from storyloom.tui.session import create_narrator
    from storyloom.tui.settings import Settings

    narrator = create_narrator(Settings(seed=4, faults=0.25), cellar, interactive=True)
    assert isinstance(narrator, OfflineNarrator)
    assert (narrator.name, narrator.model, narrator.seed, narrator.faults) == ("offline", "offline-1", 4, 0.25)
    assert narrator.pace > 0 and narrator.correction_delay > narrator.pace
    assert create_narrator(Settings(), cellar, interactive=False).correction_delay == 0


@pytest.mark.parametrize(("line", "expected"), [("enter the hall", "hall"), ("go into the back hall", "hall")])
def test_enter_moves_into_a_named_room(cellar, line, expected):
    assert turn_for(cellar, initial_state(cellar), line)["after"]["location"] == expected


def test_looking_along_an_exit_names_where_it_leads_without_moving(cellar):
    result = turn_for(cellar, initial_state(cellar), "look east")
    assert "Back Hall" in result["turn"].narrative and result["turn"].state_patch == []
    assert turn_for(cellar, initial_state(cellar), "look north")["turn"].state_patch == []


def test_examining_yourself_lists_what_you_carry(cellar):
    state = initial_state(cellar)
    text = turn_for(cellar, {**state, "items": {**state["items"], "key": "player"}}, "examine me")["turn"].narrative
    assert "brass key" in text


@pytest.mark.parametrize("line", ["go in", "in", "enter", "walk in"])
def test_in_and_out_are_directions(line):
    pack = load_pack("lighthouse")
    yard = {**initial_state(pack), "location": "yard", "flags": {**initial_state(pack)["flags"], "door_unlocked": True}}
    assert turn_for(pack, yard, line)["after"]["location"] == "stair"


_CELLAR = load_pack(PACKS / "example.toml")
_VOCABULARY = [
    "look",
    "x",
    "take",
    "get",
    "pick",
    "up",
    "drop",
    "go",
    "to",
    "the",
    "a",
    "use",
    "open",
    "close",
    "light",
    "i",
    "wait",
    "help",
    "n",
    "e",
    "w",
    "down",
    "in",
    "out",
    "all",
    "me",
    "north",
    *[w for i in _CELLAR.items for w in _CELLAR.item_words(i)],
    *[r.name for r in _CELLAR.rooms.values()],
]


def _states():
    from hypothesis import strategies as st

    places = st.sampled_from([*_CELLAR.rooms, "player", "nowhere"])
    return st.builds(
        lambda loc, items, flags, courage: {
            "location": loc,
            "items": items,
            "flags": flags,
            "stats": {"courage": courage},
        },
        st.sampled_from(list(_CELLAR.rooms)),
        st.fixed_dictionaries({i: places for i in _CELLAR.items}),
        st.fixed_dictionaries({f: st.booleans() for f in _CELLAR.flags}),
        st.integers(0, 5),
    )


def test_any_input_in_any_state_gets_a_turn_the_rules_accept():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    lines = st.one_of(st.text(max_size=40), st.lists(st.sampled_from(_VOCABULARY), max_size=5).map(" ".join))

    @settings(max_examples=300, deadline=None)
    @given(state=_states(), line=lines, seed=st.integers(0, 3))
    def check(state, line, seed):
        turn_for(_CELLAR, state, line, seed=seed)

    check()


def test_items_are_also_known_by_their_id():
    pack = load_pack("lighthouse")
    shed = {**initial_state(pack), "location": "shed"}
    assert turn_for(pack, shed, "take oilcan")["after"]["items"]["oilcan"] == "player"


@pytest.mark.parametrize("story", ["lighthouse", "glasshouse", str(PACKS / "example.toml")])
def test_help_suggests_only_commands_that_work_on_this_storys_own_things(story):
    """Every command `help` offers, in every room, is understood and names what this story has."""
    from storyloom.engine.narrators.offline.parse import matching_actions, parse

    pack = load_pack(story)
    directions = {d for room in pack.rooms.values() for d in room.exits}
    for room in pack.rooms:
        state = {**initial_state(pack), "location": room}
        text = turn_for(pack, state, "help")["turn"].narrative
        offered = [c for group in re.findall(r"\(([^)]*)\)", text) for c in group.split(", ")]
        assert len(offered) >= 8, text
        for line in offered:
            command = parse(line, pack)
            assert command.verb != "unknown", (room, line)
            if command.verb == "go":
                assert command.direction in directions, (room, line)
            elif command.verb in ("examine", "take", "drop"):
                assert command.items and set(command.items) <= set(pack.items), (room, line)
            elif command.verb not in ("look", "inventory", "wait"):
                assert command.items and matching_actions(command, pack), (room, line)
