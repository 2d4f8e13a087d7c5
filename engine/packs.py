"""Story packs: the world a story is played in, loaded from TOML.

A pack is the authority every turn is checked against, so a broken pack is
refused whole, with every problem listed (file, key and line where known),
rather than failing halfway through a story. What a pack declares is
`engine/story_pack.py`; this module loads and checks one (and re-exports the declarations).
"""

from __future__ import annotations

import copy
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from storyloom.engine.builtin import builtin_pack_ids, builtin_pack_text
from storyloom.engine.files import read_regular_file
from storyloom.engine.story_pack import (
    ANY_COMMAND,
    DIRECTIONS,
    NOWHERE,
    PANEL_DEFAULT,
    PANEL_SECTIONS,
    PLAYER,
    RESERVED_PLACES,
    Action,
    Condition,
    Described,
    Effects,
    Ending,
    Free,
    Item,
    Room,
    Stat,
    StoryPack,
)

__all__ = [  # what a pack declares (engine/story_pack.py), and loading and checking one
    "ANY_COMMAND",
    "DIRECTIONS",
    "NOWHERE",
    "PACK_MAX_BYTES",
    "PANEL_DEFAULT",
    "PANEL_SECTIONS",
    "PLAYER",
    "RESERVED_PLACES",
    "Action",
    "Condition",
    "Described",
    "Effects",
    "Ending",
    "Free",
    "Item",
    "PackError",
    "PackProblem",
    "Room",
    "Stat",
    "StoryPack",
    "load_pack",
    "parse_pack",
]


@dataclass(frozen=True)
class PackProblem:
    """One thing wrong with a pack, located as precisely as we can."""

    file: str
    key: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.key}: {self.message}"


