"""The pack language as an author meets it: the six bugs met writing Cloak of Darkness, each as the
player or the author would see it, and a way refused in the story's words binding a model too."""

from __future__ import annotations

import json
from pathlib import Path
from random import Random

import pytest

from storyloom.engine.builtin import builtin_pack_text
from storyloom.engine.events import ValidationFailed
from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline.world import suggestions, write_turn
from storyloom.engine.packs import parse_pack
from storyloom.engine.rules import judge
from storyloom.engine.state import initial_state
from storyloom.tui.cli import main
from tests.conftest import ScriptedNarrator, structured

CLOAK = builtin_pack_text("cloak")


def cloak(extra: str = "", **replacements: str):
    text = CLOAK
    for old, new in replacements.items():
        assert old in text
        text = text.replace(old, new)
    return parse_pack(text + extra, "cloak-variant.toml")


def play(pack, lines, state=None):
    """Each line's turn as the offline narrator writes it, and the state after."""
    state = state or initial_state(pack)
    turns = []
    for number, line in enumerate(lines, 1):
        turn = write_turn(pack, state, (), line, Random(number))
        verdict = judge(json.dumps(turn), state, pack)
        assert verdict.ok, (line, verdict.issues)
        state = verdict.after
        turns.append(turn)
    return turns, state


GO_NORTH_IN_THE_FOYER = """
[actions.foyer_north]
verbs = ["go north"]
room = "foyer"
text = "The street doors are shut against the storm."
"""


def test_1_a_verb_of_two_words_answers_only_in_its_room():
    pack = cloak(GO_NORTH_IN_THE_FOYER)
    turns, state = play(pack, ["w", "hang cloak", "e", "s", "go north"])
    assert state["location"] == "foyer"
    assert "What do you want" not in turns[-1]["narrative"]
    turns, state = play(pack, ["go north"])  # in the foyer, the author's own verb answers
    assert state["location"] == "foyer" and turns[0]["narrative"] == "The street doors are shut against the storm."


def test_2_suggestions_are_never_repeated_and_an_author_can_keep_one_out():
    pack = cloak(
        """
[items.umbrella]
name = "umbrella"
at = "foyer"

[actions.take_umbrella]
verbs = ["take"]
item = "umbrella"
text = "You take the umbrella, dripping."
effects = { items = { umbrella = "player" } }
"""
    )
    state = initial_state(pack)
    for seed in range(20):
        offered = suggestions(pack, state, Random(seed))
        assert len(offered) == len(set(offered)) and "take umbrella" in offered
    quiet = cloak("", **{'item = "message"\nroom = "bar"\n': 'item = "message"\nroom = "bar"\nsuggest = false\n'})
    state = initial_state(quiet)
    state = {**state, "location": "bar", "items": {**state["items"], "cloak": "cloakroom"}}
    assert "read sawdust" in suggestions(pack, state, Random(1))
    assert not any(s.startswith("read") for s in suggestions(quiet, state, Random(1)))


def test_2_the_dark_bar_never_suggests_a_blunder():
    pack = cloak()
    state = {**initial_state(pack), "location": "bar"}
    for seed in range(10):
        assert suggestions(pack, state, Random(seed)) == ["go north"]


def test_2_a_lit_room_whose_catch_all_holds_suggests_only_its_ways_out():
    """Not only because nothing can be seen in the dark: the catch-all would take the reading too."""
    pack = cloak("", **{'dark = { items = { cloak = "player" } }\n': ""})
    state = {**initial_state(pack), "location": "bar"}
    assert not pack.rooms["bar"].is_dark(state)
    for seed in range(10):
        assert suggestions(pack, state, Random(seed)) == ["go north"]


def test_3_done_text_answers_an_action_whose_item_effects_already_hold():
    turns, state = play(cloak(), ["w", "hang cloak", "hang cloak"])
    assert state["stats"]["score"] == 1
    assert turns[-1]["narrative"] == "The velvet cloak is already on the hook."
    plain = cloak("", **{'done = "The velvet cloak is already on the hook."\n': ""})
    turns, _ = play(plain, ["w", "hang cloak", "hang cloak"])
    assert "already" in turns[-1]["narrative"].lower()


