"""What the offline narrator understands: a player's line turned into a command.

The parser knows nothing about prose or faults. It resolves the words a player
types (verbs, directions, item and room names or aliases, articles ignored)
against the pack, so the narrator can decide what happens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from storyloom.engine.packs import ANY_COMMAND, Action, StoryPack
from storyloom.engine.story import DROP_VERBS

ARTICLES = frozenset({"the", "a", "an", "some", "this", "that", "my", "your", "to", "at", "towards", "toward"})

DIRECTION_WORDS: dict[str, str] = {
    "n": "north",
    "s": "south",
    "e": "east",
    "w": "west",
    "u": "up",
    "d": "down",
    "ne": "northeast",
    "nw": "northwest",
    "se": "southeast",
    "sw": "southwest",
    "north": "north",
    "south": "south",
    "east": "east",
    "west": "west",
    "up": "up",
    "down": "down",
    "northeast": "northeast",
    "northwest": "northwest",
    "southeast": "southeast",
    "southwest": "southwest",
    "north-east": "northeast",
    "north-west": "northwest",
    "south-east": "southeast",
    "south-west": "southwest",
    "in": "in",
    "inside": "in",
    "enter": "in",
    "out": "out",
    "outside": "out",
    "exit": "out",
    "leave": "out",
    "upstairs": "up",
    "downstairs": "down",
}

_MOVE_VERBS = (
    "go",
    "walk",
    "run",
    "head",
    "move",
    "travel",
    "climb",
    "step",
    "go to",
    "walk to",
    "climb up",
    "enter",
    "go into",
)
_TAKE_VERBS = ("take", "get", "grab", "pick up", "collect", "carry", "pocket", "lift")
_DROP_VERBS = DROP_VERBS
_LOOK_VERBS = ("look", "l", "look around")
_EXAMINE_VERBS = (
    "examine",
    "x",
    "inspect",
    "look",
    "look at",
    "look in",
    "look into",
    "study",
    "read",
    "check",
    "search",
)
_INVENTORY = ("inventory", "i", "inv", "items")
_WAIT = ("wait", "z", "rest", "sleep")
_HELP = ("help", "?", "hint", "hints", "commands")
_ALL = frozenset({"all", "everything"})


@dataclass(frozen=True)
class Command:
    """A player's line, understood.

    Attributes:
        verb: one of look, examine, go, take, drop, inventory, use, open, close, wait,
            help, action (a pack-specific verb) or unknown.
        word: the verb as the player typed it (for in-character replies).
        obj: the object phrase, articles removed.
        items: item ids named in `obj`, in the order they appear.
        rooms: room ids named in `obj`.
        direction: the direction for `go`, normalised (north, up, in, ...), if any.
        everything: `take all` / `drop everything`.
    """

    verb: str
    word: str = ""
    obj: str = ""
    items: tuple[str, ...] = ()
    rooms: tuple[str, ...] = ()
    direction: str | None = None
    everything: bool = False


def words_of(text: str) -> list[str]:
    """Lower-case words of a line, punctuation dropped (hyphens and apostrophes kept)."""
    return re.findall(r"[\w'?-]+", text.casefold())


def _strip_articles(words: list[str]) -> list[str]:
    return [w for w in words if w not in ARTICLES]


def _starts_with(words: list[str], phrase: str) -> bool:
    parts = phrase.split()
    return words[: len(parts)] == parts


def _longest_prefix(words: list[str], phrases: tuple[str, ...] | list[str]) -> str | None:
    found = [p for p in phrases if _starts_with(words, p)]
    return max(found, key=lambda p: len(p.split())) if found else None


def find_names(phrase: str, names: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Ids whose words occur in the phrase as whole words, longest match first wins a span.

    Args:
        phrase: what the player wrote, articles removed.
        names: id -> every word that names it (id, name, aliases).
    """
    text = " ".join(_strip_articles(words_of(phrase)))
    if not text:
        return ()
    spans: list[tuple[int, int, str]] = []
    for ident, words in names.items():
        for word in {" ".join(_strip_articles(words_of(w))) for w in words}:
            if not word:
                continue
            for match in re.finditer(rf"(?<![\w'-]){re.escape(word)}(?![\w'-])", text):
                spans.append((match.start(), match.end(), ident))
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    chosen: list[tuple[int, int, str]] = []
    for start, end, ident in spans:
        if any(start < c_end and c_start < end for c_start, c_end, _ in chosen):
            continue
        chosen.append((start, end, ident))
    ordered: list[str] = []
    for _, _, ident in sorted(chosen):
        if ident not in ordered:
            ordered.append(ident)
    return tuple(ordered)


