"""The story's own rules bind every narrator: a model cannot skip a puzzle by asking.

Each test plays a real `Session` with a model double (a scripted narrator answering as an
agreeable model would) and checks what the player would see: the cheat refused with a
correction that names the action and what it still needs, the corrected turn committed,
and no ending reached by one sentence.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from random import Random

import pytest

from storyloom.engine.events import StoryEnded, TurnCommitted, TurnFailed, ValidationFailed
from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline.world import write_turn
from storyloom.engine.packs import load_pack, parse_pack
from storyloom.engine.rules import judge
from storyloom.engine.state import initial_state
from tests.conftest import Reply, ScriptedNarrator, structured

WALKS = Path(__file__).parent / "walkthroughs"
PACKS = Path(__file__).parent / "packs"


def lighthouse_state(**changes):
    """The Lighthouse's opening state with some parts set (location, items, flags, stats)."""
    pack = load_pack("lighthouse")
    state = copy.deepcopy(initial_state(pack))
    for section, values in changes.items():
        if section == "location":
            state["location"] = values
        else:
            state[section].update(values)
    return pack, state


def replace(path, value):
    return {"op": "replace", "path": path, "value": value}


async def played(pack, state, command, *replies: Reply, budget: int = 2):
    narrator = ScriptedNarrator(list(replies))
    session = Session(pack, narrator, budget=budget, state=state)
    events = [e async for e in session.play(command)]
    return session, narrator, events


def story_issues(events):
    return [i for e in events if isinstance(e, ValidationFailed) for i in e.issues if i.rule == "story.action"]


STAYS = structured("You look at the dark tower and think better of it for now.", [])


async def test_lighting_the_lamp_from_the_shore_is_corrected_with_the_way_forward():
    """The issue's own report: turn 1, the shore, `light the lamp`, and a model that grants it."""
    pack, state = lighthouse_state()
    cheat = structured(
        "You climb the tower in a single bound, strike a match and the great lamp blazes out.",
        [replace("/flags/beacon_lit", True)],
    )
    session, narrator, events = await played(pack, state, "light the lamp", cheat, STAYS)
    [issue] = story_issues(events)
    assert issue.path == "/flags/beacon_lit"
    for words in (
        "light_lamp",
        "carrying box of matches (now in Keeper's Cottage)",
        "matches_dry true (now false)",
        "oil in the lamp at least 1 (now 0)",
        "great lens within reach (now in Lamp Room)",
    ):
        assert words in issue.message
    assert narrator.requests[1].correction.issues == (issue,)
    assert isinstance(events[-1], TurnCommitted) and not any(isinstance(e, StoryEnded) for e in events)
    assert session.state["flags"]["beacon_lit"] is False


async def test_filling_the_lamp_with_no_oil_can_is_refused_naming_the_can_and_where_it_is():
    pack, state = lighthouse_state()
    cheat = structured("You fill the lamp to the brim.", [replace("/stats/oil", 3)])
    session, _, events = await played(pack, state, "fill lamp", cheat, STAYS)
    [issue] = story_issues(events)
    assert issue.path == "/stats/oil"
    assert "fill_lamp" in issue.message and "carrying oil can (now in Oil Shed)" in issue.message
    assert session.state["stats"]["oil"] == 0


async def test_an_item_moved_where_no_action_puts_it_is_refused():
    """The key is in the cottage; a model that fetches it to the shore by fiat is corrected."""
    pack, state = lighthouse_state()
    cheat = structured("The iron key lies at your feet on the Rocky Shore.", [replace("/items/key", "shore")])
    session, _, events = await played(pack, state, "find the key", cheat, STAYS)
    [issue] = story_issues(events)
    assert issue.path == "/items/key"
    assert "no action of this story makes that change" in issue.message
    assert "taken, dropped, or moved by one of the story's actions" in issue.message
    assert session.state["items"]["key"] == "cottage"


async def test_using_up_an_item_without_its_action_is_refused_naming_the_action_that_does():
    """The coal goes into the firebox only by stoking a lit boiler, with the scuttle in hand."""
    pack = load_pack("glasshouse")
    state = {**initial_state(pack), "location": "cellar"}
    cheat = structured(
        "You tip the coal scuttle out onto the floor and kick it away.", [replace("/items/coal", "nowhere")]
    )
    session, _, events = await played(pack, state, "get rid of the coal", cheat, STAYS)
    [issue] = story_issues(events)
    assert "stoke_boiler" in issue.message and "boiler_lit true (now false)" in issue.message
    assert session.state["items"]["coal"] == "cellar"


