"""The offline narrator's prose agrees with the world it narrates, and does not repeat itself.

A newcomer filled the lighthouse lamp, then read that its reservoir was "bone dry"; played fifty
turns and met the same sentence for the same verb again and again; asked for another version and
got the same words back. These tests walk every room and item of both built-in stories through
the states a play-through reaches, and play a scripted 50 turns of each.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import Any

import pytest

from storyloom.engine.builtin import builtin_pack_ids
from storyloom.engine.events import TurnCommitted, TurnFailed
from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.narrators.offline.prose import sentences
from storyloom.engine.narrators.offline.world import write_turn
from storyloom.engine.packs import NOWHERE, PLAYER, StoryPack, load_pack
from storyloom.engine.rules import judge, names
from storyloom.engine.story import within_reach

WALKS = Path(__file__).parent / "walkthroughs"

State = dict[str, Any]
Check = tuple[Callable[[State], bool], re.Pattern[str]]


def _flag(name: str) -> Callable[[State], bool]:
    return lambda state: bool(state["flags"][name])


def _at_least(stat: str, value: int) -> Callable[[State], bool]:
    return lambda state: state["stats"][stat] >= value


def _in_the_bar(cloak_worn: bool) -> Callable[[State], bool]:
    return lambda state: state["location"] == "bar" and (state["items"]["cloak"] == PLAYER) == cloak_worn


CONTRADICTIONS: dict[str, list[Check]] = {
    "lighthouse": [
        (_at_least("oil", 1), re.compile(r"bone dry|empty oil reservoir|nothing to fill it with")),
        (_flag("door_unlocked"), re.compile(r"iron door shut|door is locked")),
        (_flag("hatch_open"), re.compile(r"rusted nearly solid")),
        (_flag("matches_dry"), re.compile(r"soft with damp|will not strike")),
        (_flag("beacon_lit"), re.compile(r"cold and dark|still dark")),
    ],
    "glasshouse": [
        (_flag("trapdoor_open"), re.compile(r"sealed its edges|furred with frost")),
        (_flag("boiler_lit"), re.compile(r"beast asleep|dead at zero")),
        (_flag("vents_closed"), re.compile(r"cold pours in through them|vents stand open")),
        (_flag("flower_watered"), re.compile(r"tight as a fist|closed as a fist")),
        (_at_least("heat", 6), re.compile(r"silvered with frost|breath hangs")),
    ],
    "cloak": [
        (_in_the_bar(cloak_worn=False), re.compile(r"pitch dark|grope about in the blackness")),
        (_in_the_bar(cloak_worn=True), re.compile(r"Sawdust has been scattered|traced words|read what is left")),
        (lambda state: state["items"]["cloak"] != "cloakroom", re.compile(r"cloak hanging from it")),
        (lambda state: not state["flags"]["on_hook"], re.compile(r"cloak hanging from it")),
        (_at_least("disturbed", 2), re.compile(r"You could read them")),
    ],
}
"""What the story must not say in a state: its first descriptions, written for the state it starts in."""


def contradictions(pack: StoryPack, state: State, narrative: str) -> list[str]:
    """What the narrative says that the state denies."""
    checks = CONTRADICTIONS[pack.id]
    found = [pattern.pattern for holds, pattern in checks if holds(state) and pattern.search(narrative)]
    here = state["location"]
    description = pack.rooms[here].description_in(state)
    if description in narrative:  # the room as described must hold what it names
        found += [
            f"{pack.rooms[here].name} names {item.name}, which is at {state['items'][item_id]}"
            for item_id, item in pack.items.items()
            if item.portable and state["items"][item_id] != here and names(description, _nouns(pack, item_id))
        ]
    return found


def _nouns(pack: StoryPack, item_id: str) -> list[str]:
    """The words that surely mean the item: its name and the aliases that are no everyday word
    ("rope", not "can" in "you can hear" or "glass" in "glass on every side")."""
    return [w for w in pack.item_words(item_id) if len(w) > 3 and w not in ("glass", "light", "lamp", "fire")]


def _deeds(pack: StoryPack) -> list[str]:
    """Every command that can change the world: each action's verbs on its item, take and drop each
    thing, each way out of a room, and a word no verb knows (a room's catch-all takes it)."""
    lines = [f"{verb} {action.item}" for action in pack.actions.values() if action.item for verb in action.verbs]
    lines += [f"{verb} {item_id}" for item_id in pack.items for verb in ("take", "drop")]
    lines += sorted({direction for room in pack.rooms.values() for direction in room.exits}) + ["dance"]
    return [line for line in lines if "*" not in line]


def _step(pack: StoryPack, state: State, line: str) -> tuple[str, State]:
    turn = write_turn(pack, state, (), line, Random(line))
    verdict = judge(json.dumps(turn), state, pack)
    assert verdict.ok and verdict.after is not None, (line, verdict.issues)  # the model narrators' rules
    return turn["narrative"], verdict.after


def _walk_states(pack: StoryPack) -> list[State]:
    """The states of the walk-through to the ending, and every state two deeds away from each of them."""
    lines = [line for line in (WALKS / f"{pack.id}.txt").read_text().splitlines() if line and line[0] != "#"]
    state = _initial(pack)
    path = [state]
    for line in lines:
        _, state = _step(pack, state, line)
        path.append(state)
    found = {repr(s): s for s in path}
    for _ in range(2):
        for before in path:
            for line in _deeds(pack):
                narrative, after = _step(pack, before, line)
                assert not contradictions(pack, after, narrative), (line, narrative)
                found.setdefault(repr(after), after)
        path = [s for s in found.values() if s not in path]
    return list(found.values())


def _an_action(pack: StoryPack, state: State, line: str) -> bool:
    """Whether the story's own action answers the line (its text, not the item's description)."""
    from storyloom.engine.narrators.offline.parse import matching_actions, parse

    here = state["location"]
    reach = frozenset(item_id for item_id in state["items"] if within_reach(pack, state, item_id))
    return bool(matching_actions(parse(line, pack, here, reach), pack))


def _initial(pack: StoryPack) -> State:
    from storyloom.engine.state import initial_state

    return initial_state(pack)


def test_every_built_in_story_has_its_checks_and_its_fifty_turns() -> None:
    """A story added to engine/stories/ is walked and played here too: it needs both."""
    assert set(CONTRADICTIONS) == set(SCRIPTS) == set(builtin_pack_ids())


@pytest.mark.slow
@pytest.mark.parametrize("story", builtin_pack_ids())
def test_every_room_and_item_is_described_as_the_state_has_it_after_every_deed(story: str) -> None:
    pack = load_pack(story)
    states = _walk_states(pack)
    assert len(states) >= 3 * len(pack.rooms)
    seen = 0
    for state in states:
        for room_id in pack.rooms:
            there = {**state, "location": room_id}
            for line in ("look", "wait"):
                narrative, _ = _step(pack, there, line)
                assert not contradictions(pack, there, narrative), (room_id, state, narrative)
            seen += 1
        for item_id, place in state["items"].items():
            if place == NOWHERE:
                continue
            there = state if place == PLAYER else {**state, "location": place}
            narrative, _ = _step(pack, there, f"examine {item_id}")
            lit = not pack.rooms[there["location"]].is_dark(there)  # a dark room's catch-all answers instead
            if lit and not _an_action(pack, there, f"examine {item_id}"):
                assert pack.items[item_id].description_in(there) in narrative
            assert not contradictions(pack, there, narrative), (item_id, state, narrative)
            seen += 1
    assert seen >= len(states) * len(pack.rooms)


def test_after_filling_the_burner_the_lens_and_the_lamp_room_say_it_has_oil() -> None:
    pack = load_pack("lighthouse")
    state = _initial(pack)
    state = {**state, "location": "lamproom", "stats": {"oil": 3}, "items": {**state["items"], "oilcan": NOWHERE}}
    for line in ("look", "examine lens", "x burner"):
        narrative, _ = _step(pack, state, line)
        assert "dry" not in narrative and "empty" not in narrative, narrative
        assert "oil" in narrative


SCRIPTS = {
    "lighthouse": """look; examine boat; take rope; examine rope; north; look; south; look; north; up;
        examine door; open door; west; look; examine stove; take key; take matches; light matches;
        read logbook; dry matches; examine matches; inventory; east; east; look; take can; examine can;
        west; unlock door; in; look; up; look; examine lens; fill burner; examine lens; look; open hatch;
        examine hatch; out; look; take spyglass; look through spyglass; wait; in; look; examine lens;
        inventory; help; wait""",
    "glasshouse": """look; read note; north; look; east; look; take tinderbox; examine pool; west; west;
        look; examine flower; examine thermometer; take can; east; east; fill can; examine can; west;
        north; look; open trapdoor; take gloves; open trapdoor; examine trapdoor; look; down; look;
        light boiler; examine boiler; take coal; stoke boiler; examine boiler; look; up; south; look; up;
        look; turn wheel; look; down; west; look; examine flower; inventory; wait; help; east; look""",
    "cloak": """look; examine cloak; inventory; north; south; look; north; west; look; examine hook; drop cloak;
        look; examine cloak; take cloak; hang cloak; examine hook; look; east; look; south; look; wait;
        take sawdust; inventory; north; west; take cloak; examine hook; east; south; wait; north; inventory;
        west; put cloak on hook; look; east; help; south; look; north; look; west; examine cloak;
        take cloak; east; examine cloak; wait; look; inventory""",
}


def _script(story: str) -> list[str]:
    return [line.strip() for line in SCRIPTS[story].split(";")]


def _pack_text(pack: StoryPack) -> str:
    """Every text the story itself supplies: what is left is the narrator's own."""
    texts = [pack.intro]
    for thing in (*pack.rooms.values(), *pack.items.values()):
        texts += [thing.description, *(d.text for d in thing.descriptions)]
    texts += [t for a in pack.actions.values() for t in (a.text, a.refusal)]
    texts += [e.text for e in pack.endings.values()]
    return "\n".join(texts)


def narrator_sentences(pack: StoryPack, narratives: list[str]) -> Counter[str]:
    own = _pack_text(pack)
    return Counter(s for n in narratives for s in sentences(n.replace("\n\n", " ")) if s not in own)


async def _play(story: str, seed: int = 0) -> tuple[StoryPack, list[TurnCommitted]]:
    pack = load_pack(story)
    session = Session(pack, OfflineNarrator(pack, seed=seed))
    commits: list[TurnCommitted] = []
    for line in _script(story):
        commits += [e async for e in session.play(line) if isinstance(e, TurnCommitted)]
    assert session.ending is None
    return pack, commits


@pytest.mark.parametrize("story", builtin_pack_ids())
async def test_fifty_turns_repeat_no_sentence_of_the_narrator_more_than_twice_and_never_contradict(story: str) -> None:
    assert len(_script(story)) == 50
    pack, commits = await _play(story)
    assert len(commits) == 50
    for commit in commits:
        assert not contradictions(pack, commit.state, commit.narrative), commit.narrative
    counts = narrator_sentences(pack, [c.narrative for c in commits])
    repeated = {s: n for s, n in counts.items() if n > 2}
    assert not repeated, repeated
    assert sum(counts.values()) > 100  # the narrator said plenty of its own


@pytest.mark.parametrize("story", builtin_pack_ids())
async def test_another_version_is_another_telling_and_the_deed_is_not_always_held_back(story: str) -> None:
    pack = load_pack(story)
    session = Session(pack, OfflineNarrator(pack, seed=0))
    done_again = held_back = 0
    for line in _script(story)[:30]:
        tellings = [[e async for e in session.play(line) if isinstance(e, TurnCommitted)][-1]]
        for _ in range(2):
            events = [e async for e in session.regenerate()]
            assert not [e for e in events if isinstance(e, TurnFailed)], f"another version of {line!r} failed"
            tellings += [[e for e in events if isinstance(e, TurnCommitted)][-1]]
        for index, version in enumerate(tellings[1:], 1):
            earlier = narrator_sentences(pack, [t.narrative for t in tellings[:index]])
            new = set(narrator_sentences(pack, [version.narrative])) - set(earlier)
            assert new, (line, [t.narrative for t in tellings[: index + 1]])
            if tellings[0].state_patch:
                done_again += bool(version.state_patch)
                held_back += not version.state_patch
        session.choose(1)
    assert done_again and held_back
