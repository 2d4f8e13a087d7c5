"""The offline narrator's phrasebook: several ways to say each thing, in the pack's voice.

Every function takes the seeded `random.Random` of the turn, so the same seed
and input give the same words, while different turns read differently. The
pack's own descriptions carry the voice; these phrases only join them up.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from random import Random

from storyloom.engine.packs import Item, Room

_ARTICLE = re.compile(r"^(the|a|an|some|your)\s", re.IGNORECASE)


def the(name: str) -> str:
    """`brass lamp` -> `the brass lamp`; names that bring their own article keep it."""
    return name if _ARTICLE.match(name) else f"the {name}"


def cap(text: str) -> str:
    """Upper-case the first letter only (names keep their own capitals)."""
    return text[:1].upper() + text[1:]


def join(words: Sequence[str], last: str = "and") -> str:
    """`a`, `a and b`, `a, b and c`."""
    words = list(words)
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {last} {words[-1]}"


def sentences(text: str) -> list[str]:
    """The sentences of a description, kept whole."""
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def first_sentence(text: str) -> str:
    found = sentences(text)
    return found[0] if found else ""


class Voice(Random):
    """A seeded `Random` that also remembers the sentences the story has shown lately.

    `pick` prefers a wording said least, so the same verb reads differently turn after turn
    and another version of a turn is another telling, while the same seed and history still
    give the same words.

    Args:
        seed: as `Random`'s.
        said: sentences already shown, with how often (weighted up for what must not come back).
    """

    def __init__(self, seed: object, said: Counter[str] | None = None):
        super().__init__(seed)  # type: ignore[arg-type]
        self.said: Counter[str] = said if said is not None else Counter()

    def hear(self, texts: Iterable[str], weight: int = 1) -> None:
        """Count the sentences of these texts as said."""
        for text in texts:
            for sentence in sentences(text):
                self.said[sentence] += weight


def pick(rng: Random, options: Sequence[str], **values: str) -> str:
    """One of the options, filled in; with a `Voice`, one of those said least so far."""
    filled = [option.format(**values) for option in options]
    if not isinstance(rng, Voice):
        return rng.choice(filled)
    cost = [sum(rng.said[s] for s in sentences(text)) for text in filled]
    chosen = rng.choice([text for text, c in zip(filled, cost, strict=True) if c == min(cost)])
    rng.hear([chosen])
    return chosen


def room_view(room: Room, desc: str, rng: Random) -> str:
    """The room's name and its description as it is now, opened in one of several ways."""
    name = room.name
    return pick(
        rng,
        (
            "{name}.\n\n{desc}",
            "You take it in: {the}. {desc}",
            "{desc}\n\nThis is {the}.",
            "You look about you: {the}. {desc}",
            "You stand in {the} and look around. {desc}",
            "Here is {the}. {desc}",
            "You take a long look at {the}. {desc}",
        ),
        name=name,
        Name=cap(name),
        the=the(name),
        desc=desc,
    )


def items_here(items: Sequence[Item], rng: Random) -> str:
    """A sentence naming what lies in the room, or nothing."""
    if not items:
        return ""
    listing = join([the(i.name) for i in items])
    verb = "is" if len(items) == 1 else "are"
    return pick(
        rng,
        (
            "You notice {list}.",
            "{List} {verb} here.",
            "Within reach: {list}.",
            "Your eye falls on {list}.",
            "{List} {verb} to hand.",
            "You spot {list}.",
            "Here you find {list}.",
        ),
        list=listing,
        List=cap(listing),
        verb=verb,
    )


def exits_line(open_ways: Sequence[str], closed_ways: Sequence[str], rng: Random) -> str:
    """Where the player can go, and which ways are shut."""
    parts = []
    if open_ways:
        parts.append(
            pick(
                rng,
                (
                    "Ways lead {or_list}.",
                    "From here you can go {or_list}.",
                    "You could go {or_list}.",
                    "Exits: {and_list}.",
                    "The ways out: {and_list}.",
                    "You can leave {or_list}.",
                    "You could head {or_list}.",
                ),
                or_list=join(open_ways, "or"),
                and_list=join(open_ways),
            )
        )
    elif not closed_ways:
        parts.append(pick(rng, ("There is no way on from here.", "No path leads away from here.")))
    for way in closed_ways:
        parts.append(
            pick(
                rng,
                (
                    "The way {d} is shut.",
                    "The way {d} is closed to you for now.",
                    "The way {d} will not open yet.",
                    "Nothing lets you go {d} just now.",
                    "The way {d} stays barred.",
                    "For now there is no going {d}.",
                ),
                d=way,
            )
        )
    return " ".join(parts)


_LEADS = {
    "up": ("You climb up.", "You make your way up.", "Up you go.", "You go up, step by step.", "You climb."),
    "down": (
        "You climb down.",
        "You make your way down.",
        "Down you go, carefully.",
        "You go down, feeling for each step.",
        "You descend.",
    ),
    "in": ("You step inside.", "You go in.", "You duck inside.", "In you go.", "You slip inside."),
    "out": ("You step outside.", "You go out.", "You leave, out into the open.", "Out you go.", "You step out."),
}
_COMPASS_LEADS = (
    "You head {d}.",
    "You make your way {d}.",
    "You set off {d}.",
    "You follow the way {d}.",
    "You walk {d}.",
    "You turn {d} and go.",
    "{D} you go.",
)