async def test_an_endings_condition_set_by_fiat_is_refused_and_the_story_does_not_end():
    pack = load_pack("glasshouse")
    state = {**initial_state(pack), "location": "orchids"}
    cheat = structured(
        "The glasshouse grows warm at once, you water the moonflower, and it opens.",
        [replace("/stats/heat", 8), replace("/flags/flower_watered", True)],
    )
    session, _, events = await played(pack, state, "make the flower bloom", cheat, STAYS)
    issues = {i.path: i.message for i in story_issues(events)}
    assert set(issues) == {"/stats/heat", "/flags/flower_watered"}
    assert "water_flower" in issues["/flags/flower_watered"]
    assert "carrying watering can (now in Orchid Room)" in issues["/flags/flower_watered"]
    assert "can_full true (now false)" in issues["/flags/flower_watered"]
    assert (
        "light_boiler" in issues["/stats/heat"] and "carrying tinderbox (now in Fern Grotto)" in issues["/stats/heat"]
    )
    assert not any(isinstance(e, StoryEnded) for e in events) and session.ending is None


async def test_a_gate_opened_without_its_key_is_refused_with_the_key_and_where_it_is():
    pack, state = lighthouse_state(location="yard")
    cheat = structured(
        "You put your shoulder to the tower door and it gives; you climb the Spiral Stair.",
        [replace("/flags/door_unlocked", True), replace("/location", "stair")],
    )
    session, _, events = await played(pack, state, "open the door and go in", cheat, STAYS)
    [issue] = story_issues(events)
    assert issue.path == "/flags/door_unlocked"
    assert "unlock_door" in issue.message and "carrying iron key (now in Keeper's Cottage)" in issue.message
    assert session.state["location"] == "yard" and session.state["flags"]["door_unlocked"] is False


async def test_when_the_budget_runs_out_the_player_sees_why():
    pack, state = lighthouse_state()
    cheat = structured("The great lamp blazes out.", [replace("/flags/beacon_lit", True)])
    _, _, events = await played(pack, state, "light the lamp", cheat, cheat, budget=1)
    assert isinstance(events[-1], TurnFailed)
    assert any("light_lamp" in i.message and i.rule == "story.action" for i in events[-1].issues)


async def test_an_action_done_in_the_models_own_words_is_accepted_and_ends_the_story():
    pack, state = lighthouse_state(
        location="lamproom", items={"matches": "player"}, flags={"matches_dry": True}, stats={"oil": 3}
    )
    own_words = structured(
        "You cup the flame to the wick, and the great beam swings out over the reef.",
        [replace("/flags/beacon_lit", True)],
    )
    session, _, events = await played(pack, state, "get that light going, quick", own_words)
    assert not story_issues(events)
    assert [e.ending for e in events if isinstance(e, StoryEnded)] == ["beacon"]


@pytest.mark.parametrize(
    ("where", "command", "patch", "narrative"),
    [
        (
            {"location": "cottage"},
            "take the matches and dry them on the stove",
            [replace("/items/matches", "player"), replace("/flags/matches_dry", True)],
            "You pick up the box of matches and dry it on the hot stove.",
        ),
        (
            {"location": "yard", "items": {"key": "player"}},
            "unlock the door, then look in the cottage",
            [replace("/flags/door_unlocked", True), replace("/location", "cottage")],
            "The iron key turns in the tower door; then you duck into the Keeper's Cottage.",
        ),
        (
            {"location": "stair", "items": {"oilcan": "player"}},
            "go up and fill the lamp",
            [replace("/location", "lamproom"), replace("/stats/oil", 3), replace("/items/oilcan", "nowhere")],
            "You climb to the Lamp Room and empty the oil can into the reservoir.",
        ),
    ],
    ids=["take-then-act", "act-then-move", "move-then-act"],
)
async def test_a_turn_may_do_an_action_together_with_moves_and_takes(where, command, patch, narrative):
    pack, state = lighthouse_state(**where)
    session, _, events = await played(pack, state, command, structured(narrative, patch))
    assert not story_issues(events) and isinstance(events[-1], TurnCommitted)


