"""What a story pack declares: its rooms, items, stats, flags, actions, free keys and endings, as
pydantic models (`StoryPack`), with the words and descriptions the story reads from them.

Loading a pack from TOML and checking it whole is `engine/packs.py`, which re-exports these.
"""

from __future__ import annotations

import hashlib
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

PLAYER = "player"
NOWHERE = "nowhere"
RESERVED_PLACES = (PLAYER, NOWHERE)
DIRECTIONS = (
    "north",
    "south",
    "east",
    "west",
    "northeast",
    "northwest",
    "southeast",
    "southwest",
    "up",
    "down",
    "in",
    "out",
)
"""The exit names a pack may use: every narrator, the offline parser and its prose know exactly these."""


PANEL_SECTIONS = ("room", "items", "stats", "flags")
PANEL_DEFAULT = ("room", "items", "stats")
"""What a story's side panel shows unless the pack says otherwise (`visible`)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Room(_Strict):
    """A place the player can stand in."""

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    aliases: list[str] = []
    exits: dict[str, str] = {}
    gates: dict[str, str] = {}
    """Exit direction -> flag that must be true for the exit to be passable."""
    descriptions: list[Described] = []
    """Descriptions for states the story reaches (the first whose `when` holds stands in for `description`)."""
    dark: Condition | None = None
    """While this holds the room is dark: nothing lying in it can be seen, reached, taken or used."""
    dark_text: str = "It is pitch dark. You cannot see a thing."

    def description_in(self, state: dict[str, Any]) -> str:
        """What the room looks like in this state."""
        if self.is_dark(state):
            return self.dark_text
        return _described(self.descriptions, state, self.description)

    def is_dark(self, state: dict[str, Any]) -> bool:
        """Whether the room is dark in this state (see `dark`)."""
        return self.dark is not None and self.dark.holds(state)


class Item(_Strict):
    """A thing in the world: carried, lying in a room, or nowhere yet."""

    name: str = Field(min_length=1)
    description: str = ""
    aliases: list[str] = []
    at: str
    portable: bool = True
    descriptions: list[Described] = []
    """As a room's: the first whose `when` holds stands in for `description`."""

    def description_in(self, state: dict[str, Any]) -> str:
        """What the item looks like in this state."""
        return _described(self.descriptions, state, self.description)


class Stat(_Strict):
    """A bounded whole number the story tracks (health, oil, courage)."""

    initial: int
    min: int
    max: int
    label: str = ""