def test_4_an_item_moved_out_of_sight_is_not_announced():
    pack = cloak(
        """
[actions.sweep]
verbs = ["ring"]
room = "foyer"
effects = { items = { message = "nowhere" } }
text = "You ring the bell by the doors. Far off, a broom starts up."
"""
    )
    turns, state = play(pack, ["ring"])
    assert state["items"]["message"] == "nowhere"
    assert turns[0]["narrative"] == "You ring the bell by the doors. Far off, a broom starts up."


def test_5_an_items_word_means_it_only_within_reach():
    pack = cloak()
    turns, _ = play(pack, ["x floor"])
    assert "traced words" not in turns[0]["narrative"]
    turns, state = play(pack, ["w", "hang cloak", "e", "s", "x floor"])
    assert state["flags"]["message_read"] is True  # in the lit bar the floor is the message


def test_5_put_cloak_on_floor_drops_it_and_only_the_hook_hangs_it():
    turns, state = play(cloak(), ["w", "put cloak on floor", "x hook", "take cloak", "put cloak on hook", "x hook"])
    assert "heap on the cloakroom floor" in turns[1]["narrative"] and "hanging from it" not in turns[2]["narrative"]
    assert state["stats"]["score"] == 1 and "hanging from it" in turns[5]["narrative"]


def test_5_a_word_of_an_item_out_of_reach_does_not_stop_an_action_on_one_within_reach():
    pack = cloak(
        """
[actions.stamp]
verbs = ["stamp"]
room = "cloakroom"
text = "You stamp the rain off your shoes onto the bare floor."
"""
    )
    turns, _ = play(pack, ["w", "stamp on floor"])  # the floor of the bar is not in reach here
    assert turns[-1]["narrative"] == "You stamp the rain off your shoes onto the bare floor."


def refused_by_check_story(tmp_path, capsys, old: str, new: str) -> str:
    """What check-story prints of Cloak with `old` written `new` (it must refuse it)."""
    path = tmp_path / "variant.toml"
    path.write_text(CLOAK.replace(old, new))
    assert main(["check-story", str(path)]) == 2
    return str(capsys.readouterr().err)


def test_6_an_unknown_key_is_named_with_the_valid_ones(tmp_path, capsys):
    err = refused_by_check_story(tmp_path, capsys, "dark = {", "darkness = {")
    assert "rooms.bar.darkness: unknown key" in err
    assert "name, description, aliases, exits, gates, descriptions, dark, dark_text" in err


def test_6_check_story_explains_itself(capsys):
    try:
        main(["check-story", "--help"])
    except SystemExit:
        pass
    out = capsys.readouterr().out
    assert "Every problem" in out and "docs/authoring.md" in out and "the pack file" in out


def test_6_check_story_warns_of_verbs_and_words_ambiguous_across_rooms(tmp_path, capsys):
    path = tmp_path / "ambiguous.toml"
    path.write_text(
        CLOAK.replace('aliases = ["bar", "foyer bar"]', 'aliases = ["foyer bar", "sawdust"]') + GO_NORTH_IN_THE_FOYER
    )
    assert main(["check-story", str(path)]) == 0
    out = capsys.readouterr().out.split("\nwarnings")[1]
    assert "'go north' is not the built-in 'go' in foyer" in out
    assert "items.message: 'sawdust' also names room bar" in out


STREET = """
[rooms.street]
name = "Street"
description = "Rain."
exits = { south = "foyer" }
"""


async def test_a_way_the_story_answers_is_not_walked_by_a_model():
    pack = cloak(
        STREET,
        **{
            'exits = { south = "bar", west = "cloakroom" }': (
                'exits = { south = "bar", west = "cloakroom", north = "street" }'
            )
        },
    )
    turns, state = play(pack, ["go north", "n"])
    assert state["location"] == "foyer" and "only just come in" in turns[1]["narrative"]
    cheat = structured(
        "You step back out onto the Street, into the rain.", [{"op": "replace", "path": "/location", "value": "street"}]
    )
    honest = structured("You think better of the storm.", [])
    session = Session(pack, ScriptedNarrator([cheat, honest]), budget=2)
    events = [e async for e in session.play("go north")]
    issues = [i for e in events if isinstance(e, ValidationFailed) for i in e.issues]
    assert any("street_door" in i.message for i in issues)
    assert session.state["location"] == "foyer"