async def test_an_action_done_in_part_is_refused_as_a_whole():
    """Filling the lamp uses the can up: oil without the can gone would be oil for free."""
    pack, state = lighthouse_state(location="lamproom", items={"oilcan": "player"})
    half = structured("You fill the reservoir.", [replace("/stats/oil", 3)])
    _, _, events = await played(pack, state, "fill lamp", half, STAYS)
    [issue] = story_issues(events)
    assert "can be done now, but only whole" in issue.message and '/items/oilcan = "nowhere"' in issue.message


async def test_a_deed_already_done_gives_its_stat_only_once():
    pack = load_pack("glasshouse")
    state = copy.deepcopy(initial_state(pack))
    state.update(location="cellar")
    state["items"]["tinderbox"] = "player"
    state["flags"]["boiler_lit"] = True
    state["stats"]["heat"] = 4
    again = structured("You light the old boiler again; it roars hotter.", [replace("/stats/heat", 6)])
    _, _, events = await played(pack, state, "light boiler", again, STAYS)
    assert [i.path for i in story_issues(events)] == ["/stats/heat"]


FREE_CELLAR = (PACKS / "example.toml").read_text(encoding="utf-8").replace(
    "candle_lit = false", "candle_lit = false\nmood = false"
) + '\n[free]\nflags = ["mood"]\n'


async def test_a_flag_the_story_leaves_free_changes_at_will_and_a_bound_one_does_not():
    pack = parse_pack(FREE_CELLAR, "free.toml")
    state = initial_state(pack)
    free = structured("You hum, and feel a little happier.", [replace("/flags/mood", True)])
    session, _, events = await played(pack, state, "cheer up", free)
    assert isinstance(events[-1], TurnCommitted) and session.state["flags"]["mood"] is True
    bound = structured("The candle lights itself.", [replace("/flags/candle_lit", True)])
    _, _, events = await played(pack, state, "light candle", bound, STAYS)
    assert "light_candle" in story_issues(events)[0].message


DARK_BAR_COIN = (Path(__file__).parents[1] / "engine" / "stories" / "cloak.toml").read_text(encoding="utf-8") + (
    '\n[items.coin]\nname = "brass coin"\naliases = ["coin"]\nat = "bar"\n'
)


async def test_nothing_is_taken_from_a_dark_room_the_turn_walks_into():
    """The dark is kept whichever room it is in: walking into the dark bar and taking what lies there is
    refused as taking it once there would be."""
    pack = parse_pack(DARK_BAR_COIN, "coin.toml")
    state = initial_state(pack)
    cheat = structured(
        "You step into the Foyer Bar and pick a brass coin out of the sawdust.",
        [replace("/location", "bar"), replace("/items/coin", "player")],
    )
    session, _, events = await played(pack, state, "go south and find the coin", cheat, STAYS)
    [issue] = story_issues(events)
    assert issue.path == "/items/coin" and "Foyer Bar, which is dark now" in issue.message
    assert session.state["items"]["coin"] == "bar"


def test_the_request_lists_the_actions_possible_now_after_the_cached_prefix():
    from storyloom.engine.narration import NarrationRequest
    from storyloom.engine.narrators.anthropic import AnthropicNarrator
    from storyloom.engine.narrators.prompts import system_prompt

    pack, shore = lighthouse_state()
    _, ready = lighthouse_state(location="lamproom", items={"oilcan": "player"})
    narrator = AnthropicNarrator(api_key="sk-ant-test-key")
    asked = [narrator.request_params(NarrationRequest(pack, s, (), "look", turn=1)) for s in (shore, ready)]
    assert (
        asked[0]["system"]
        == asked[1]["system"]
        == [{"type": "text", "text": system_prompt(pack), "cache_control": {"type": "ephemeral"}}]
    )
    last = [params["messages"][-1]["content"][-1]["text"] for params in asked]
    assert "No story action is possible now" in last[0]
    assert '- fill_lamp ("fill great lens"): /stats/oil +3 (to 3), /items/oilcan = "nowhere"' in last[1]
    assert "fill_lamp" not in last[0]


# the built-in stories, played through by every kind of narrator -------------------------------


def walk(story: str) -> list[str]:
    return [ln for ln in (WALKS / f"{story}.txt").read_text().splitlines() if ln and not ln.startswith("#")]


