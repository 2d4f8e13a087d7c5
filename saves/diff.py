"""Comparing two paths of a story: two saves, or two branches of one save (`storyloom diff`).

Each side is one path, read as the export reads it (every commit re-judged, `read_story`): its
standing turns in their chosen versions, and the world and ending it stands at. Two paths share a
start as long as their turns are the same turn (number, command, prose and world): two branches of
one save share exactly the turns before their fork (and the fork turn, unless a branch chose
another version of it); two runs of one script share turns until a seed or a model first wrote one
otherwise. What comes after is each path's own; the worlds at the ends are compared by what a
player sees of them: the room, where each item is, the flags and the stats.

Nothing here prints: `storyloom.tui.cli.diff` lays this out for the terminal or as JSON. Text in
it is the saves' own (untrusted, written partly by a model): whoever shows it makes it safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storyloom.engine.packs import StoryPack
from storyloom.engine.state import WorldState
from storyloom.saves.errors import SaveUnreadable
from storyloom.saves.export import CommittedTurn, SavedStory, read_story
from storyloom.saves.reader import read_through
from storyloom.saves.verify import open_pack


@dataclass(frozen=True)
class Side:
    """One path compared: which save and branch, its standing turns, and where it ends."""

    path: Path
    branch: int
    branches: int
    turns: tuple[CommittedTurn, ...]
    state: WorldState
    ending: str | None
    """The title of the ending its path reached, or None."""
    pack: StoryPack


@dataclass(frozen=True)
class WorldDifference:
    """One thing of the world that differs at the ends: `section` is room, items, flags or stats."""

    section: str
    key: str
    a: Any
    b: Any


@dataclass(frozen=True)
class PathDiff:
    """Where two paths part, what each did after, and how their worlds differ at the ends."""

    a: Side
    b: Side
    common: int
    """How many turns both paths start with."""
    world: tuple[WorldDifference, ...]

    @property
    def identical(self) -> bool:
        return self.common == len(self.a.turns) == len(self.b.turns) and not self.world

    @property
    def fork(self) -> CommittedTurn | None:
        """The last turn both paths share (None: they share no start)."""
        return self.a.turns[self.common - 1] if self.common else None

    @property
    def a_after(self) -> tuple[CommittedTurn, ...]:
        return self.a.turns[self.common :]

    @property
    def b_after(self) -> tuple[CommittedTurn, ...]:
        return self.b.turns[self.common :]


def read_side(ref: Path, branch: int | None = None) -> Side:
    """One path of a save (default: the branch played last), judged as verify judges it.

    Raises:
        SaveError: as `storyloom export` (damage, a changed story, no such branch).
    """
    story, _ = read_through(
        ref,
        lambda header, records, time: read_story(
            ref, header, records, open_pack(header, ref), header_time=time, branch=branch
        ),
    )
    return _side(ref, story)


def _side(path: Path, story: SavedStory) -> Side:
    turns = tuple(t for t in story.turns if t.chosen and not t.undone)
    ending = story.ending
    return Side(
        path, story.branch, story.branches, turns, story.state, None if ending is None else ending.title, story.pack
    )


def compare(a: Side, b: Side) -> PathDiff:
    """Where the paths part and how their worlds differ at the ends.

    Raises:
        SaveUnreadable: the two are of different stories (their worlds cannot be compared).
    """
    if a.pack.id != b.pack.id or a.pack.digest != b.pack.digest:
        raise SaveUnreadable(
            b.path,
            f"it is a save of the story {b.pack.id!r} ({b.pack.digest[:12]}…), not of "
            f"{a.pack.id!r} ({a.pack.digest[:12]}…) like {a.path}: two paths of one story are compared",
        )
    common = 0
    for left, right in zip(a.turns, b.turns, strict=False):
        if (left.turn, left.player_input, left.narrative, left.state_hash) != (
            right.turn,
            right.player_input,
            right.narrative,
            right.state_hash,
        ):
            break
        common += 1
    return PathDiff(a, b, common, world_differences(a.state, b.state))


def world_differences(a: WorldState, b: WorldState) -> tuple[WorldDifference, ...]:
    """What differs between two worlds of one story, in a player's order: room, items, flags, stats."""
    found: list[WorldDifference] = []
    if a.get("location") != b.get("location"):
        found.append(WorldDifference("room", "", a.get("location"), b.get("location")))
    for section in ("items", "flags", "stats"):
        left, right = a.get(section, {}), b.get(section, {})
        for key in sorted(set(left) | set(right)):
            if left.get(key) != right.get(key):
                found.append(WorldDifference(section, key, left.get(key), right.get(key)))
    return tuple(found)
