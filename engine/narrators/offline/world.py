"""The offline narrator's game master: what a command does to the world, and the prose for it.

`write_turn` turns one player line into a turn (narrative, state patch,
suggestions) that passes every rule of `storyloom.engine.rules`: it names each item it
moves and the room it moves to, never goes through a shut gate, keeps stats in
bounds. Anything it cannot act on gets an in-character reply and no change.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from random import Random
from typing import Any

from storyloom.engine.narration import Exchange
from storyloom.engine.narrators.offline import prose as say
from storyloom.engine.narrators.offline.parse import Command, matching_actions, parse
from storyloom.engine.packs import PLAYER, Action, Item, Room, StoryPack
from storyloom.engine.rules import judge, names
from storyloom.engine.state import WorldState
from storyloom.engine.story import already_done, in_sight, within_reach
from storyloom.engine.turns import SUGGESTION_MAX_CHARS, SUGGESTIONS_MAX

Patch = list[dict[str, Any]]


@dataclass
class Draft:
    """A turn being written: prose parts and the patch that goes with them."""

    parts: list[str] = field(default_factory=list)
    patch: Patch = field(default_factory=list)

    def say(self, *texts: str) -> Draft:
        self.parts.extend(t for t in texts if t)
        return self

    @property
    def narrative(self) -> str:
        return " ".join(self.parts).replace(" \n\n", "\n\n").strip()


RECENT_TURNS = 50
"""How many of the latest committed turns the narrator remembers the wording of, so as not to repeat it."""
EARLIER_VERSION_WEIGHT = 10
"""How much more a sentence of an earlier version of the turn counts against a wording than one said lately."""


def write_turn(
    pack: StoryPack,
    state: WorldState,
    history: tuple[Exchange, ...],
    player_input: str,
    rng: Random,
    seen: RoomsSeen | None = None,
    earlier_versions: Sequence[str] = (),
) -> dict[str, Any]:
    """The turn the narrator means to give for this input: always valid under the rules.

    Its wording avoids the sentences of the latest turns, and for another version of a turn
    (`earlier_versions` given) those of the versions before it above all, opening with words
    of its own, so the version reads as another telling even where the story's text is fixed.

    Args:
        seen: the narrator's running record of the rooms visited (a new one reads the whole history).
        earlier_versions: for another version of the turn, the narratives of those already told.
    """
    voice = _voice(history, rng, earlier_versions)
    world = _World(pack, state, history, voice, seen)
    draft = world.act(parse(player_input, pack, world.here, world.in_reach()))
    if earlier_versions:
        draft.parts.insert(0, say.retelling(voice))
    turn = {"narrative": draft.narrative, "state_patch": draft.patch}
    after = _apply(state, draft.patch)
    turn["suggestions"] = suggestions(pack, after, voice)
    if not judge(json.dumps(turn), state, pack).ok:
        # A pack action whose effects break a rule (e.g. an item conjured into the pocket
        # from nowhere): refuse in the story rather than hand the engine an invalid turn.
        turn = {"narrative": say.stray(voice), "state_patch": [], "suggestions": suggestions(pack, state, voice)}
    return turn


def write_held_back(
    pack: StoryPack,
    state: WorldState,
    history: tuple[Exchange, ...],
    rng: Random,
    earlier_versions: Sequence[str] = (),
) -> dict[str, Any] | None:
    """Another valid outcome of a deed: the player holds back, and the world stays as it is. None where
    the story allows no such outcome (a dark room's catch-all: every command there blunders)."""
    voice = _voice(history, rng, earlier_versions)
    turn = {"narrative": say.held_back(voice), "state_patch": [], "suggestions": suggestions(pack, state, voice)}
    return turn if judge(json.dumps(turn), state, pack).ok else None


def _voice(history: tuple[Exchange, ...], rng: Random, earlier_versions: Sequence[str]) -> say.Voice:
    voice = say.Voice(rng.random())
    voice.hear(exchange.turn.narrative for exchange in history[-RECENT_TURNS:])
    voice.hear(earlier_versions, weight=EARLIER_VERSION_WEIGHT)
    return voice


def _apply(state: WorldState, patch: Patch) -> WorldState:
    after = copy.deepcopy(state)
    for op in patch:
        _, section, *rest = op["path"].split("/")
        if rest:
            after[section][rest[0]] = op["value"]
        else:
            after[section] = op["value"]
    return after


class RoomsSeen:
    """Rooms the player has stood in, read from the committed turns and kept up as they grow.

    Reading the whole history on every move made a move's cost grow with the story (half
    the time of a turn at 5,000 turns); the narrator keeps one of these, so each committed
    turn is read once. A history that is not the one read before plus new turns (an undo,
    another session) is read again from the start.
    """

    def __init__(self, pack: StoryPack):
        self._pack = pack
        self._read: tuple[Exchange, ...] = ()
        self._rooms, self._told = self._at_start()

    def _at_start(self) -> tuple[set[str], dict[str, set[str]]]:
        start = self._pack.start
        return {start}, {start: {say.first_sentence(self._pack.rooms[start].description)}}

    def of(self, history: tuple[Exchange, ...]) -> set[str]:
        """The rooms visited in `history`."""
        known = len(self._read)
        if len(history) < known or (known and history[known - 1] is not self._read[-1]):
            known, (self._rooms, self._told) = 0, self._at_start()
        for exchange in history[known:]:
            for op in exchange.turn.state_patch:
                if op.path == "/location" and isinstance(op.value, str) and op.value in self._pack.rooms:
                    self._rooms.add(op.value)
                    self._note(op.value, exchange.turn.narrative)
        self._read = history
        return self._rooms

    def _note(self, room_id: str, narrative: str) -> None:
        """Which of the room's looks (dark, usual, each of its `descriptions`) the player was told on entering."""
        room = self._pack.rooms[room_id]
        told = self._told.setdefault(room_id, set())
        for text in (room.description, room.dark_text, *(d.text for d in room.descriptions)):
            first = say.first_sentence(text)
            if first and first in narrative:
                told.add(first)

    def told(self, history: tuple[Exchange, ...], room_id: str, description: str) -> bool:
        """Whether the player entering the room before was told it as it looks now: a room seen only in
        the dark, or before it changed, is described whole when entered again."""
        self.of(history)
        return say.first_sentence(description) in self._told.get(room_id, set())


class _World:
    """One turn's view of the world: where things are and what the player can reach."""

    def __init__(
        self,
        pack: StoryPack,
        state: WorldState,
        history: tuple[Exchange, ...],
        rng: Random,
        seen: RoomsSeen | None = None,
    ):
        self.pack, self.state, self.history, self.rng = pack, state, history, rng
        self.seen = seen if seen is not None else RoomsSeen(pack)
        self.here = state["location"]
        self.room = pack.rooms[self.here]

    def now(self, thing: Room | Item) -> str:
        """How a room or item is described in this state."""
        return thing.description_in(self.state)

    # where things are
    def items_at(self, place: str) -> list[str]:
        return [i for i, at in self.state["items"].items() if at == place]

    def reachable(self, item_id: str) -> bool:
        return within_reach(self.pack, self.state, item_id)

    def in_reach(self) -> frozenset[str]:
        return frozenset(i for i in self.pack.items if self.reachable(i))

    def dark(self) -> bool:
        return self.room.is_dark(self.state)

    def open_ways(self) -> tuple[list[str], list[str]]:
        open_: list[str] = []
        shut: list[str] = []
        for direction in self.room.exits:
            gate = self.room.gates.get(direction)
            (shut if gate and not self.state["flags"][gate] else open_).append(direction)
        return open_, shut

    def surroundings(self) -> str:
        open_, shut = self.open_ways()
        items = [] if self.dark() else [self.pack.items[i] for i in self.items_at(self.here)]
        return " ".join(p for p in (say.items_here(items, self.rng), say.exits_line(open_, shut, self.rng)) if p)

    # what a command does
    def act(self, command: Command) -> Draft:
        action = (
            self._way_action(command)
            or self._action_for(command, here_only=True)
            or self._catch_all(command)
            or self._action_for(command)
        )
        if action is not None:
            return self._do_action(*action)
        handler = getattr(self, f"_{command.verb}", None)
        return handler(command) if handler else self._unknown(command)

    def _look(self, command: Command) -> Draft:
        return Draft().say(say.room_view(self.room, self.now(self.room), self.rng) + "\n\n" + self.surroundings())

    def _examine(self, command: Command) -> Draft:
        if not command.obj or self.here in command.rooms and not command.items:
            return self._look(command)
        if command.direction is not None and not command.items:
            return self._look_towards(command.direction)
        if command.obj in ("me", "self", "myself", "yourself"):
            return Draft().say(say.self_view(self.rng), self._inventory(command).narrative)
        for item_id in command.items:
            if self.reachable(item_id):
                where = "carried" if self.state["items"][item_id] == PLAYER else "here"
                return Draft().say(say.examined(item := self.pack.items[item_id], self.now(item), where, self.rng))
        return Draft().say(say.not_here(command.obj, self.rng))

    def _look_towards(self, direction: str) -> Draft:
        if direction not in self.room.exits:
            return Draft().say(say.no_way(direction, self.rng))
        if not self._gate_open(direction):
            return Draft().say(say.gate_shut(direction, self.rng))
        return Draft().say(say.way_to(direction, self.pack.rooms[self.room.exits[direction]], self.rng))

    def _go(self, command: Command) -> Draft:
        direction = command.direction
        if direction is None and command.rooms:
            target = command.rooms[0]
            if target == self.here:
                return Draft().say(say.already_there(self.room, self.rng))
            ways = [d for d, t in self.room.exits.items() if t == target]
            if not ways:
                return Draft().say(say.too_far(self.pack.rooms[target], self.rng), self.surroundings())
            open_ = [d for d in ways if self._gate_open(d)]
            direction = (open_ or ways)[0]
        if direction is None:
            return Draft().say(say.which_way(self.rng), self.surroundings())
        if direction not in self.room.exits:
            return Draft().say(say.no_way(direction, self.rng), say.exits_line(*self.open_ways(), self.rng))
        if not self._gate_open(direction):
            return Draft().say(say.gate_shut(direction, self.rng))
        target = self.room.exits[direction]
        there = _World(self.pack, {**self.state, "location": target}, self.history, self.rng, self.seen)
        revisit = self.seen.told(self.history, target, there.now(there.room))
        lead = say.move_lead(direction, self.rng)
        text = lead + "\n\n" + say.arrival(there.room, there.now(there.room), revisit, self.rng)
        return Draft([text, there.surroundings()], [_replace("/location", target)])

    def _gate_open(self, direction: str) -> bool:
        gate = self.room.gates.get(direction)
        return gate is None or bool(self.state["flags"][gate])

    def _take(self, command: Command) -> Draft:
        if command.everything:
            ids = [i for i in self.items_at(self.here) if self.pack.items[i].portable and self.reachable(i)]
            if not ids:
                return Draft().say(say.nothing_to_take(self.rng))
            draft = Draft()
            for item_id in ids:
                draft.say(say.took(item := self.pack.items[item_id], self.now(item), self.rng))
                draft.patch.append(_replace(f"/items/{item_id}", PLAYER))
            return draft
        if not command.items:
            return Draft().say(say.not_here(command.obj, self.rng) if command.obj else say.what("take", self.rng))
        item_id = command.items[0]
        item, place = self.pack.items[item_id], self.state["items"][item_id]
        if place == PLAYER:
            return Draft().say(say.already_carried(item, self.rng))
        if place != self.here or not self.reachable(item_id):
            return Draft().say(say.not_here(command.obj, self.rng))
        if not item.portable:
            return Draft().say(say.cannot_carry(item, self.rng))
        return Draft([say.took(item, self.now(item), self.rng)], [_replace(f"/items/{item_id}", PLAYER)])

    def _drop(self, command: Command) -> Draft:
        if command.everything:
            ids = self.items_at(PLAYER)
            if not ids:
                return Draft().say(say.nothing_to_drop(self.rng))
            draft = Draft()
            for item_id in ids:
                draft.say(say.dropped(self.pack.items[item_id], self.rng))
                draft.patch.append(_replace(f"/items/{item_id}", self.here))
            return draft
        if not command.items:
            return Draft().say(say.not_here(command.obj, self.rng) if command.obj else say.what("drop", self.rng))
        item_id = command.items[0]
        item = self.pack.items[item_id]
        if self.state["items"][item_id] != PLAYER:
            return Draft().say(say.not_carried(item, self.rng))
        return Draft([say.dropped(item, self.rng)], [_replace(f"/items/{item_id}", self.here)])

    def _inventory(self, command: Command) -> Draft:
        return Draft().say(say.inventory([self.pack.items[i] for i in self.items_at(PLAYER)], self.rng))

    def _wait(self, command: Command) -> Draft:
        return Draft().say(say.waited(self.now(self.room), self.rng))

    def _help(self, command: Command) -> Draft:
        return Draft().say(say.help_text(self.help_ways(), self.rng))

    def help_ways(self) -> list[tuple[str, list[str]]]:
        """Each kind of deed with commands that work in this story, on its own things, from here if it can."""
        pack = self.pack
        near = self.items_at(self.here) + self.items_at(PLAYER)
        ordered = near + [i for i in pack.items if i not in near]
        portable = [i for i in ordered if pack.items[i].portable]
        open_, shut = self.open_ways()
        directions = list(dict.fromkeys(open_ + shut)) or sorted({d for r in pack.rooms.values() for d in r.exits})
        ways: list[tuple[str, list[str]]] = [("look around", ["look", "l"])]
        if ordered:
            thing = _short(pack, ordered[0])
            ways.append(("examine something", [f"examine {thing}", f"x {thing}"]))
        if directions:
            ways.append(("go somewhere", [f"go {directions[0]}", *directions[1:4]]))
        if portable:
            thing = _short(pack, portable[0])
            ways.append(("take or drop things", [f"take {thing}", f"drop {thing}"]))
        ways.append(("see what you carry", ["inventory", "i"]))
        deeds: dict[str, str] = {}
        for action in sorted(pack.actions.values(), key=lambda a: a.item not in near):
            verb = action.verbs[0] if action.verbs else ""
            if action.item is not None and verb and not action.catch_all and verb not in deeds and len(deeds) < 4:
                deeds[verb] = f"{verb} {_short(pack, action.item)}"
        if deeds:
            ways.append(("try the deeds of this story", list(deeds.values())))
        ways.append(("wait", ["wait", "z"]))
        return ways

    def _use(self, command: Command) -> Draft:
        return self._no_action(command, "use")

    def _open(self, command: Command) -> Draft:
        return self._no_action(command, "open")

    def _close(self, command: Command) -> Draft:
        return self._no_action(command, "close")

    def _action(self, command: Command) -> Draft:
        return self._no_action(command, command.word)

    def _no_action(self, command: Command, verb: str) -> Draft:
        """A verb the pack has no matching action for: say why, change nothing."""
        if not command.obj:
            return Draft().say(say.what(verb, self.rng))
        reachable = [i for i in command.items if self.reachable(i)]
        if not reachable:
            return Draft().say(say.not_here(command.obj, self.rng))
        item = self.pack.items[reachable[0]]
        if any(
            a.item == reachable[0] and verb.casefold() in {v.casefold() for v in a.verbs}
            for a in self.pack.actions.values()
        ):
            return Draft().say(say.not_this_place(item, self.rng))
        if verb == "use":
            return Draft().say(say.no_use(item, self.rng))
        return Draft().say(say.no_open(verb, item, self.rng))

    def _unknown(self, command: Command) -> Draft:
        return Draft().say(say.not_understood(command.word, self.rng))

    # the pack's own actions
    def _way_action(self, command: Command) -> tuple[str, Action] | None:
        """The action that answers going this way from here (`direction`), however the way is said."""
        if command.verb != "go" or command.direction is None:
            return None
        return next(
            (
                (a_id, a)
                for a_id, a in self.pack.actions.items()
                if a.direction == command.direction and a.room == self.here and self._answers(a)
            ),
            None,
        )

    def _catch_all(self, command: Command) -> tuple[str, Action] | None:
        """This room's catch-all, for any command but a move through one of its exits, while it can be done."""
        if command.verb == "go" and self._exit_of(command) is not None:
            return None
        return next(
            (
                (a_id, a)
                for a_id, a in self.pack.actions.items()
                if a.catch_all and a.room == self.here and a.requires.holds(self.state)
            ),
            None,
        )

    def _exit_of(self, command: Command) -> str | None:
        if command.direction in self.room.exits:
            return command.direction
        ways = [d for d, t in self.room.exits.items() if t in command.rooms]
        return ways[0] if ways and command.direction is None else None

    def _action_for(self, command: Command, here_only: bool = False) -> tuple[str, Action] | None:
        """The pack action this command means here, if any (room-specific ones first)."""
        rooms = (self.here,) if here_only else (None, self.here)
        near = replace(command, items=tuple(i for i in command.items if self.reachable(i)))
        candidates = [
            (a_id, a)
            for a_id, a in matching_actions(near, self.pack)
            if a.room in rooms and (a.item is None or self.reachable(a.item)) and not a.catch_all and self._answers(a)
        ]
        candidates.sort(key=lambda pair: pair[1].room is None)
        ready = [c for c in candidates if c[1].requires.holds(self.state) and not self._done(c[1])]
        found = ready or candidates
        return found[0] if found else None

    def _answers(self, action: Action) -> bool:
        """Whether the action takes the command: one without effects refuses only while its `requires` holds."""
        return not action.refuses or action.requires.holds(self.state)

    def _done(self, action: Action) -> bool:
        """Whether doing the action again would change nothing (the door is already open)."""
        return already_done(action, self.state)

    def _do_action(self, action_id: str, action: Action) -> Draft:
        if self._done(action):
            return Draft().say(action.done or say.already_done(self.rng))
        if not action.requires.holds(self.state):
            return Draft().say(action.refusal or say.refused(self.rng))
        draft = Draft().say(action.text)
        effects = action.effects
        for item_id, place in effects.items.items():
            if self.state["items"][item_id] == place:
                continue
            draft.patch.append(_replace(f"/items/{item_id}", place))
            seen = in_sight(self.pack, self.state, self.state["items"][item_id]) or in_sight(
                self.pack, self.state, place
            )
            if seen and not names(action.text, self.pack.item_words(item_id)):
                draft.say(say.moved_by_action(self.pack.items[item_id], place, self.here, self.rng))
        for flag, value in effects.flags.items():
            if self.state["flags"][flag] != value:
                draft.patch.append(_replace(f"/flags/{flag}", value))
        for stat_id, delta in effects.stats.items():
            stat = self.pack.stats[stat_id]
            value = max(stat.min, min(stat.max, self.state["stats"][stat_id] + delta))
            if value != self.state["stats"][stat_id]:
                draft.patch.append(_replace(f"/stats/{stat_id}", value))
        return draft


def _replace(path: str, value: Any) -> dict[str, Any]:
    return {"op": "replace", "path": path, "value": value}


def suggestions(pack: StoryPack, state: WorldState, rng: Random) -> list[str]:
    """Up to four short next actions, each once: a deed that is ready here, things to take, open ways.

    Never an action the author keeps out (`suggest = false`) or one that only refuses, and where a
    room's catch-all would take any other command (the dark bar), only the ways out.
    """
    world = _World(pack, state, (), rng)
    caught = world._catch_all(Command("look")) is not None
    found: list[str] = []
    for action in pack.actions.values():
        if caught or not action.suggest or action.refuses or action.item is None:
            continue
        if action.room not in (None, world.here) or not world.reachable(action.item) or not action.verbs:
            continue
        if action.requires.holds(state) and not world._done(action):
            found.append(f"{action.verbs[0]} {_short(pack, action.item)}")
            break
    for item_id in world.items_at(world.here):
        if pack.items[item_id].portable and world.reachable(item_id) and not caught:
            found.append(f"take {_short(pack, item_id)}")
    open_, _ = world.open_ways()
    found += [f"go {d}" for d in open_ if world._way_action(Command("go", direction=d)) is None]
    found = list(dict.fromkeys(found))
    chosen = found[:1] + rng.sample(found[1:], k=min(len(found) - 1, SUGGESTIONS_MAX - 1)) if found else ["look"]
    return [s[:SUGGESTION_MAX_CHARS] for s in chosen]


def _short(pack: StoryPack, item_id: str) -> str:
    """The word a player would type for an item: its first alias, else its name."""
    item = pack.items[item_id]
    return item.aliases[0] if item.aliases else item.name