class PackError(Exception):
    """A story pack that cannot be played, with every problem found."""

    def __init__(self, problems: list[PackProblem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


PACK_MAX_BYTES = 8 << 20
"""The largest story pack file read (8 MB; the built-in stories are a few kB)."""


def load_pack(ref: str | Path) -> StoryPack:
    """Load a built-in pack by id, or a pack file by path.

    Raises:
        PackError: the pack is missing or broken; every problem is listed.
    """
    ref_text = str(ref)
    if isinstance(ref, str) and ref in builtin_pack_ids():
        return parse_pack(builtin_pack_text(ref), f"{ref}.toml")
    path = Path(ref)
    try:
        text = read_regular_file(path, PACK_MAX_BYTES).decode("utf-8")
    except FileNotFoundError:
        known = ", ".join(builtin_pack_ids())
        raise PackError(
            [PackProblem(ref_text, "-", f"no such story file or built-in story (built-in: {known})")]
        ) from None
    except OSError as exc:  # a pipe or a device, a folder, too large, no permission
        raise PackError([PackProblem(ref_text, "-", f"cannot read the file: {exc.strerror or exc}")]) from None
    except UnicodeDecodeError as exc:
        raise PackError([PackProblem(ref_text, "-", f"cannot read the file: {exc}")]) from None
    return parse_pack(text, ref_text)


_TOML_LINE = re.compile(r"\(at line (\d+), column \d+\)")


def parse_pack(text: str, file: str = "<pack>") -> StoryPack:
    """Parse and check a pack's TOML text; see `load_pack`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_LINE.search(str(exc))
        line = int(match.group(1)) if match else None
        raise PackError([PackProblem(file, "-", f"not valid TOML: {exc}", line)]) from None
    except RecursionError:
        raise PackError([PackProblem(file, "-", "not a story pack: its values are nested too deeply")]) from None
    locate = _Locator(text)
    try:
        return _checked(StoryPack.model_validate(data), file, locate)
    except ValidationError as exc:
        errors = exc.errors()
    problems = [PackProblem(file, _dotted(e["loc"]), _pydantic_message(e), locate(_dotted(e["loc"]))) for e in errors]
    stood_in = _with_stand_ins(data, errors)
    if stood_in is not None:  # the rest of the pack can still be cross-checked: list those problems too
        pack, replaced = stood_in
        problems += [
            PackProblem(file, key, message, locate(key))
            for key, message in _world_problems(pack)
            if _entity(key) not in replaced
        ]
    problems.sort(key=lambda p: p.line if p.line is not None else 1 << 30)
    raise PackError(problems)


def _checked(pack: StoryPack, file: str, locate: _Locator) -> StoryPack:
    problems = [PackProblem(file, key, message, locate(key)) for key, message in _world_problems(pack)]
    if problems:
        raise PackError(problems)
    return pack


def _dotted(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "-"


_SECTIONS = frozenset({"rooms", "items", "stats", "flags", "actions", "endings", "free"})


def _entity(key: str) -> str:
    """The declaration a problem's key belongs to: `rooms.hall.exits.north` -> `rooms.hall`, `start` -> `start`."""
    parts = key.split(".")
    return ".".join(parts[:2] if parts[0] in _SECTIONS else parts[:1])


_STAND_IN_ROUNDS = 4


def _with_stand_ins(data: dict[str, Any], errors: list[ErrorDetails]) -> tuple[StoryPack, set[str]] | None:
    """The pack with every value the schema refused stood in for, and the declarations that were.

    An author fixing a pack wants every problem at once, not one fix at a time: with unknown keys
    dropped and each bad or missing value replaced by a harmless one of the right type, the
    cross-references (start room, exits, places, actions) can be checked too. Problems in a
    declaration that was stood in for are not reported: they would be about the stand-in, not
    the author's text. None when the pack cannot be made whole (then only the schema's problems show).
    """
    data = copy.deepcopy(data)
    replaced: set[str] = set()
    for _ in range(_STAND_IN_ROUNDS):
        for error in errors:
            loc = error["loc"]
            parent = _walk(data, loc[:-1])
            if not isinstance(parent, (dict, list)) or not loc:
                return None
            if error["type"] == "extra_forbidden":
                if isinstance(parent, dict):
                    parent.pop(loc[-1], None)
                continue
            stand_in = _stand_in(_annotation_at(loc))
            if stand_in is _NO_STAND_IN:
                return None
            parent[loc[-1]] = stand_in  # type: ignore[index]
            replaced.add(_entity(_dotted(loc)))
        try:
            return StoryPack.model_validate(data), replaced
        except ValidationError as exc:
            errors = exc.errors()
    return None


def _walk(data: Any, loc: tuple[int | str, ...]) -> Any:
    for part in loc:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


def _annotation_at(loc: tuple[int | str, ...]) -> Any:
    """The declared type of the value at `loc` in a `StoryPack`."""
    annotation: Any = StoryPack
    for part in loc:
        annotation = _not_none(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(str(part))
            if field is None:
                return None
            annotation = field.annotation
        elif get_origin(annotation) is dict:
            annotation = get_args(annotation)[1]
        elif get_origin(annotation) is list:
            annotation = get_args(annotation)[0]
        else:
            return None
    return _not_none(annotation)


def _not_none(annotation: Any) -> Any:
    if isinstance(annotation, UnionType):
        return next(a for a in get_args(annotation) if a is not type(None))
    return annotation


_NO_STAND_IN = object()


def _stand_in(annotation: Any) -> Any:
    if annotation is str:
        return "x"
    if annotation is bool:
        return False
    if annotation is int:
        return 0
    if get_origin(annotation) is list:
        return ["x"]
    if get_origin(annotation) is dict or (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        return {}
    return _NO_STAND_IN


def _pydantic_message(error: ErrorDetails) -> str:
    if error["type"] == "extra_forbidden":
        parent = _annotation_at(error["loc"][:-1])
        if isinstance(parent, type) and issubclass(parent, BaseModel):
            return f"unknown key (check its spelling): the keys here are {', '.join(parent.model_fields)}"
        return "unknown key (check its spelling)"
    if error["type"] == "missing":
        return "required key is missing"
    if error["type"] in _TYPE_WORDS:
        return f"must be {_TYPE_WORDS[error['type']]}, not {error.get('input')!r}"
    return str(error["msg"])


_TYPE_WORDS = {
    "bool_type": "true or false",
    "int_type": "a whole number",
    "string_type": 'text in quotes ("...")',
    "list_type": 'a list in brackets (["...", "..."])',
    "dict_type": "a table ({ key = value } or a [section])",
    "model_type": "a table ({ key = value } or a [section])",
}
"""What a value of the wrong kind must be instead, in a pack author's words."""


def _world_problems(pack: StoryPack) -> list[tuple[str, str]]:
    """Cross-references that the schema alone cannot check."""
    found: list[tuple[str, str]] = []
    if pack.start not in pack.rooms:
        found.append(("start", f"start room {pack.start!r} is not a declared room"))
    found += _id_problems(pack)
    found += _room_problems(pack)
    found += _item_problems(pack)
    found += _stat_problems(pack)
    found += _description_problems(pack)
    found += _visible_problems(pack)
    found += _action_problems(pack)
    for ending_id, ending in pack.endings.items():
        found += _condition_problems(f"endings.{ending_id}.when", ending.when, pack)
    found += _free_problems(pack)
    return found


def _id_problems(pack: StoryPack) -> list[tuple[str, str]]:
    """Every id names one thing: not a reserved place, not declared in two sections."""
    found = []
    seen_ids: dict[str, str] = {}
    for section, ids in (("rooms", pack.rooms), ("items", pack.items), ("stats", pack.stats), ("flags", pack.flags)):
        for ident in ids:
            if ident in RESERVED_PLACES:
                found.append((f"{section}.{ident}", f"{ident!r} is reserved for item places"))
            if ident in seen_ids:
                found.append((f"{section}.{ident}", f"duplicate id {ident!r}: also declared in [{seen_ids[ident]}]"))
            seen_ids.setdefault(ident, section)
    return found


def _room_problems(pack: StoryPack) -> list[tuple[str, str]]:
    """Exits lead to rooms in known directions; gates close exits with declared flags."""
    found = []
    for room_id, room in pack.rooms.items():
        for direction, target in room.exits.items():
            key = f"rooms.{room_id}.exits.{direction}"
            if direction not in DIRECTIONS:
                found.append((key, f"unknown direction {direction!r}: an exit is one of {', '.join(DIRECTIONS)}"))
            if target not in pack.rooms:
                found.append((key, f"exit leads to unknown room {target!r}{_known('rooms', pack.rooms)}"))
        for direction, flag in room.gates.items():
            if direction not in room.exits:
                found.append((f"rooms.{room_id}.gates.{direction}", f"gate on {direction!r}, which is not an exit"))
            if flag not in pack.flags:
                found.append(
                    (
                        f"rooms.{room_id}.gates.{direction}",
                        f"gate names unknown flag {flag!r}{_known('flags', pack.flags)}",
                    )
                )
    return found


def _item_problems(pack: StoryPack) -> list[tuple[str, str]]:
    """Items start in known places, and no word names two of them."""
    places = set(pack.rooms) | set(RESERVED_PLACES)
    found = []
    words: dict[str, str] = {}
    for item_id, item in pack.items.items():
        if item.at not in places:
            found.append((f"items.{item_id}.at", f"item placed in unknown room {item.at!r}{_places(pack)}"))
        for word in {w.lower() for w in (item.name, *item.aliases)}:
            if word in words and words[word] != item_id:
                found.append((f"items.{item_id}.aliases", f"duplicate alias {word!r}: also names item {words[word]!r}"))
            words.setdefault(word, item_id)
    return found


def _stat_problems(pack: StoryPack) -> list[tuple[str, str]]:
    found = []
    for stat_id, stat in pack.stats.items():
        if stat.min > stat.max:
            found.append((f"stats.{stat_id}", f"min {stat.min} is above max {stat.max}"))
        elif not stat.min <= stat.initial <= stat.max:
            found.append((f"stats.{stat_id}.initial", f"initial {stat.initial} is outside {stat.min}..{stat.max}"))
    return found


def _description_problems(pack: StoryPack) -> list[tuple[str, str]]:
    """The conditions that choose a room's or an item's description (darkness first)."""
    found: list[tuple[str, str]] = []
    for room_id, room in pack.rooms.items():
        if room.dark is not None:
            found += _condition_problems(f"rooms.{room_id}.dark", room.dark, pack)
    for section, described in (("rooms", pack.rooms), ("items", pack.items)):
        for ident, thing in described.items():
            for index, variant in enumerate(thing.descriptions):
                found += _condition_problems(f"{section}.{ident}.descriptions.{index}.when", variant.when, pack)
    return found


def _visible_problems(pack: StoryPack) -> list[tuple[str, str]]:
    return [
        ("visible", f"{name!r} is not something the panel can show: {', '.join(PANEL_SECTIONS)}, or a stat or flag id")
        for name in pack.visible
        if name not in PANEL_SECTIONS and name not in pack.stats and name not in pack.flags
    ]


def _action_problems(pack: StoryPack) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for action_id, action in pack.actions.items():
        key = f"actions.{action_id}"
        if action.item is not None and action.item not in pack.items:
            found.append((f"{key}.item", f"unknown item {action.item!r}{_known('items', pack.items)}"))
        if action.room is not None and action.room not in pack.rooms:
            found.append((f"{key}.room", f"unknown room {action.room!r}{_known('rooms', pack.rooms)}"))
        found += _trigger_problems(key, action)
        found += _condition_problems(f"{key}.requires", action.requires, pack)
        found += _effects_problems(f"{key}.effects", action.effects, pack)
    return found


def _trigger_problems(key: str, action: Action) -> list[tuple[str, str]]:
    """How a command reaches the action: by its verbs, its direction, or as its room's catch-all."""
    found = []
    if not action.verbs and action.direction is None:
        found.append((f"{key}.verbs", "an action needs `verbs`, a `direction`, or both"))
    if action.direction is not None:
        if action.direction not in DIRECTIONS:
            known = ", ".join(DIRECTIONS)
            found.append((f"{key}.direction", f"unknown direction {action.direction!r}: one of {known}"))
        if action.room is None:
            found.append((f"{key}.room", "an action with a `direction` needs the `room` it is taken from"))
    if action.catch_all:
        if action.room is None:
            found.append((f"{key}.room", 'a catch-all (verb "*") needs the `room` it catches commands in'))
        if action.item is not None or len(action.verbs) > 1:
            found.append((f"{key}.verbs", 'a catch-all (verb "*") has no other verb and no `item`'))
    return found


def _free_problems(pack: StoryPack) -> list[tuple[str, str]]:
    free = pack.free
    named = (("flags", free.flags, pack.flags), ("stats", free.stats, pack.stats), ("items", free.items, pack.items))
    return [
        (f"free.{section}", f"unknown {section[:-1]} {ident!r}{_known(section, declared)}")
        for section, idents, declared in named
        for ident in idents
        if ident not in declared
    ]


def _condition_problems(key: str, cond: Condition, pack: StoryPack) -> list[tuple[str, str]]:
    found = []
    if cond.location is not None and cond.location not in pack.rooms:
        found.append((f"{key}.location", f"unknown room {cond.location!r}{_known('rooms', pack.rooms)}"))
    found += _refs(f"{key}.items", cond.items, pack.items, "item")
    found += [
        (f"{key}.items.{i}", f"unknown place {at!r}{_places(pack)}")
        for i, at in cond.items.items()
        if at not in pack.rooms and at not in RESERVED_PLACES
    ]
    found += _refs(f"{key}.flags", cond.flags, pack.flags, "flag")
    found += _refs(f"{key}.stats_at_least", cond.stats_at_least, pack.stats, "stat")
    found += _refs(f"{key}.stats_at_most", cond.stats_at_most, pack.stats, "stat")
    for index, other in enumerate(cond.unless):
        found += _condition_problems(f"{key}.unless.{index}", other, pack)
    return found


def _effects_problems(key: str, effects: Effects, pack: StoryPack) -> list[tuple[str, str]]:
    found = _refs(f"{key}.items", effects.items, pack.items, "item")
    found += [
        (f"{key}.items.{i}", f"unknown place {at!r}{_places(pack)}")
        for i, at in effects.items.items()
        if at not in pack.rooms and at not in RESERVED_PLACES
    ]
    found += _refs(f"{key}.flags", effects.flags, pack.flags, "flag")
    found += _refs(f"{key}.stats", effects.stats, pack.stats, "stat")
    return found


def _refs(key: str, used: dict[str, Any], declared: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    known = _known(f"{kind}s", declared)
    return [(f"{key}.{ident}", f"unknown {kind} {ident!r}{known}") for ident in used if ident not in declared]


def _known(kinds: str, declared: dict[str, Any] | list[str]) -> str:
    """What may stand where an unknown id was written: ": the flags are lit, open" (or that none is declared)."""
    return f": the {kinds} are {', '.join(declared)}" if declared else f": the pack declares no {kinds}"


def _places(pack: StoryPack) -> str:
    """The places an item may be: its rooms, "player" and "nowhere"."""
    return _known("places", [*pack.rooms, *RESERVED_PLACES])


class _Locator:
    """Finds the line where a dotted key is written, for problem reports."""

    def __init__(self, text: str):
        self.lines = text.splitlines()

    def __call__(self, key: str) -> int | None:
        parts = key.split(".")
        for depth in range(len(parts), 0, -1):
            header = re.compile(r"^\s*\[+\s*" + r"\s*\.\s*".join(map(re.escape, parts[:depth])) + r"\s*\]+")
            for number, line in enumerate(self.lines, 1):
                if header.match(line):
                    rest = parts[depth:]
                    return self._key_after(number, rest[0]) if rest else number
        top = re.compile(rf"^\s*{re.escape(parts[0])}\s*=")
        for number, line in enumerate(self.lines, 1):
            if top.match(line):
                return number
        return None

    def _key_after(self, start: int, key: str) -> int:
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=|[{{,]\s*{re.escape(key)}\s*=")
        for number in range(start, len(self.lines)):
            line = self.lines[number]
            if line.lstrip().startswith("["):
                break
            if pattern.search(line):
                return number + 1
        return start