def offline_turns(story: str) -> list[str]:
    """The offline narrator's turns for the walk-through, as JSON text a model would send."""
    pack = load_pack(story)
    state, turns = initial_state(pack), []
    for number, line in enumerate(walk(story), 1):
        turn = write_turn(pack, state, (), line, Random(f"walk|{number}"))
        verdict = judge(json.dumps(turn), state, pack)
        assert verdict.ok, (line, verdict.issues)
        turns.append(json.dumps(turn))
        state = verdict.after
    return turns


@pytest.mark.parametrize("story", ["lighthouse", "glasshouse"])
async def test_a_model_double_replaying_each_walk_through_reaches_its_ending_with_no_correction(story):
    pack = load_pack(story)
    narrator = ScriptedNarrator([Reply(structured=t, stop_reason="tool_use") for t in offline_turns(story)])
    session = Session(pack, narrator)
    events = [e for line in walk(story) async for e in session.play(line)]
    assert not [e for e in events if isinstance(e, ValidationFailed)]
    assert [e.ending for e in events if isinstance(e, StoryEnded)] == list(pack.endings)[:1]


async def test_the_lighthouse_walk_through_plays_to_its_end_over_the_anthropic_wire():
    from storyloom.engine.narrators._shared import Timeouts
    from storyloom.engine.narrators.anthropic import AnthropicNarrator
    from tests.wire import anthropic_sse as sse
    from tests.wire.server import Stream, WireServer

    pack = load_pack("lighthouse")
    with WireServer() as server:
        server.script(*(Stream(sse.turn_stream(t)) for t in offline_turns("lighthouse")))
        narrator = AnthropicNarrator(api_key="sk-ant-test-key", base_url=server.url, timeouts=Timeouts(read=5.0))
        session = Session(pack, narrator)
        events = [e for line in walk("lighthouse") async for e in session.play(line)]
        asked = [r.body["messages"][-1]["content"][-1]["text"] for r in server.requests]
    assert not [e for e in events if isinstance(e, ValidationFailed)]
    assert [e.ending for e in events if isinstance(e, StoryEnded)] == ["beacon"]
    assert any('- light_lamp ("light great lens"): /flags/beacon_lit = true' in text for text in asked)


@pytest.mark.parametrize("story", ["lighthouse", "glasshouse", "cloak"])
async def test_each_built_in_walk_through_plays_to_its_end_over_the_openai_wire(story):
    """The other wire: a model behind an OpenAI-compatible server plays each built-in story through
    under the story's rules, told the story actions possible now with each command."""
    from storyloom.engine.narrators._shared import Timeouts
    from storyloom.engine.narrators.openai import OpenAINarrator
    from tests.wire import openai_sse as sse
    from tests.wire.server import Stream, WireServer

    pack = load_pack(story)
    with WireServer() as server:
        server.script(*(Stream(sse.tool_stream(t)) for t in offline_turns(story)))
        narrator = OpenAINarrator(base_url=f"{server.url}/v1", model="qwen2.5:7b", timeouts=Timeouts(read=5.0))
        session = Session(pack, narrator)
        events = [e for line in walk(story) async for e in session.play(line)]
        asked = [r.body["messages"][-1]["content"] for r in server.requests]
    assert not [e for e in events if isinstance(e, ValidationFailed)]
    assert [e.ending for e in events if isinstance(e, StoryEnded)] == list(pack.endings)[:1]
    assert any("Story actions possible now" in text for text in asked)


# saves played before the story's rules ---------------------------------------------------------

CHEATS_SAVE = Path(__file__).parent / "saves" / "rules_v1_lighthouse_cheats.jsonl"
"""Written by storyloom before story.action (commit b65c801) with a model double: `fill the lamp`
(oil 3 from nowhere), `look`, `light the lamp` (the beacon lit from the shore, THE END)."""
V1_SAVE = Path(__file__).parent / "saves" / "format_v1_lighthouse.jsonl"
V1_PACK = V1_SAVE.with_suffix(".toml")
"""The Lighthouse as both saves were played (b65c801): the story's text has changed since."""


