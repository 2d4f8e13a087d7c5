"""`storyloom check-story` lists every problem in a pack with its file, key and line, or says it is fine."""

from __future__ import annotations

from pathlib import Path

import pytest

from storyloom.engine.narrators.offline.parse import DIRECTION_WORDS, parse
from storyloom.engine.packs import DIRECTIONS, load_pack
from storyloom.tui.cli import main

PACKS = Path(__file__).parent / "packs"
KEYS = "id, title, intro, style, start, rooms, items, stats, flags, actions, endings, free, visible, intro_room"


@pytest.mark.parametrize(
    ("pack", "line", "key", "words"),
    [
        ("broken_exit.toml", 9, "rooms.hall.exits.north", "unknown room 'attic'"),
        ("broken_item_room.toml", 12, "items.lamp.at", "unknown room 'garden'"),
        ("broken_start.toml", 4, "start", "'porch' is not a declared room"),
        ("broken_alias.toml", 17, "items.torch.aliases", "duplicate alias 'light'"),
        ("broken_stat.toml", 11, "stats.health.initial", "initial 12 is outside 0..10"),
        ("broken_toml.toml", 7, "-", "not valid TOML"),
    ],
)
def test_a_broken_pack_exits_2_naming_file_line_key_and_problem(pack, line, key, words, capsys):
    path = PACKS / pack
    assert main(["check-story", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:{line}: {key}: " in err
    assert words in err


def test_every_problem_in_a_pack_is_listed_not_just_the_first(tmp_path, capsys):
    text = "\n".join((PACKS / name).read_text() for name in ("broken_exit.toml",))
    text = text.replace('start = "hall"', 'start = "porch"') + '\n[items.lamp]\nname = "lamp"\nat = "garden"\n'
    text += "\n[stats.health]\ninitial = 12\nmin = 0\nmax = 10\n"
    path = tmp_path / "many.toml"
    path.write_text(text)
    assert main(["check-story", str(path)]) == 2
    err = capsys.readouterr().err
    for words in ("unknown room 'attic'", "'porch' is not a declared room", "unknown room 'garden'", "initial 12"):
        assert words in err
    assert "4 problems found" in err


def test_a_missing_file_exits_2_and_lists_the_built_in_stories(capsys):
    assert main(["check-story", str(PACKS / "no_such_pack.toml")]) == 2
    assert "lighthouse" in capsys.readouterr().err


def test_a_good_pack_exits_0_with_a_summary_and_what_its_actions_bind(capsys):
    assert main(["check-story", str(PACKS / "example.toml")]) == 0
    first, *rest = capsys.readouterr().out.splitlines()
    assert first.startswith("ok: cellar") and "3 rooms, 5 items" in first
    assert rest == [
        "bound (changed only by these actions; any item also by taking and dropping it):",
        "  flags/cellar_open: open_door, use_key, close_door",
        "  flags/candle_lit: light_candle",
        "  stats/courage: light_candle",
        "free (the narrator's to change at will): none",
        "never changes (no action changes it, and it is not free): none",
        "actions whose requirements can never hold: none",
        "endings that can never be reached: none",
        "warnings: none",
    ]


def test_check_story_names_free_state_state_that_never_changes_and_what_can_never_happen(tmp_path, capsys):
    """The cellar with a free mood flag, a stat no action touches, a jar the door's key is locked
    behind for good (no action opens the cellar once open_door needs a key that is nowhere)."""
    text = (PACKS / "example.toml").read_text(encoding="utf-8")
    text = text.replace('at = "kitchen"\n\n[items.table]', 'at = "nowhere"\n\n[items.table]')  # the key
    text = text.replace("candle_lit = false", "candle_lit = false\nmood = false")
    text += '\n[stats.luck]\ninitial = 0\nmin = 0\nmax = 3\n\n[free]\nflags = ["mood"]\n'
    path = tmp_path / "locked.toml"
    path.write_text(text, encoding="utf-8")
    assert main(["check-story", str(path)]) == 0
    out = capsys.readouterr().out
    assert "free (the narrator's to change at will): flags/mood\n" in out
    assert "never changes (no action changes it, and it is not free): stats/luck\n" in out
    assert "actions whose requirements can never hold: open_door, use_key, close_door\n" in out
    assert "endings that can never be reached: plums\n" in out


def test_a_free_table_naming_what_the_story_does_not_declare_is_a_problem(tmp_path, capsys):
    text = (PACKS / "example.toml").read_text(encoding="utf-8") + '\n[free]\nflags = ["moood"]\nitems = ["spoon"]\n'
    path = tmp_path / "typo.toml"
    path.write_text(text, encoding="utf-8")
    assert main(["check-story", str(path)]) == 2
    err = capsys.readouterr().err
    assert "free.flags: unknown flag 'moood'" in err and "free.items: unknown item 'spoon'" in err


def test_the_docs_example_pack_is_a_complete_story():
    pack = load_pack(PACKS / "example.toml")
    assert pack.stats and pack.flags and pack.actions and pack.endings
    assert any(room.gates for room in pack.rooms.values())


def test_hostile_text_in_a_pack_never_reaches_the_terminal_raw(capsys):
    assert main(["check-story", str(PACKS / "hostile.toml")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out


def test_the_example_in_the_docs_is_the_example_pack_that_passes():
    docs = (Path(__file__).parents[1] / "docs" / "playing.md").read_text(encoding="utf-8")
    block = docs.split("```toml\n", 1)[1].split("```", 1)[0]
    pack_text = (PACKS / "example.toml").read_text(encoding="utf-8")
    assert block.strip() == "\n".join(ln for ln in pack_text.splitlines() if not ln.startswith("#")).strip()


async def test_the_retry_key_example_in_the_docs_fails_then_commits_on_retry():
    from storyloom.engine.lifecycle import Session
    from storyloom.engine.narrators.offline import OfflineNarrator

    pack = load_pack("lighthouse")
    session = Session(pack, OfflineNarrator(pack, seed=8, faults=0.5))
    first = [e async for e in session.play("look")]
    assert first[-1].event == "turn_failed" and [e.event for e in first].count("validation_failed") == 3
    retried = [e async for e in session.retry()]
    assert retried[-1].event == "turn_committed"


def test_an_exit_no_player_could_type_is_refused_with_the_directions_there_are(tmp_path, capsys):
    text = (PACKS / "example.toml").read_text(encoding="utf-8")
    text = text.replace('exits = { east = "hall" }', 'exits = { east = "hall", sideways = "hall" }')
    path = tmp_path / "sideways.toml"
    path.write_text(text, encoding="utf-8")
    assert main(["check-story", str(path)]) == 2
    err = capsys.readouterr().err
    assert "rooms.kitchen.exits.sideways: unknown direction 'sideways'" in err
    assert "north, south, east, west, northeast, northwest, southeast, southwest, up, down, in, out" in err


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_every_direction_a_pack_may_use_is_understood_by_the_offline_parser(direction):
    pack = load_pack(PACKS / "example.toml")
    for line in (direction, f"go {direction}", f"walk {direction}"):
        assert parse(line, pack).direction == direction, line
    assert set(DIRECTION_WORDS.values()) == set(DIRECTIONS)


def test_schema_and_cross_reference_problems_are_listed_together_in_the_order_of_the_file(capsys):
    """An unknown key, a bad start room, an exit to an unknown room and a wrong type: all four at once."""
    path = PACKS / "broken_many.toml"
    assert main(["check-story", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"{path}:5: start: start room 'porch' is not a declared room",
        f"{path}:6: colour: unknown key (check its spelling): the keys here are {KEYS}",
        f"{path}:11: rooms.hall.exits.north: exit leads to unknown room 'attic': the rooms are hall, yard",
        f"{path}:21: items.lamp.portable: must be true or false, not 'yes'",
        "4 problems found",
    ]


def test_a_value_stood_in_for_never_adds_a_problem_of_its_own(tmp_path, capsys):
    """The item's place is the wrong type: one problem about that, none about a room called 'x'."""
    text = (PACKS / "example.toml").read_text(encoding="utf-8").replace('at = "kitchen"', "at = 3", 1)
    text = text.replace('start = "kitchen"', "start = 4")
    path = tmp_path / "typed.toml"
    path.write_text(text, encoding="utf-8")
    assert main(["check-story", str(path)]) == 2
    err = capsys.readouterr().err
    assert 'items.candle.at: must be text in quotes ("..."), not 3' in err and "start: must be text in quotes" in err
    assert "'x'" not in err and "2 problems found" in err