def move_lead(direction: str, rng: Random) -> str:
    """The first words of a move: how the player goes."""
    if direction in _LEADS:
        return pick(rng, _LEADS[direction])
    return pick(rng, _COMPASS_LEADS, d=direction, D=cap(direction))


def arrival(room: Room, desc: str, revisit: bool, rng: Random) -> str:
    """Where the player arrives, naming the room (the rules require it); `desc` is how it looks now."""
    if not revisit:
        return room_view(room, desc, rng)
    return pick(
        rng,
        (
            "You are back: {the}. {first}",
            "{The} again. {first}",
            "Once more, {the}. {first}",
            "You return to {the}. {first}",
            "Back in {the}. {first}",
            "You come again to {the}. {first}",
        ),
        the=the(room.name),
        The=cap(the(room.name)),
        first=first_sentence(desc),
    )


def took(item: Item, desc: str, rng: Random) -> str:
    text = pick(
        rng,
        (
            "You take {the}.",
            "You pick up {the}.",
            "You lift {the} and keep it close.",
            "{The} is yours now; you tuck it away.",
            "You gather up {the}.",
            "You take hold of {the}.",
        ),
        the=the(item.name),
        The=cap(the(item.name)),
    )
    if desc and rng.random() < 0.5:
        text += " " + first_sentence(desc)
    return text


def dropped(item: Item, rng: Random) -> str:
    return pick(
        rng,
        (
            "You set down {the}.",
            "You put {the} down.",
            "You leave {the} here.",
            "You let go of {the}; it stays here.",
            "You put {the} aside here.",
            "Down goes {the}.",
        ),
        the=the(item.name),
    )


def examined(item: Item, desc: str, where: str, rng: Random) -> str:
    """An item looked at closely, as it is now (`desc`); `where` is "carried", "here" or "elsewhere"."""
    desc = desc or pick(rng, ("Nothing about {the} stands out.", "It is just as it seems: {the}."), the=the(item.name))
    text = pick(
        rng,
        (
            "{desc}",
            "You look closely at {the}. {desc}",
            "{The} draws your eye. {desc}",
            "You turn your attention to {the}. {desc}",
            "You study {the}. {desc}",
        ),
        desc=desc,
        the=the(item.name),
        The=cap(the(item.name)),
    )
    if where == "carried":
        text += " " + pick(
            rng, ("You are carrying it.", "It is with you.", "You have it with you.", "It is yours to carry.")
        )
    return text


def inventory(items: Sequence[Item], rng: Random) -> str:
    if not items:
        return pick(
            rng,
            (
                "You are carrying nothing.",
                "Your hands are empty.",
                "You have nothing with you.",
                "Your pockets hold nothing of use.",
            ),
        )
    listing = join([the(i.name) for i in items])
    return pick(
        rng,
        (
            "You are carrying {list}.",
            "You have {list} with you.",
            "In your hands and pockets: {list}.",
            "You check what you carry: {list}.",
            "You have {list}, and nothing else.",
            "Your load: {list}.",
        ),
        list=listing,
    )


def waited(desc: str, rng: Random) -> str:
    """Time passing where the player stands (`desc`: how the room looks now)."""
    text = pick(
        rng,
        (
            "Time passes.",
            "You wait.",
            "You stand still a while.",
            "Moments pass, and nothing stirs.",
            "You let a minute go by.",
            "You listen, and wait.",
        ),
    )
    found = sentences(desc)
    if found and rng.random() < 0.7:
        text += " " + rng.choice(found)
    return text


def help_text(ways: Sequence[tuple[str, Sequence[str]]], rng: Random) -> str:
    """What the player can do, each kind of deed with commands from this story: `(what, [commands])`."""
    lead = pick(rng, ("You gather your thoughts.", "You stop and think what you could do."))
    parts = [f"{what} ({', '.join(commands)})" if commands else what for what, commands in ways]
    return f"{lead} You can {join(parts)}."


def not_understood(word: str, rng: Random) -> str:
    return pick(
        rng,
        (
            "You are not sure how to {w} here.",
            "You think about it, but nothing comes of trying to {w}.",
            "That is not something you can do here.",
            "You hesitate. Nothing here answers to that.",
        ),
        w=word or "do that",
    )


def not_here(phrase: str, rng: Random) -> str:
    phrase = phrase or "such thing"
    return pick(rng, ("You see no {p} here.", "You find no {p} within reach.", "No {p} that you can see."), p=phrase)


def what(verb: str, rng: Random) -> str:
    return pick(
        rng, ("{V} what?", "What do you want to {v}?", "You would need to say what to {v}."), V=cap(verb), v=verb
    )


def cannot_carry(item: Item, rng: Random) -> str:
    return pick(
        rng,
        ("{The} will not budge.", "You try to lift {the}, but it is no use.", "You cannot take {the} with you."),
        the=the(item.name),
        The=cap(the(item.name)),
    )