def test_a_save_made_before_the_story_rules_verifies_by_its_own_rules_and_notes_todays(tmp_path):
    from storyloom.saves.verify import verify_save

    report = verify_save(CHEATS_SAVE, load_pack(V1_PACK))
    assert report.sound, report.lines
    assert "rule set 1 (the world's rules only, from before story.action)" in report.lines[1]
    assert "ending: The Light on Carrow Head (reached at turn 3)" in report.lines
    assert (
        "note: played under rule set 1, and judged by it; today's rules (set 4) would refuse 2 of its commits: "
        "turn 1 (story.action), turn 3 (story.action)"
    ) in report.lines
    older = verify_save(V1_SAVE, load_pack(V1_PACK))
    assert older.sound and "rule set 1" in older.lines[1]
    assert not any(line.startswith("note: played under") for line in older.lines)  # offline turns pass today's too


def test_the_same_commits_under_todays_rules_are_not_sound(tmp_path):
    """A save claiming today's rules cannot hold a commit they refuse (the header edited, the chain re-signed)."""
    import shutil

    from storyloom.saves.verify import verify_save
    from tests.test_saves_kit import rewrite_records

    path = tmp_path / "claimed.jsonl"
    shutil.copyfile(CHEATS_SAVE, path)

    def claim_rule_set_2(records):
        records[0]["data"]["rules"] = 2
        return records

    rewrite_records(path, claim_rule_set_2)
    report = verify_save(path, load_pack(V1_PACK))
    assert not report.sound
    assert "the commit of turn 1 does not pass the rules" in report.lines[-1] and "story.action" in report.lines[-1]


async def test_a_save_made_before_the_story_rules_replays_faithfully_and_resumes_under_its_rules(tmp_path):
    import shutil

    from storyloom.engine.narrators.offline import OfflineNarrator
    from storyloom.saves.reader import load_save
    from storyloom.saves.replay import Replayer, replay_plan
    from storyloom.saves.resume import resume

    pack = load_pack(V1_PACK)
    replayed = await Replayer(replay_plan(load_save(CHEATS_SAVE), pack=pack)).run()
    assert replayed.faithful, str(replayed.divergence)
    path = tmp_path / "old.jsonl"
    shutil.copyfile(V1_SAVE, path)
    resumed = resume(path, OfflineNarrator(pack, seed=3), pack=pack)
    with resumed.journal:
        assert resumed.session.rules == resumed.header.rules == 1


async def test_a_new_save_names_todays_rule_set_in_its_header(tmp_path):
    from storyloom.saves.reader import load_save
    from tests.test_saves_kit import played_save_async

    path, _, _ = await played_save_async(tmp_path / "new.jsonl", ["look"], faults=0.0)
    assert json.loads(path.read_text().splitlines()[0])["data"]["rules"] == 4
    assert load_save(path).header.rules == 4


async def test_a_save_played_under_rule_set_2_stays_sound_though_set_3_refuses_a_drop_on_the_way_in(tmp_path):
    """Set 2 judged a drop only in the room a turn started in: a model could walk into the dark bar,
    drop the cloak there and read the message. A save played so stays sound by its own set; verify
    notes that today's set refuses that commit, and a new session refuses the same answer."""
    import dataclasses

    from storyloom.saves.format import SaveHeader
    from storyloom.saves.verify import verify_save
    from storyloom.saves.writer import Journal
    from tests.test_saves_kit import play

    pack = load_pack("cloak")
    drop_on_the_way = structured(
        "You step into the Foyer Bar and let the velvet cloak fall to the sawdust.",
        [replace("/location", "bar"), replace("/items/cloak", "bar")],
    )
    read = structured(
        "You read the message in the sawdust.", [replace("/flags/message_read", True), replace("/stats/score", 1)]
    )
    narrator = ScriptedNarrator([drop_on_the_way, read])
    session = Session(pack, narrator, rules=2)
    header = dataclasses.replace(SaveHeader.for_session(pack, narrator), rules=2)
    path = tmp_path / "set2.jsonl"
    with Journal.create(path, header) as journal:
        await play(session, journal, ["go south and drop the cloak", "read message"])
    assert session.ending is not None
    report = verify_save(path, pack)
    assert report.sound, report.lines
    assert "rule set 2 (the world's rules and the story's)" in report.lines[1]
    assert (
        "note: played under rule set 2, and judged by it; today's rules (set 4) would refuse 1 of its commits: "
        "turn 1 (story.action)"
    ) in report.lines
    _, _, events = await played(pack, initial_state(pack), "go south and drop the cloak", drop_on_the_way, STAYS)
    assert "keep_cloak" in story_issues(events)[0].message