def item_names(pack: StoryPack) -> dict[str, tuple[str, ...]]:
    """Every word a player may use for each item: id, name, aliases."""
    return {i: (i.replace("_", " "), *pack.item_words(i)) for i in pack.items}


def room_names(pack: StoryPack) -> dict[str, tuple[str, ...]]:
    """Every word a player may use for each room: id, name, aliases."""
    return {r: (r.replace("_", " "), *pack.room_words(r)) for r in pack.rooms}


def parse(line: str, pack: StoryPack, here: str | None = None, reach: frozenset[str] | None = None) -> Command:
    """Understand one line of player input (never fails: the worst is `unknown`).

    Args:
        here: the player's room: only the verbs of actions that can be done there (no `room`, or this
            one) take a command over from a built-in verb. None: every action's.
        reach: the items within reach: a word names one of these first, and another item only
            when it names none of these. None: every item alike.
    """
    words = words_of(line)
    if not words:
        return Command("unknown")
    bare = _strip_articles(words)
    if len(bare) == 1 and bare[0] in DIRECTION_WORDS:
        return Command("go", word=bare[0], direction=DIRECTION_WORDS[bare[0]])
    for verb, table in (("look", _LOOK_VERBS), ("inventory", _INVENTORY), ("wait", _WAIT), ("help", _HELP)):
        if " ".join(words) in table or " ".join(bare) in table:
            return Command(verb, word=words[0])
    action_verbs = sorted(
        {
            v.casefold()
            for a in pack.actions.values()
            if here is None or a.room in (None, here)
            for v in a.verbs
            if v != ANY_COMMAND
        }
    )
    custom = _longest_prefix(words, action_verbs)
    tables: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("examine", _EXAMINE_VERBS),
        ("take", _TAKE_VERBS),
        ("drop", _DROP_VERBS),
        ("go", _MOVE_VERBS),
        ("use", ("use", "apply")),
        ("open", ("open", "unlock")),
        ("close", ("close", "shut", "lock")),
    )
    for verb, verbs in tables:
        found = _longest_prefix(words, verbs)
        if found is None:
            continue
        if custom is not None and len(custom.split()) > len(found.split()):
            break
        rest = words[len(found.split()) :]
        if verb == "take" and rest[-1:] == ["up"]:
            rest = rest[:-1]
        return _with_object(verb, found, rest, pack, reach)
    if custom is not None:
        return _with_object("action", custom, words[len(custom.split()) :], pack, reach)
    # "pick the lamp up", "put the lamp down"
    if words[0] == "pick" and words[-1] == "up":
        return _with_object("take", "pick up", words[1:-1], pack, reach)
    if words[0] == "put" and words[-1] == "down":
        return _with_object("drop", "put down", words[1:-1], pack, reach)
    return _with_object("unknown", words[0], words[1:], pack, reach)


