"""Cloak of Darkness, the interactive-fiction yardstick, told by storyloom's pack language alone.

Played as a player would, offline and through a model double: the win with no disturbance and
with exactly one, the trampled message with two, north refused in the story's words however it
is said, the bar dark while the cloak is worn, and a model that cannot talk its way past any of it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from random import Random

import pytest

from storyloom.engine.events import StoryEnded, TurnCommitted, ValidationFailed
from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.narrators.offline.world import write_turn
from storyloom.engine.packs import load_pack
from storyloom.engine.rules import judge
from storyloom.engine.state import initial_state
from storyloom.tui.cli import main
from tests.conftest import Reply, ScriptedNarrator, structured

WALKS = Path(__file__).parent / "walkthroughs"
PACK_FILE = Path(__file__).parents[1] / "engine" / "stories" / "cloak.toml"

WIN = ["look", "north", "go north", "west", "hang cloak on hook", "east", "south", "read message"]
ONE_BLUNDER = ["south", "dance", "north", "west", "hang cloak", "east", "s", "x message"]
LOSE = ["s", "look", "go south", "n", "w", "put cloak on hook", "e", "s", "read message"]


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def offline(lines: list[str]) -> tuple[list[str], dict, str | None]:
    """Each line's narrative as the offline narrator tells it, the state at the end, and the ending reached."""
    pack = load_pack("cloak")
    state, told = initial_state(pack), []
    for number, line in enumerate(lines, 1):
        turn = write_turn(pack, state, (), line, Random(f"cloak|{number}"))
        verdict = judge(json.dumps(turn), state, pack)
        assert verdict.ok, (line, verdict.issues)
        state = verdict.after
        told.append(turn["narrative"])
    ending = next((i for i, e in pack.endings.items() if e.when.holds(state)), None)
    return told, state, ending