def test_a_save_of_a_rule_set_this_storyloom_does_not_know_is_named_as_such(tmp_path):
    import shutil

    from storyloom.saves.verify import verify_save
    from tests.test_saves_kit import rewrite_records

    path = tmp_path / "future.jsonl"
    shutil.copyfile(CHEATS_SAVE, path)

    def future(records):
        records[0]["data"]["rules"] = 9
        return records

    rewrite_records(path, future)
    report = verify_save(path)
    assert not report.sound and "played under rule set 9, which this storyloom does not know" in report.lines[-1]


# a property: whatever the patch, no bound change commits without the actions that make it -----


def _made_by_doable_actions(pack, before, after) -> bool:
    """An oracle written apart from the engine's: some set of actions whose room, item and
    requirements hold before the turn (or after its moves and takes) turns `before` into `after`
    on every flag, every stat and every item place that was not taken or dropped."""
    import itertools

    def carried_or_dropped(was, now):
        return now == "player" or (was == "player" and now != "nowhere")

    moved = copy.deepcopy(before)
    moved["location"] = after["location"]
    for item_id, was in before["items"].items():
        if carried_or_dropped(was, after["items"][item_id]):
            moved["items"][item_id] = after["items"][item_id]

    def doable(action, state):
        return (
            (action.room is None or state["location"] == action.room)
            and (action.item is None or state["items"][action.item] in (state["location"], "player"))
            and action.requires.holds(state)
        )

    actions = [a for a in pack.actions.values() if doable(a, before) or doable(a, moved)]
    for size in range(len(actions) + 1):
        for chosen in itertools.combinations(actions, size):
            made = copy.deepcopy(before)
            for action in chosen:
                made["flags"].update(action.effects.flags)
                made["items"].update(action.effects.items)
                for stat_id, delta in action.effects.stats.items():
                    stat = pack.stats[stat_id]
                    made["stats"][stat_id] = max(stat.min, min(stat.max, made["stats"][stat_id] + delta))
            bound_items = [i for i, was in before["items"].items() if not carried_or_dropped(was, after["items"][i])]
            if (
                made["flags"] == after["flags"]
                and made["stats"] == after["stats"]
                and all(made["items"][i] == after["items"][i] for i in bound_items)
            ):
                return True
    return False


def test_no_patch_ever_commits_a_bound_change_without_the_actions_that_make_it():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    pack = load_pack("lighthouse")
    near = ["lamproom", "yard", "cottage"]
    places = st.sampled_from([*near, "player", "player", "nowhere"])
    states = st.builds(
        lambda location, items, flags, oil: {
            "location": location,
            "items": items,
            "flags": flags,
            "stats": {"oil": oil},
        },
        st.sampled_from(near),
        st.fixed_dictionaries({i: places for i in pack.items}),
        st.fixed_dictionaries({f: st.booleans() for f in pack.flags}),
        st.integers(0, 3),
    )
    ops = st.one_of(
        st.builds(lambda f, v: replace(f"/flags/{f}", v), st.sampled_from(list(pack.flags)), st.booleans()),
        st.builds(lambda v: replace("/stats/oil", v), st.integers(0, 3)),
        st.builds(lambda i, p: replace(f"/items/{i}", p), st.sampled_from(list(pack.items)), places),
        st.builds(lambda r: replace("/location", r), st.sampled_from(list(pack.rooms))),
    )
    every_name = " ".join([*(i.name for i in pack.items.values()), *(r.name for r in pack.rooms.values())])
    bound_commits = []

    @settings(max_examples=600, deadline=None, derandomize=True)
    @given(state=states, patch=st.lists(ops, min_size=1, max_size=4))
    def check(state, patch):
        verdict = judge(json.dumps({"narrative": every_name, "state_patch": patch}), state, pack)
        if not verdict.ok:
            return
        assert _made_by_doable_actions(pack, state, verdict.after), (state, patch)
        if verdict.after["flags"] != state["flags"] or verdict.after["stats"] != state["stats"]:
            bound_commits.append(patch)

    check()
    assert bound_commits  # the property was tested on turns that did change bound state