def _with_object(verb: str, word: str, rest: list[str], pack: StoryPack, reach: frozenset[str] | None) -> Command:
    phrase = " ".join(_strip_articles(rest))
    direction = None
    if verb == "examine" and len(rest) == 1 and rest[0] in DIRECTION_WORDS:
        direction = DIRECTION_WORDS[rest[0]]  # "look north": what lies that way
    if verb == "go":
        direction = next((DIRECTION_WORDS[w] for w in _strip_articles(rest) if w in DIRECTION_WORDS), None)
        if direction is None and word in ("climb", "climb up") and not phrase:
            direction = "up"
        if word == "climb up":
            direction = "up"
    return Command(
        verb=verb,
        word=word,
        obj=phrase,
        items=_items_named(phrase, pack, reach),
        rooms=find_names(phrase, room_names(pack)),
        direction=direction,
        everything=bool(_ALL & set(rest)),
    )


def _items_named(phrase: str, pack: StoryPack, reach: frozenset[str] | None) -> tuple[str, ...]:
    names = item_names(pack)
    if reach is not None:
        near = find_names(phrase, {i: w for i, w in names.items() if i in reach})
        if near:
            return near
    return find_names(phrase, names)


def matching_actions(command: Command, pack: StoryPack) -> list[tuple[str, Action]]:
    """Pack actions whose verbs include the command's verb word and whose item the player named.

    An action without an item matches a bare verb (or one naming no item); one with an
    item matches when that item is among those named. The words for dropping a thing are one
    verb: an action with any of them is reached by all of them (as a model narrator is held to it).
    """
    spoken = command.word.casefold()
    found = []
    for action_id, action in pack.actions.items():
        verbs = {v.casefold() for v in action.verbs}
        if spoken not in verbs and not (spoken in _DROP_VERBS and verbs & set(_DROP_VERBS)):
            continue
        if action.item is None and command.items:
            continue
        if action.item is not None and action.item not in command.items:
            continue
        found.append((action_id, action))
    return found


BUILT_IN_VERBS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (*_MOVE_VERBS, *_TAKE_VERBS, *_DROP_VERBS, *_LOOK_VERBS, *_EXAMINE_VERBS, *_INVENTORY, *_WAIT, *_HELP)
        + ("use", "apply", "open", "unlock", "close", "shut", "lock")
    )
)
"""Every verb the parser knows without a pack (an action's verb of more words than one of these wins over it)."""


def pack_warnings(pack: StoryPack) -> list[str]:
    """What a pack's words leave ambiguous (`storyloom check-story` prints these): a verb of several words
    that takes a built-in verb over where its action can be done, two actions answering the same words in
    the same place, a word naming both a room and an item."""
    found = []
    for action_id, action in pack.actions.items():
        where = f"in {action.room}" if action.room else "in every room"
        for verb in action.verbs:
            built_in = _longest_prefix(verb.casefold().split(), BUILT_IN_VERBS)
            if built_in is not None and built_in != verb.casefold():
                found.append(
                    f"actions.{action_id}: {verb!r} is not the built-in {built_in!r} {where}: a line "
                    f"starting {verb!r} there reaches the story's actions"
                )
    seen: dict[tuple[str, str | None, str | None], str] = {}
    for action_id, action in pack.actions.items():
        for verb in action.verbs:
            key = (verb.casefold(), action.item, action.room)
            other = seen.setdefault(key, action_id)
            if other != action_id and _can_hold_together(pack.actions[other], action):
                found.append(
                    f"actions.{action_id}: {verb!r} also reaches {other} in the same place; the first in "
                    "the pack that can be done wins"
                )
    rooms = {w.casefold(): r for r, words in room_names(pack).items() for w in words}
    for item_id, words in item_names(pack).items():
        for word in words:
            if word.casefold() in rooms:
                found.append(
                    f"items.{item_id}: {word!r} also names room {rooms[word.casefold()]}: it means the item "
                    "where the item is in reach, else the room"
                )
    return list(dict.fromkeys(found))


def _can_hold_together(one: Action, other: Action) -> bool:
    """Whether two actions' requirements might both hold (no flag or item place they want differently)."""
    a, b = one.requires, other.requires
    flags = all(b.flags.get(f, v) == v for f, v in a.flags.items())
    items = all(b.items.get(i, at) == at for i, at in a.items.items())
    return flags and items and (a.location is None or b.location in (None, a.location))
