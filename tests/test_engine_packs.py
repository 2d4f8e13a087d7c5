"""A broken story pack is refused whole, every problem named with its file, key and line."""

from __future__ import annotations

import pytest

from storyloom.engine.packs import PackError, parse_pack
from storyloom.engine.state import initial_state
from tests.conftest import SHORE_PACK


def problems_of(text: str):
    with pytest.raises(PackError) as caught:
        parse_pack(text, "broken.toml")
    return caught.value.problems


def test_the_shore_pack_loads_with_its_world(pack):
    assert pack.start == "shore"
    assert pack.rooms["path"].exits == {"south": "shore", "up": "tower"}
    assert pack.item_words("lamp") == ("brass lamp", "lamp", "lantern")


def test_every_problem_is_listed_at_once_with_key_and_line():
    broken = (
        SHORE_PACK.replace('exits = { north = "path" }', 'exits = { north = "pier" }')
        .replace('at = "path"', 'at = "attic"')
        .replace('start = "shore"', 'start = "dock"')
        .replace('aliases = ["key"]', 'aliases = ["key", "lamp"]')
        .replace("initial = 10", "initial = 12")
    )
    problems = problems_of(broken)
    by_key = {p.key: p for p in problems}
    assert set(by_key) >= {
        "start",
        "rooms.shore.exits.north",
        "items.key.at",
        "items.key.aliases",
        "stats.health.initial",
    }
    assert "unknown room 'pier'" in by_key["rooms.shore.exits.north"].message
    assert "unknown room 'attic'" in by_key["items.key.at"].message
    assert "'lamp'" in by_key["items.key.aliases"].message
    assert "outside 0..10" in by_key["stats.health.initial"].message
    lines = broken.splitlines()
    assert "pier" in lines[by_key["rooms.shore.exits.north"].line - 1]
    assert "attic" in lines[by_key["items.key.at"].line - 1]
    assert lines[by_key["start"].line - 1].startswith("start")
    assert all(p.file == "broken.toml" for p in problems)


def test_bad_toml_gives_its_line():
    problems = problems_of('id = "x"\ntitle = "X"\nstart = \n')
    assert len(problems) == 1 and problems[0].line == 3


def test_duplicate_ids_across_sections_are_refused():
    problems = problems_of(SHORE_PACK.replace("[flags]\ndoor_open = false", "[flags]\ndoor_open = false\nlamp = true"))
    assert any(p.key == "flags.lamp" and "duplicate id" in p.message for p in problems)


def test_an_unknown_key_is_named():
    problems = problems_of(SHORE_PACK.replace("portable = false", "portabel = false"))
    assert any(p.key == "items.boulder.portabel" and "unknown key" in p.message for p in problems)


def test_a_gate_on_a_missing_flag_is_refused():
    problems = problems_of(SHORE_PACK.replace('gates = { up = "door_open" }', 'gates = { up = "hatch_open" }'))
    assert any("unknown flag 'hatch_open'" in p.message for p in problems)


def test_an_ending_on_an_unknown_room_is_refused():
    problems = problems_of(SHORE_PACK.replace('when = { location = "tower"', 'when = { location = "roof"'))
    assert any(p.key == "endings.lit.when.location" for p in problems)


def test_the_pack_digest_changes_with_its_content(pack):
    other = parse_pack(SHORE_PACK.replace("Grey water", "Green water"), "x.toml")
    assert pack.digest != other.digest
    assert pack.digest == parse_pack(SHORE_PACK, "again.toml").digest


def test_a_packs_descriptions_and_visible_panel_are_checked_like_every_other_reference() -> None:
    """A state description names a condition over the world, and `visible` names what the panel can show."""
    broken = SHORE_PACK.replace(
        'description = "Waves break on black rocks."',
        'description = "Waves break on black rocks."\n'
        'descriptions = [{ when = { flags = { no_such_flag = true } }, text = "Calm." }]',
    ).replace('start = "shore"', 'start = "shore"\nvisible = ["room", "nonsense"]')
    with pytest.raises(PackError) as caught:
        parse_pack(broken, "shore.toml")
    problems = {problem.key: problem.message for problem in caught.value.problems}
    assert "unknown flag 'no_such_flag'" in problems["rooms.shore.descriptions.0.when.flags.no_such_flag"]
    assert "'nonsense'" in problems["visible"]


def test_a_description_for_a_state_stands_in_while_its_condition_holds() -> None:
    pack = parse_pack(
        SHORE_PACK.replace(
            'description = "Waves break on black rocks."',
            'description = "Waves break on black rocks."\n'
            'descriptions = [{ when = { flags = { door_open = true } }, text = "The waves have calmed." }]',
        ),
        "shore.toml",
    )
    state = initial_state(pack)
    assert pack.rooms["shore"].description_in(state) == "Waves break on black rocks."
    opened = {**state, "flags": {**state["flags"], "door_open": True}}
    assert pack.rooms["shore"].description_in(opened) == "The waves have calmed."