def test_the_walk_through_file_is_the_win():
    lines = [ln for ln in (WALKS / "cloak.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines == WIN


def test_hanging_the_cloak_first_wins_and_north_is_refused_in_the_storys_words():
    told, state, ending = offline(WIN)
    assert ending == "won" and state["stats"] == {"score": 2, "disturbed": 0}
    assert told[1] == told[2] and "only just come in out of the storm" in told[1]
    assert state["items"]["cloak"] == "cloakroom"
    assert "read the words" not in told[6] and "traced words in it" in told[6]  # the bar is lit, the message seen


def test_exactly_one_disturbance_still_wins():
    told, state, ending = offline(ONE_BLUNDER)
    assert "pitch dark" in told[0] and "message" not in told[0].lower()
    assert "Blundering around in the dark" in told[1]
    assert ending == "won" and state["stats"]["disturbed"] == 1


def test_two_disturbances_trample_the_message():
    told, state, ending = offline(LOSE)
    assert state["stats"]["disturbed"] == 2 and ending == "lost"
    pack = load_pack("cloak")
    assert "trampled" in pack.endings["lost"].text


IN_THE_DARK = ["look", "take message", "read message", "go south", "dance", "inventory", "drop cloak"]


@pytest.mark.parametrize("line", IN_THE_DARK)
def test_in_the_dark_bar_every_command_but_north_disturbs(line):
    told, state, _ = offline(["s", line])
    assert state["stats"]["disturbed"] == 1 and state["items"]["message"] == "bar"
    assert state["flags"]["message_read"] is False


def test_the_dark_bar_suggests_only_the_way_out_and_north_leaves_without_a_disturbance():
    pack = load_pack("cloak")
    state = initial_state(pack)
    turn = write_turn(pack, state, (), "s", Random(1))
    assert turn["suggestions"] == ["go north"]
    _, after, _ = offline(["s", "n"])
    assert after["location"] == "foyer" and after["stats"]["disturbed"] == 0


def test_the_cloak_stays_on_outside_the_cloakroom_and_its_hook_shows_it_once_hung():
    told, state, _ = offline(["drop cloak", "take off cloak", "w", "x hook", "hang cloak", "x hook"])
    assert state["items"]["cloak"] == "cloakroom"
    assert "no place to leave" in told[0] and "no place to leave" in told[1]
    assert "hanging from it" not in told[3] and "hanging from it" in told[5]


def test_the_first_hanging_scores_once():
    _, state, _ = offline(["w", "hang cloak", "take cloak", "hang cloak", "take cloak", "hang cloak"])
    assert state["stats"]["score"] == 1 and state["items"]["cloak"] == "cloakroom"


def test_the_side_panel_keeps_the_disturbances_and_flags_hidden():
    pack = load_pack("cloak")
    assert pack.visible == ["room", "items", "score"]


def test_cloak_is_listed_checked_and_played_headless(capsys):
    assert main(["stories"]) == 0
    assert "Cloak of Darkness" in capsys.readouterr().out
    assert main(["check-story", str(PACK_FILE)]) == 0
    assert capsys.readouterr().out.startswith("ok: cloak")
    assert main(["play", "--headless", "--story", "cloak", "--commands", str(WALKS / "cloak.txt")]) == 0
    assert "You have won" in capsys.readouterr().out


async def test_the_walk_through_survives_narrator_faults():
    pack = load_pack("cloak")
    session = Session(pack, OfflineNarrator(pack, seed=5, faults=0.5, stubborn=0.0))
    endings = [e for line in WIN async for e in session.play(line) if isinstance(e, StoryEnded)]
    assert [e.ending for e in endings] == ["won"]


# through a model double ------------------------------------------------------------------------


@pytest.mark.parametrize(("lines", "ending"), [(WIN, "won"), (ONE_BLUNDER, "won"), (LOSE, "lost")])
async def test_a_model_double_plays_each_walk_through_to_its_ending_with_no_correction(lines, ending):
    pack = load_pack("cloak")
    state, replies = initial_state(pack), []
    for number, line in enumerate(lines, 1):
        turn = write_turn(pack, state, (), line, Random(f"model|{number}"))
        state = judge(json.dumps(turn), state, pack).after
        replies.append(Reply(structured=json.dumps(turn), stop_reason="tool_use"))
    session = Session(pack, ScriptedNarrator(replies))
    events = [e for line in lines async for e in session.play(line)]
    assert not [e for e in events if isinstance(e, ValidationFailed)]
    assert [e.ending for e in events if isinstance(e, StoryEnded)] == [ending]


def replace(path, value):
    return {"op": "replace", "path": path, "value": value}


async def cheated(location: str, command: str, cheat: Reply) -> tuple[Session, list]:
    """The session after a model answers the command with `cheat`, then honestly, from the opening
    state with the player in `location`."""
    pack = load_pack("cloak")
    state = {**copy.deepcopy(initial_state(pack)), "location": location}
    honest = structured("You think better of it and stand still a moment.", [])
    session = Session(pack, ScriptedNarrator([cheat, honest]), budget=2, state=state)
    return session, [e async for e in session.play(command)]


def refused(events) -> list[str]:
    return [i.message for e in events if isinstance(e, ValidationFailed) for i in e.issues]


async def test_a_model_cannot_take_or_read_the_message_in_the_dark():
    cheat = structured("You feel for the message in the sawdust and pocket it.", [replace("/items/message", "player")])
    session, events = await cheated("bar", "take message", cheat)
    assert any("dark" in m for m in refused(events))
    assert session.state["items"]["message"] == "bar"
    read = structured("You read the message in the dark: you have won.", [replace("/flags/message_read", True)])
    session, events = await cheated("bar", "read message", read)
    assert refused(events) and session.state["flags"]["message_read"] is False
    assert not any(isinstance(e, StoryEnded) for e in events)


async def test_a_model_in_the_dark_bar_must_tell_the_disturbance():
    calm = structured("You stand very still in the dark and wait.", [])
    session, events = await cheated("bar", "wait", calm)
    assert any("blunder" in m for m in refused(events))


async def test_a_model_cannot_drop_the_cloak_outside_the_cloakroom():
    cheat = structured("You drop the velvet cloak on the foyer carpet.", [replace("/items/cloak", "foyer")])
    session, events = await cheated("foyer", "drop cloak", cheat)
    assert any("keep_cloak" in m for m in refused(events))
    assert session.state["items"]["cloak"] == "player"


@pytest.mark.parametrize(
    ("start", "to", "narrative"),
    [
        ("foyer", "bar", "You step into the Foyer Bar and let the velvet cloak fall to the sawdust."),
        ("bar", "foyer", "You feel your way north to the Foyer and drop the velvet cloak on the carpet."),
    ],
    ids=["into-the-bar", "out-of-the-bar"],
)
async def test_a_model_cannot_drop_the_cloak_in_the_room_it_walks_into(start, to, narrative):
    """Walking and dropping in one turn is still a drop the story refuses: otherwise the cloak lies in
    the bar, the bar is lit, and the message is read without the cloak ever being hung."""
    cheat = structured(narrative, [replace("/location", to), replace("/items/cloak", to)])
    session, events = await cheated(start, "go and drop the cloak there", cheat)
    assert any("keep_cloak" in m for m in refused(events))
    assert session.state["items"]["cloak"] == "player"


async def test_reading_the_message_in_the_dark_is_refused_because_the_bar_is_dark():
    """The correction says why the message is out of reach while the player stands beside it."""
    read = structured("You read the message in the dark.", [replace("/flags/message_read", True)])
    _, events = await cheated("bar", "read message", read)
    [message] = [m for m in refused(events) if "read_message" in m]
    assert "message within reach (now in Foyer Bar, which is dark)" in message


async def test_a_model_cannot_walk_out_through_the_street_door():
    cheat = structured("You step back out into the rain.", [replace("/location", "cloakroom")])
    session, events = await cheated("foyer", "go north", cheat)
    assert refused(events) and session.state["location"] == "foyer"
    assert isinstance(events[-1], TurnCommitted)


def test_hanging_the_cloak_twice_is_told_in_the_storys_words():
    told, _, _ = offline(["w", "hang cloak", "hang cloak"])
    assert told[2] == "The velvet cloak is already on the hook."


def test_the_intro_goes_on_with_the_foyer_before_the_first_command(capsys, tmp_path):
    commands = tmp_path / "one.txt"
    commands.write_text("inventory\n")
    assert main(["play", "--headless", "--story", "cloak", "--commands", str(commands)]) == 0
    out = capsys.readouterr().out
    opening = out.split("> inventory")[0]
    assert opening.index("a message has been left for you") < opening.index("Foyer of the Opera House")
    assert "Doorways lead south and west" in opening


@pytest.mark.parametrize("line", ["n", "north", "go north", "walk north", "head north", "go n"])
def test_north_from_the_foyer_is_refused_in_the_storys_words_however_it_is_said(line):
    told, state, _ = offline([line])
    assert state["location"] == "foyer" and "weather out there is getting worse" in told[0]


def test_a_model_is_told_which_room_is_dark_and_when():
    from storyloom.engine.narrators.prompts import world_json

    bar = world_json(load_pack("cloak"))["rooms"]["bar"]
    assert bar["dark"] == {"items": {"cloak": "player"}} and bar["dark_text"].startswith("It is pitch dark")
    assert "dark" not in world_json(load_pack("lighthouse"))["rooms"]["shore"]


async def test_the_bar_first_seen_in_the_dark_is_described_whole_once_it_is_lit():
    """Entered again, a room is told in a sentence; not one the player has seen only in the dark."""
    pack = load_pack("cloak")
    session = Session(pack, OfflineNarrator(pack, seed=3))
    told = [e.narrative for line in ONE_BLUNDER async for e in session.play(line) if isinstance(e, TurnCommitted)]
    assert "pitch dark" in told[0] and "traced words in it" not in told[0]
    assert "Sawdust has been scattered over the floor, and someone has traced words in it." in told[6]
    assert "wide hall hung with red and gold" in told[5] and "Doorways lead south and west" not in told[5]


def test_a_model_is_told_when_the_players_room_is_dark_now():
    from storyloom.engine.narrators.prompts import player_message

    pack = load_pack("cloak")
    state = {**initial_state(pack), "location": "bar"}
    assert "Foyer Bar is dark now" in player_message("look", state, pack)
    lit = {**state, "items": {**state["items"], "cloak": "cloakroom"}}
    assert "dark now" not in player_message("look", lit, pack)
    assert "dark now" not in player_message("look", initial_state(pack), pack)


def test_the_cloak_is_worn_and_can_be_put_on_again_from_the_hook():
    told, state, _ = offline(["wear cloak", "w", "hang cloak", "put on cloak", "x hook", "wear cloak", "e", "s"])
    assert (
        told[0] == told[5] == "You are wearing it already. The velvet cloak has hardly left your shoulders all evening."
    )
    assert "put it on again" in told[3] and "hanging from it" not in told[4]
    assert state["items"]["cloak"] == "player" and "pitch dark" in told[7]
