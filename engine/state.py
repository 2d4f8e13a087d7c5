"""The world state: plain JSON, checked by a pydantic model built from the pack."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, create_model

from storyloom.engine.packs import RESERVED_PLACES, StoryPack

WorldState = dict[str, Any]
"""`{"location": room, "items": {id: place}, "stats": {id: int}, "flags": {id: bool}}`.

Treated as immutable: every change is made to a copy.
"""


def initial_state(pack: StoryPack) -> WorldState:
    """The state a new story starts in."""
    return {
        "location": pack.start,
        "items": {item_id: item.at for item_id, item in pack.items.items()},
        "stats": {stat_id: stat.initial for stat_id, stat in pack.stats.items()},
        "flags": dict(pack.flags),
    }


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
"""What `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)`
makes for each call, made once (it keeps nothing between calls)."""


def canonical_json(value: Any) -> str:
    """The one JSON spelling of a value: sorted keys, no spaces, UTF-8 as is."""
    return _CANONICAL.encode(value)


def state_hash(state: WorldState) -> str:
    """sha256 of the canonical JSON of a state: equal states, equal hashes."""
    return hashlib.sha256(canonical_json(state).encode()).hexdigest()


_MODELS: dict[str, type[BaseModel]] = {}


def state_model(pack: StoryPack) -> type[BaseModel]:
    """The pydantic model of a state of this pack (built once per pack content)."""
    model = _MODELS.get(pack.digest)
    if model is None:
        model = _build_state_model(pack)
        _MODELS[pack.digest] = model
    return model


_SHAPES: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str], frozenset[str]]] = {}
_SECTIONS = frozenset({"location", "items", "stats", "flags"})
_STR, _INT, _BOOL = frozenset({str}), frozenset({int}), frozenset({bool})


def plainly_valid(state: Any, pack: StoryPack) -> bool:
    """A quick yes: True only when `state_model(pack)` accepts the state (its four sections, each
    member declared and of its kind, a place a room or a reserved place); False leaves it to the
    model, which names what is wrong. A judged turn's state is read with a few set operations."""
    shape = _SHAPES.get(pack.digest)
    if shape is None:
        shape = _SHAPES[pack.digest] = (
            frozenset(pack.rooms),
            frozenset(pack.rooms) | frozenset(RESERVED_PLACES),
            frozenset(pack.items),
            frozenset(pack.stats),
            frozenset(pack.flags),
        )
    rooms, places, items, stats, flags = shape
    if type(state) is not dict or state.keys() != _SECTIONS:
        return False
    location, placed, counted, flagged = state["location"], state["items"], state["stats"], state["flags"]
    if type(location) is not str or type(placed) is not dict or type(counted) is not dict or type(flagged) is not dict:
        return False
    return (
        location in rooms
        and placed.keys() == items
        and counted.keys() == stats
        and flagged.keys() == flags
        and _STR.issuperset(map(type, placed.values()))  # strings (hashable) before they are looked up
        and places.issuperset(placed.values())
        and _INT.issuperset(map(type, counted.values()))
        and _BOOL.issuperset(map(type, flagged.values()))
    )


def _build_state_model(pack: StoryPack) -> type[BaseModel]:
    strict = ConfigDict(extra="forbid", strict=True)
    places = Literal[tuple(pack.rooms) + RESERVED_PLACES]  # type: ignore[valid-type]
    rooms = Literal[tuple(pack.rooms)]  # type: ignore[valid-type]
    item_fields: dict[str, Any] = {i: (places, ...) for i in pack.items}
    stat_fields: dict[str, Any] = {s: (StrictInt, ...) for s in pack.stats}
    flag_fields: dict[str, Any] = {f: (StrictBool, ...) for f in pack.flags}
    items = create_model("Items", __config__=strict, **item_fields)
    stats = create_model("Stats", __config__=strict, **stat_fields)
    flags = create_model("Flags", __config__=strict, **flag_fields)
    sections: dict[str, Any] = {
        "location": (rooms, ...),
        "items": (items, ...),
        "stats": (stats, ...),
        "flags": (flags, ...),
    }
    return create_model("WorldStateModel", __config__=strict, **sections)


def describe_place(pack: StoryPack, place: str) -> str:
    """A place as a player would say it."""
    if place in pack.rooms:
        return pack.rooms[place].name
    return {"player": "the player's inventory", "nowhere": "nowhere (out of play)"}.get(place, place)