def test_a_pack_says_how_an_action_is_reached(capsys, tmp_path):
    err = refused_by_check_story(tmp_path, capsys, 'direction = "north"\nroom = "foyer"', 'direction = "widdershins"')
    assert "actions.street_door.direction: unknown direction 'widdershins': one of north" in err
    assert "actions.street_door.room: an action with a `direction` needs the `room`" in err


def test_the_guides_quotes_of_cloak_are_the_shipped_pack():
    """Every whole line the guide quotes in a TOML block is a line of engine/stories/cloak.toml."""
    guide = (Path(__file__).parents[1] / "docs" / "authoring.md").read_text()
    shipped = set(CLOAK.splitlines())
    quoted = [
        line.split("  #")[0].rstrip()
        for block in guide.split("```toml\n")[1:]
        for line in block.split("```")[0].splitlines()
        if line.strip() and "..." not in line and not line.endswith("\\")
    ]
    assert len(quoted) > 60
    assert [line for line in quoted if line not in shipped and not line.startswith(('"""', "text = "))] == []
    assert 'dark = { items = { cloak = "player" } }' in quoted


COAT = """
id = "coat"
title = "The Coat"
intro = "A cold evening."
start = "hall"

[rooms.hall]
name = "Hall"
description = "A chilly hall."

[items.coat]
name = "wool coat"
aliases = ["coat"]
at = "player"

[flags]
coat_worn = true

[actions.take_off]
verbs = ["take off", "remove"]
item = "coat"
requires = { flags = { coat_worn = true } }
effects = { flags = { coat_worn = false } }
text = "You shrug the wool coat off."

[actions.wear]
verbs = ["wear", "put on"]
item = "coat"
requires = { items = { coat = "player" }, flags = { coat_worn = false } }
effects = { flags = { coat_worn = true } }
text = "You put the wool coat on."

[actions.still_worn]
verbs = ["drop"]
item = "coat"
requires = { flags = { coat_worn = true } }
text = "You would have to take the wool coat off first."
"""


def test_the_documented_worn_item_pattern_plays():
    pack = parse_pack(COAT)
    turns, state = play(pack, ["drop coat", "take off coat", "drop coat", "take coat", "wear coat"])
    assert turns[0]["narrative"] == "You would have to take the wool coat off first."
    assert [t["state_patch"] for t in turns[2:3]] == [[{"op": "replace", "path": "/items/coat", "value": "hall"}]]
    assert state["flags"]["coat_worn"] is True and state["items"]["coat"] == "player"


async def test_a_model_cannot_drop_a_worn_item():
    pack = parse_pack(COAT)
    cheat = structured("You drop the wool coat.", [{"op": "replace", "path": "/items/coat", "value": "hall"}])
    session = Session(pack, ScriptedNarrator([cheat, structured("You keep the coat on.", [])]), budget=2)
    events = [e async for e in session.play("drop coat")]
    assert any("still_worn" in i.message for e in events if isinstance(e, ValidationFailed) for i in e.issues)
    assert session.state["items"]["coat"] == "player"


CELLAR = """
id = "cellar"
title = "The Cellar"
intro = "A cold house."
start = "kitchen"

[rooms.kitchen]
name = "Kitchen"
description = "A kitchen. Steps lead down."
exits = { down = "cellar" }

[rooms.cellar]
name = "Cellar"
description = "A low cellar, with a crate against the wall."
exits = { up = "kitchen" }
dark = { unless = [
  { items = { lamp = "player" }, flags = { lit = true } },
  { items = { lamp = "cellar" }, flags = { lit = true } },
] }
dark_text = "It is too dark to see."

[items.lamp]
name = "lamp"
at = "kitchen"

[items.crate]
name = "crate"
description = "A crate of apples."
at = "cellar"
portable = false

[flags]
lit = false

[actions.light]
verbs = ["light"]
item = "lamp"
requires = { items = { lamp = "player" } }
effects = { flags = { lit = true } }
text = "The lamp flares."
"""