class Condition(_Strict):
    """What must hold of the state: a room's darkness, a description's `when`, an action's `requires`,
    an ending's `when`. Every part must hold; `unless` holds when none of its conditions does, which
    says "not" and "or" ("dark unless the lit lamp is carried or lying here")."""

    location: str | None = None
    items: dict[str, str] = {}
    flags: dict[str, bool] = {}
    stats_at_least: dict[str, int] = {}
    stats_at_most: dict[str, int] = {}
    unless: list[Condition] = []

    @model_serializer(mode="wrap")
    def _without_empty_unless(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A condition without `unless` dumps as it did before there was one (a pack's digest is kept)."""
        dumped: dict[str, Any] = handler(self)
        if not self.unless:
            dumped.pop("unless", None)
        return dumped

    def holds(self, state: dict[str, Any]) -> bool:
        """Whether the state satisfies every part of this condition."""
        if self.location is not None and state["location"] != self.location:
            return False
        # each part asked only when it has members: a pack's conditions are asked of every turn
        if self.unless and any(other.holds(state) for other in self.unless):
            return False
        if self.items and any(state["items"].get(i) != at for i, at in self.items.items()):
            return False
        if self.flags and any(state["flags"].get(f) != v for f, v in self.flags.items()):
            return False
        if self.stats_at_least and any(state["stats"].get(s, 0) < v for s, v in self.stats_at_least.items()):
            return False
        return not self.stats_at_most or all(state["stats"].get(s, 0) <= v for s, v in self.stats_at_most.items())


class Described(_Strict):
    """A room's or item's description while a condition holds: the lamp once it has oil, a door once open.

    Kept to one `Condition` so a richer conditions language can take it over whole.
    """

    when: Condition
    text: str = Field(min_length=1)


def _described(descriptions: list[Described], state: dict[str, Any], usual: str) -> str:
    return next((d.text for d in descriptions if d.when.holds(state)), usual)


Room.model_rebuild()
Item.model_rebuild()


class Effects(_Strict):
    """What an action changes: item places, flags, and stat deltas."""

    items: dict[str, str] = {}
    flags: dict[str, bool] = {}
    stats: dict[str, int] = {}


ANY_COMMAND = "*"
"""The verb of a room's catch-all action: every command there but a move through one of its exits."""


class Action(_Strict):
    """A story-specific deed, such as lighting the beacon with the matches.

    A command reaches an action by one of its `verbs` (and its `item`, if it has one), by going
    its `direction`, or, for the verb `"*"`, by being any command in its room but a move through
    an exit. Narrators use actions to know what `use`, `open` and the like can do; the rules
    still judge the resulting patch like any other.
    """

    verbs: list[str] = []
    direction: str | None = None
    """Going this way (`n`, `north`, `go north`) in the action's room does the action instead."""
    item: str | None = None
    room: str | None = None
    requires: Condition = Condition()
    effects: Effects = Effects()
    text: str = Field(min_length=1)
    refusal: str = ""
    """Prose for when the verb and item match but `requires` does not hold."""
    done: str = ""
    """Prose for when the action is already done (every flag and item place it sets holds already):
    it wins over `refusal`, and over the narrator's own "It is already done."."""
    suggest: bool = True
    """Whether the offline narrator may offer it as a suggestion."""

    @property
    def catch_all(self) -> bool:
        """Whether this is its room's catch-all (verb `"*"`)."""
        return ANY_COMMAND in self.verbs

    @property
    def refuses(self) -> bool:
        """Whether it changes nothing: a deed it answers (a way, a drop) is refused in the story's words."""
        effects = self.effects
        return not (effects.flags or effects.items or effects.stats)


class Free(_Strict):
    """What the narrator may change at will, outside the story's actions (see `storyloom.engine.story`).

    Every other flag and stat, and every item's place (beyond taking and dropping it), changes
    only as the effect of an action whose requirements hold: a story that wants its narrator
    to improvise names here what it may improvise with.
    """

    flags: list[str] = []
    stats: list[str] = []
    items: list[str] = []


class Ending(_Strict):
    """A state that ends the story, with its closing prose."""

    title: str = Field(min_length=1)
    text: str = Field(min_length=1)
    when: Condition


class StoryPack(_Strict):
    """A whole story: its world, its voice, its actions and its endings."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    title: str = Field(min_length=1)
    intro: str = Field(min_length=1)
    style: str = ""
    start: str
    rooms: dict[str, Room] = Field(min_length=1)
    items: dict[str, Item] = {}
    stats: dict[str, Stat] = {}
    flags: dict[str, bool] = {}
    actions: dict[str, Action] = {}
    endings: dict[str, Ending] = {}
    free: Free = Free()
    """Flags, stats and items the narrator may change without an action."""
    visible: list[str] = list(PANEL_DEFAULT)
    """What the side panel shows: "room", "items" (carried), "stats", "flags" (all), or a stat or flag id;
    the rest of the world shows only on the details screen, so a flag cannot give the plot away."""
    intro_room: bool = False
    """Whether the intro goes on with the start room, as `look` would show it when the story begins."""

    @model_validator(mode="after")
    def _intro_then_room(self) -> StoryPack:
        if not self.intro_room or self.start not in self.rooms:
            return self
        room = self.rooms[self.start]
        state = {
            "location": self.start,
            "items": {i: item.at for i, item in self.items.items()},
            "flags": dict(self.flags),
            "stats": {s: stat.initial for s, stat in self.stats.items()},
        }
        room_part = f"\n\n{room.name}\n\n{room.description_in(state)}"
        if not self.intro.endswith(room_part):  # a pack validated again (from its own dump) keeps one room
            object.__setattr__(self, "intro", self.intro.rstrip() + room_part)
        return self

    @cached_property
    def digest(self) -> str:
        """A hash of the pack's content, so a save can tell the pack changed."""
        canonical = self.model_dump_json(round_trip=True, exclude=self._unused_later_keys())
        return hashlib.sha256(canonical.encode()).hexdigest()

    def _unused_later_keys(self) -> dict[str, Any]:
        """Keys added to packs after saves existed, where a pack leaves them at their default: left out
        of the digest, so a story that does not use them keeps the digest its saves recorded."""
        unused: dict[str, Any] = {name: True for name in _LATER_FIELDS if name not in self.model_fields_set}
        if tuple(self.visible) == PANEL_DEFAULT:
            unused["visible"] = True
        for section, things in (("rooms", self.rooms), ("items", self.items), ("actions", self.actions)):
            plain: dict[str, set[str]] = {}
            for ident, thing in things.items():
                later = {k for k in _LATER_ENTITY_FIELDS[section] if k not in thing.model_fields_set}
                if not getattr(thing, "descriptions", True):
                    later.add("descriptions")
                if later:
                    plain[ident] = later
            if plain:
                unused[section] = plain
        return unused

    def item_words(self, item_id: str) -> tuple[str, ...]:
        """Every word a narrative or a player may use for an item."""
        item = self.items[item_id]
        return (item.name, *item.aliases)

    def room_words(self, room_id: str) -> tuple[str, ...]:
        """Every word a narrative or a player may use for a room."""
        room = self.rooms[room_id]
        return (room.name, *room.aliases)


_LATER_FIELDS = ("free", "intro_room")
_LATER_ENTITY_FIELDS = {
    "rooms": ("dark", "dark_text"),
    "items": (),
    "actions": ("direction", "suggest", "done"),
}
"""Keys of rooms, items and actions added since the first saves, left out of the digest where unset."""
"""`StoryPack` fields added since the first saves, left out of the digest of a pack that does not set them."""