def already_carried(item: Item, rng: Random) -> str:
    return pick(rng, ("You already have {the}.", "You are already carrying {the}."), the=the(item.name))


def not_carried(item: Item, rng: Random) -> str:
    return pick(rng, ("You are not carrying {the}.", "You do not have {the}."), the=the(item.name))


def nothing_to_take(rng: Random) -> str:
    return pick(rng, ("There is nothing here you can carry.", "Nothing here can be taken."))


def nothing_to_drop(rng: Random) -> str:
    return pick(rng, ("You have nothing to drop.", "Your hands are already empty."))


def no_way(direction: str, rng: Random) -> str:
    return pick(
        rng, ("You cannot go {d} from here.", "There is no way {d}.", "Nothing leads {d} from here."), d=direction
    )


def gate_shut(direction: str, rng: Random) -> str:
    return pick(
        rng,
        ("The way {d} is shut.", "You try the way {d}, but it is closed.", "The way {d} will not open for you yet."),
        d=direction,
    )


def way_to(direction: str, room: Room, rng: Random) -> str:
    """What lies along an open exit (naming a room is fine: nobody moves)."""
    return pick(
        rng,
        ("The way {d} leads to {the}.", "Looking {d}, you make out {the}.", "{D}, the way goes on to {the}."),
        d=direction,
        D=cap(direction),
        the=the(room.name),
    )


def self_view(rng: Random) -> str:
    return pick(
        rng,
        ("You look yourself over. You will do.", "You take stock of yourself.", "You check yourself: nothing broken."),
    )


def which_way(rng: Random) -> str:
    return pick(rng, ("Which way?", "Go where?", "You will have to say which way."))


def too_far(room: Room, rng: Random) -> str:
    return pick(
        rng,
        (
            "You cannot reach {the} from here in one go.",
            "{The} is not next to here.",
            "No way leads straight to {the} from here.",
        ),
        the=the(room.name),
        The=cap(the(room.name)),
    )


def already_there(room: Room, rng: Random) -> str:
    return pick(rng, ("You are already here.", "You are standing in it: {the}."), the=the(room.name))


def refused(rng: Random) -> str:
    return pick(rng, ("Nothing happens.", "That does not work, not yet.", "Not yet; something is missing."))


def already_done(rng: Random) -> str:
    return pick(rng, ("It is already done.", "There is nothing more to do there.", "That is already so."))


def no_use(item: Item, rng: Random) -> str:
    return pick(
        rng,
        (
            "You turn {the} over in your hands, but nothing here needs it.",
            "You find no use for {the} here.",
            "Nothing here calls for {the}.",
        ),
        the=the(item.name),
    )


def no_open(verb: str, item: Item, rng: Random) -> str:
    return pick(
        rng,
        (
            "You cannot {v} {the}.",
            "{The} is not something you can {v}.",
            "You try to {v} {the}, but nothing comes of it.",
        ),
        v=verb,
        the=the(item.name),
        The=cap(the(item.name)),
    )


def not_this_place(item: Item, rng: Random) -> str:
    """The deed is right, the place is not (the matches are for the lamp, not the cottage)."""
    return pick(
        rng,
        (
            "Not here. {The} is meant for somewhere else.",
            "This is not the place for that.",
            "You hold {the} a moment, then think better of it here.",
        ),
        the=the(item.name),
        The=cap(the(item.name)),
    )


def moved_by_action(item: Item, place: str, here: str, rng: Random) -> str:
    """A sentence naming an item an action moved, for when the action's own text does not."""
    if place == "player":
        return pick(rng, ("You now have {the}.", "{The} is yours now."), the=the(item.name), The=cap(the(item.name)))
    if place == "nowhere":
        return pick(rng, ("That is the end of {the}.", "You will not need {the} again."), the=the(item.name))
    if place == here:
        return pick(rng, ("{The} is here now.", "You see {the} here now."), the=the(item.name), The=cap(the(item.name)))
    return pick(rng, ("{The} is somewhere else now.",), The=cap(the(item.name)))


def stray(rng: Random) -> str:
    """For a deed the narrator cannot make agree with the rules: nothing changes."""
    return pick(rng, ("Something stops you, and the moment passes.", "You think better of it."))


def held_back(rng: Random) -> str:
    """Another version of a deed, in which the player does not go through with it: nothing changes."""
    return pick(
        rng,
        (
            "You make to do it, then think better of it; for now you leave things as they are.",
            "A moment's doubt stays your hand. You let it be, for now.",
            "You hesitate, and the moment passes. Nothing is changed.",
            "On second thought, you hold back and leave everything where it is.",
        ),
    )


def retelling(rng: Random) -> str:
    """The first words of another version of a turn, so it reads as another telling of it."""
    return pick(
        rng,
        (
            "You take a breath first.",
            "This time you take it slowly.",
            "You steady yourself first.",
            "Without hurrying, you go about it.",
            "You gather yourself.",
            "You think it through once more.",
            "A moment passes before you move.",
            "You let your breath settle.",
        ),
    )