def test_a_room_is_dark_unless_a_lit_lamp_is_carried_or_lying_there():
    pack = parse_pack(CELLAR)
    turns, _ = play(pack, ["take lamp", "down", "x crate"])
    assert "too dark" in turns[1]["narrative"] and "apples" not in turns[2]["narrative"]
    turns, _ = play(pack, ["take lamp", "light lamp", "down", "drop lamp", "x crate"])
    assert "crate against the wall" in turns[2]["narrative"] and "apples" in turns[4]["narrative"]
    turns, _ = play(pack, ["take lamp", "light lamp", "drop lamp", "down", "x crate"])  # the lit lamp left upstairs
    assert "too dark" in turns[3]["narrative"] and "apples" not in turns[4]["narrative"]


async def test_a_model_cannot_take_from_a_room_dark_unless_a_lamp_is_there():
    pack = parse_pack(CELLAR)
    state = {**initial_state(pack), "location": "cellar"}
    lamp = structured("You feel about and find a lamp.", [{"op": "replace", "path": "/items/lamp", "value": "player"}])
    state["items"] = {**state["items"], "lamp": "cellar"}
    session = Session(pack, ScriptedNarrator([lamp, structured("You grope about.", [])]), budget=2, state=state)
    events = [e async for e in session.play("take lamp")]
    assert any("dark" in i.message for e in events if isinstance(e, ValidationFailed) for i in e.issues)
    assert session.state["items"]["lamp"] == "cellar"


def test_a_condition_without_unless_keeps_a_packs_digest():
    """`unless` came after saves recorded their packs' digests: a pack that does not use it keeps its digest."""
    assert "unless" in parse_pack(CELLAR).rooms["cellar"].model_dump()["dark"]
    assert "unless" not in parse_pack(builtin_pack_text("cloak")).rooms["bar"].model_dump()["dark"]
    assert parse_pack(CELLAR).digest != parse_pack(CELLAR.replace('lamp = "cellar" }', 'lamp = "kitchen" }')).digest


@pytest.mark.parametrize("line", ["drop cloak", "discard cloak", "set down cloak", "leave cloak", "put down cloak"])
def test_every_word_for_dropping_reaches_the_storys_own_answer(line):
    turns, state = play(cloak(), [line])
    assert "no place to leave a good velvet cloak" in turns[0]["narrative"]
    turns, state = play(cloak(), ["w", "hang cloak", "take cloak", line, "x hook"])
    assert state["items"]["cloak"] == "cloakroom" and state["flags"]["on_hook"] is False
    assert "heap on the cloakroom floor" in turns[3]["narrative"] and "hanging from it" not in turns[4]["narrative"]


def test_check_story_names_what_may_stand_where_an_unknown_id_or_a_wrong_kind_of_value_is(tmp_path, capsys):
    err = refused_by_check_story(
        tmp_path,
        capsys,
        "flags = { message_read = true }, stats_at_most",
        "flags = { mesage_read = true }, stats_at_most",
    )
    assert (
        "endings.won.when.flags.mesage_read: unknown flag 'mesage_read': the flags are hung_once, on_hook, message_read"
        in err
    )
    err = refused_by_check_story(tmp_path, capsys, 'at = "bar"', 'at = "pub"')
    assert "unknown room 'pub': the places are foyer, cloakroom, bar, player, nowhere" in err
    err = refused_by_check_story(tmp_path, capsys, "portable = false", 'portable = "no"')
    assert "items.hook.portable: must be true or false, not 'no'" in err
    path = tmp_path / "cellar.toml"
    path.write_text(CELLAR.replace('"cellar" }, flags = { lit = true }', '"cellar" }, flags = { lamp_lit = true }'))
    assert main(["check-story", str(path)]) == 2
    assert (
        "rooms.cellar.dark.unless.1.flags.lamp_lit: unknown flag 'lamp_lit': the flags are lit"
        in capsys.readouterr().err
    )


def test_unless_says_not_and_or_in_a_descriptions_when():
    pack = parse_pack(
        CELLAR.replace(
            'description = "A crate of apples."',
            'description = "A crate of apples."\ndescriptions = [{ when = { unless = [{ unless = ['
            '{ items = { lamp = "cellar" } }, { flags = { lit = true } }] }] }, text = "A crate, lamplit." }]',
        )
    )
    crate, state = pack.items["crate"], initial_state(pack)
    assert crate.description_in(state) == "A crate of apples."
    assert crate.description_in({**state, "flags": {"lit": True}}) == "A crate, lamplit."
    assert crate.description_in({**state, "items": {**state["items"], "lamp": "cellar"}}) == "A crate, lamplit."
