"""The story's own rules: what only the story's actions may change, and what they can do now.

The world's rules (`storyloom.engine.rules`) keep a turn physical: exits, gates, reach, bounds.
These keep it true to the story. A flag, a stat, or an item's place other than by taking and
dropping is *bound*: it changes only as the whole effects of actions that can be done in the
state before the turn (their `room`, `item` and `requires` hold, and they are not already done),
whatever words the player or the model use for it. The pack's `free` table names what the
narrator may change at will. An action may also be done at the end of the turn's own moves
and takes (go up to the Lamp Room and light the lamp; take the matches and dry them), never
in the middle of them, and actions done together never enable one another.

A stat effect is a delta, stopped at the stat's bounds as the offline narrator stops it; flag
and item effects are the values they set.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from storyloom.engine.packs import NOWHERE, PLAYER, Action, Condition, Effects, StoryPack
from storyloom.engine.state import WorldState, describe_place
from storyloom.engine.turns import Issue

RULE = "story.action"
ACTIONS_DESCRIBED = 3
"""How many actions a refusal describes for one change (the likeliest first)."""
COMBINATIONS_TRIED = 4096
"""How many sets of stat-changing actions are tried to explain one turn (a pack has a few)."""


DROP_VERBS = ("drop", "put down", "discard", "set down", "leave")
"""The words for dropping a thing, which an action without effects for an item refuses (see `declared_issues`)."""


def within_reach(pack: StoryPack, state: WorldState, item_id: str) -> bool:
    """Whether the player can handle the item: carried, or in the player's room while it is not dark."""
    place = state["items"][item_id]
    here = state["location"]
    return bool(place == PLAYER or (place == here and not pack.rooms[here].is_dark(state)))


def in_sight(pack: StoryPack, state: WorldState, place: str) -> bool:
    """Whether the player sees what is at a place: carried, or in the player's room while it is not dark."""
    here = state["location"]
    return place == PLAYER or (place == here and not pack.rooms[here].is_dark(state))


def already_done(action: Action, state: WorldState) -> bool:
    """Whether doing the action again would change nothing it sets (the door is already open).

    An action that only changes stats can always be done again; one that also sets flags or
    places cannot, so a stat it adds to is not gained twice by repeating it.
    """
    effects = action.effects
    if not (effects.flags or effects.items):
        return False
    return all(state["flags"][f] == v for f, v in effects.flags.items()) and all(
        state["items"][i] == at for i, at in effects.items.items()
    )


def can_do(pack: StoryPack, action: Action, state: WorldState) -> bool:
    """Whether the action can be done in this state: its room, its item at hand, its requirements."""
    return (
        (action.room is None or state["location"] == action.room)
        and (action.item is None or within_reach(pack, state, action.item))
        and action.requires.holds(state)
        and not already_done(action, state)
    )


def possible_now(pack: StoryPack, state: WorldState) -> list[tuple[str, Action]]:
    """The actions that can be done in this state, in the pack's order, one of each kind of effect."""
    seen: set[str] = set()
    found = []
    for action_id, action in pack.actions.items():
        key = action.effects.model_dump_json()
        if can_do(pack, action, state) and key not in seen:
            seen.add(key)
            found.append((action_id, action))
    return found


def world_move(was: str, now: str) -> bool:
    """Whether an item's change of place is a take or a drop, which the world's rules judge alone."""
    return now == PLAYER or (was == PLAYER and now != NOWHERE)


@dataclass(frozen=True)
class Change:
    """One bound value the turn changes: `section` is flags, stats or items."""

    section: str
    key: str
    was: Any
    now: Any

    @property
    def path(self) -> str:
        return f"/{self.section}/{self.key}"


def bound_changes(before: WorldState, after: WorldState, pack: StoryPack) -> list[Change]:
    """The changes the story's actions govern: every flag and stat change, and every change of an
    item's place that is not a take or a drop, except what the pack leaves free."""
    changes: list[Change] = []
    sections = [section for section in ("flags", "stats", "items") if before[section] != after[section]]
    if not sections:  # most turns change no bound value: nothing to look at
        return changes
    free = {"flags": set(pack.free.flags), "stats": set(pack.free.stats), "items": set(pack.free.items)}
    for section in sections:
        for key, was in before[section].items():
            now = after[section][key]
            if was == now or key in free[section]:
                continue
            if section == "items" and world_move(was, now):
                continue
            changes.append(Change(section, key, was, now))
    return changes


def story_issues(
    before: WorldState, after: WorldState, pack: StoryPack, *, walked_into: bool = True
) -> Iterator[Issue]:
    """The `story.action` issues of a turn: none when its bound changes are the whole effects of
    actions that can be done (see the module docstring) and it keeps what the author declared
    (`declared_issues`), else one for each change it cannot explain.

    Args:
        walked_into: judge a take or a drop in the room the turn walks into too (rule set 3; a save
            played under set 2 is judged without it).
    """
    yield from declared_issues(before, after, pack, walked_into=walked_into)
    changes = bound_changes(before, after, pack)
    if not changes:
        return
    judged = _Turn(before, after, pack)
    if judged.explained(changes):
        return
    issues = [judged.issue(change) for change in changes if not judged.explains(change)]
    if not issues:  # each change alone is an action's, but no set of actions makes all of them at once
        issues = [judged.together(changes)]
    yield from issues


def declared_issues(
    before: WorldState, after: WorldState, pack: StoryPack, *, walked_into: bool = True
) -> Iterator[Issue]:
    """What the author declared, kept by every narrator: nothing is taken from a dark room, a way an
    action answers is not walked, a drop an action without effects answers is not done, and a turn
    that stays in a room with a catch-all does the catch-all's whole effects.

    A take or a drop is judged in the room it happens in: the room the turn starts in, as things
    stand before it, or the room it walks into, as things stand on arriving there (still carrying
    what the player carried), so a move does not carry a take out of the dark or a drop past the
    action that refuses it."""
    here = before["location"]
    room = pack.rooms[here]
    ready = _ready(pack, before)
    yield from _handling_issues(pack, before, after, ready)
    if walked_into and after["location"] != here:
        arrived = {**before, "location": after["location"]}
        yield from _handling_issues(pack, arrived, after, _ready(pack, arrived))
        ways = {d for d, target in room.exits.items() if target == after["location"]}
        taken = [i for i, a in ready() if a.direction in ways and a.room == here]
        if ways and ways <= {pack.actions[i].direction for i in taken}:
            yield Issue(
                "/location",
                RULE,
                f"going that way from {room.name} is answered by the story's action {taken[0]}, not walked: "
                f'leave /location as it is ("{here}") and tell what that action tells.',
            )
        return
    for action_id, action in _catch_alls(pack):  # the actions in `ready()` order, the cheap tests first
        if action.room == here and can_do(pack, action, before) and not _shows(pack, action.effects, before, after):
            yield Issue(
                _first_path(action.effects),
                RULE,
                f"in {room.name} every command but a move through an exit does {action_id}: the turn must "
                f"patch its whole effects ({describe_effects(pack, action.effects, before)}) and tell what it tells.",
            )


_CATCH_ALLS: dict[str, tuple[tuple[str, Action], ...]] = {}


def _catch_alls(pack: StoryPack) -> tuple[tuple[str, Action], ...]:
    """The pack's catch-all actions, in its order (found once per pack content: every turn asks)."""
    found = _CATCH_ALLS.get(pack.digest)
    if found is None:
        found = _CATCH_ALLS[pack.digest] = tuple((i, a) for i, a in pack.actions.items() if a.catch_all)
    return found


def _ready(pack: StoryPack, state: WorldState) -> Callable[[], list[tuple[str, Action]]]:
    """The actions that can be done in the state, found once and only if a drop or a move asks."""
    found: list[tuple[str, Action]] | None = None

    def ready() -> list[tuple[str, Action]]:
        nonlocal found
        if found is None:
            found = [(i, a) for i, a in pack.actions.items() if can_do(pack, a, state)]
        return found

    return ready


def _handling_issues(
    pack: StoryPack, state: WorldState, after: WorldState, ready: Callable[[], list[tuple[str, Action]]]
) -> Iterator[Issue]:
    """The takes from the dark and the refused drops of a turn in the player's room in `state`,
    judged in that state (`ready`: the actions that can be done in it)."""
    here = state["location"]
    if state["items"] == after["items"] and here != PLAYER:  # nothing taken or dropped (most turns)
        return
    room = pack.rooms[here]
    for item_id, was in state["items"].items():
        now = after["items"][item_id]
        if was == here and now == PLAYER and room.is_dark(state):
            yield Issue(
                f"/items/{item_id}",
                RULE,
                f"{pack.items[item_id].name} lies in {room.name}, which is dark now: nothing there can be seen "
                f'or taken. Leave /items/{item_id} as it is ("{was}"), and tell of the dark instead.',
            )
        if was == PLAYER and now == here and not any(a.effects.items.get(item_id) == now for _, a in ready()):
            refusing = [i for i, a in ready() if a.refuses and a.item == item_id and set(a.verbs) & set(DROP_VERBS)]
            if refusing:
                yield Issue(
                    f"/items/{item_id}",
                    RULE,
                    f"the story does not let {pack.items[item_id].name} be dropped in {room.name}: {refusing[0]} "
                    f'answers that in the story\'s words. Leave /items/{item_id} as it is ("{PLAYER}") and tell '
                    "that instead.",
                )


def _shows(pack: StoryPack, effects: Effects, before: WorldState, after: WorldState) -> bool:
    """Whether the state after a turn shows every effect (a stat's delta from the state before)."""
    stats_ok = all(
        after["stats"][s] == max(pack.stats[s].min, min(pack.stats[s].max, before["stats"][s] + d))
        for s, d in effects.stats.items()
    )
    return (
        stats_ok
        and all(after["flags"][f] == v for f, v in effects.flags.items())
        and all(after["items"][i] == at for i, at in effects.items.items())
    )


def _first_path(effects: Effects) -> str:
    for section in ("stats", "flags", "items"):
        keys = list(getattr(effects, section))
        if keys:
            return f"/{section}/{keys[0]}"
    return "/location"


class _Turn:
    """One turn's changes, and the actions that could have made them."""

    def __init__(self, before: WorldState, after: WorldState, pack: StoryPack):
        self.before, self.after, self.pack = before, after, pack
        self.free_stats = set(pack.free.stats)
        placed = after["items"]
        moved_items = {i: placed[i] if world_move(was, placed[i]) else was for i, was in before["items"].items()}
        self.moved = {**before, "location": after["location"], "items": moved_items}
        """The state once the turn's moves, takes and drops are done, and nothing else."""
        self.candidates = [
            (action_id, action)
            for action_id, action in pack.actions.items()
            if (can_do(pack, action, before) or can_do(pack, action, self.moved)) and self._consistent(action.effects)
        ]

    def _consistent(self, effects: Effects) -> bool:
        """Whether the state after the turn shows every flag and place the effects set."""
        free = self.pack.free
        return all(self.after["flags"][f] == v or f in free.flags for f, v in effects.flags.items()) and all(
            self.after["items"][i] == at or i in free.items for i, at in effects.items.items()
        )

    def _stats_of(self, effects: Effects) -> dict[str, int]:
        return {s: d for s, d in effects.stats.items() if s not in self.free_stats}

    def explained(self, changes: list[Change]) -> bool:
        """Whether some set of the candidate actions makes exactly these changes."""
        steady = [a for _, a in self.candidates if not self._stats_of(a.effects)]
        kinds = {a.effects.model_dump_json(): a for _, a in self.candidates if self._stats_of(a.effects)}
        counting = list(kinds.values())
        for chosen in _subsets(counting):
            done = [*steady, *chosen]
            if self._stats_match(chosen) and all(self._sets(done, c) for c in changes if c.section != "stats"):
                return True
        return False

    def _stats_match(self, chosen: Iterable[Action]) -> bool:
        expected = dict(self.before["stats"])
        for action in chosen:
            for stat_id, delta in self._stats_of(action.effects).items():
                stat = self.pack.stats[stat_id]
                expected[stat_id] = max(stat.min, min(stat.max, expected[stat_id] + delta))
        return all(expected[s] == self.after["stats"][s] for s in expected if s not in self.free_stats)

    @staticmethod
    def _sets(actions: Iterable[Action], change: Change) -> bool:
        effects: Iterable[dict[str, Any]] = (getattr(a.effects, change.section) for a in actions)
        return any(values.get(change.key, object()) == change.now for values in effects)

    def explains(self, change: Change) -> bool:
        """Whether the candidate actions can account for this one change, leaving the others aside."""
        if change.section != "stats":
            return self._sets((a for _, a in self.candidates), change)
        stat = self.pack.stats[change.key]
        counting = [a for _, a in self.candidates if change.key in self._stats_of(a.effects)]
        for chosen in _subsets(counting):
            value = change.was
            for action in chosen:
                value = max(stat.min, min(stat.max, value + action.effects.stats[change.key]))
            if chosen and value == change.now:
                return True
        return False

    def makers(self, change: Change) -> list[tuple[str, Action]]:
        """The pack's actions that make a change like this one (a stat: in the same direction)."""
        if change.section == "stats":
            up = change.now > change.was
            return [
                (i, a)
                for i, a in self.pack.actions.items()
                if change.key in a.effects.stats and (a.effects.stats[change.key] > 0) == up
            ]
        return [(i, a) for i, a in self.pack.actions.items() if self._sets((a,), change)]

    def issue(self, change: Change) -> Issue:
        what = describe_change(self.pack, change)
        makers = self.makers(change)
        keep = f"Leave {change.path} as it is ({_value(self.pack, change.section, change.was)})"
        if not makers:
            how = (
                "an item changes place only when it is taken, dropped, or moved by one of the story's actions"
                if change.section == "items"
                else "the story does not leave it free"
            )
            message = f"{what}: no action of this story makes that change, and {how}. {keep}."
            return Issue(change.path, RULE, message)
        ready = [(i, a) for i, a in makers if can_do(self.pack, a, self.before) or can_do(self.pack, a, self.moved)]
        if ready:
            action_id, action = ready[0]
            message = (
                f"{what}: that is what {describe_action(self.pack, action_id, action)} does, and it can be done "
                f"now, but only whole: {describe_effects(self.pack, action.effects, self.before)}. Patch exactly "
                f"those changes, or {keep[0].lower()}{keep[1:]}."
            )
            return Issue(change.path, RULE, message)
        needs = "; ".join(
            f"{describe_action(self.pack, i, a)} needs {', '.join(unmet(self.pack, a, self.before))}"
            for i, a in makers[:ACTIONS_DESCRIBED]
        )
        message = (
            f"{what}: only a story action makes that change, and none that does can be done now. {needs}. "
            f"{keep}, and tell what happens instead."
        )
        return Issue(change.path, RULE, message)

    def together(self, changes: list[Change]) -> Issue:
        listed = ", ".join(describe_change(self.pack, c) for c in changes)
        ready = "; ".join(
            f"{describe_action(self.pack, i, a)}: {describe_effects(self.pack, a.effects, self.before)}"
            for i, a in self.candidates[:ACTIONS_DESCRIBED]
        )
        message = (
            f"The turn changes {listed}, which is not what the actions that can be done now make together "
            f"({ready}). Patch exactly the whole effects of the actions the narrative tells."
        )
        return Issue(changes[0].path, RULE, message)


def _subsets(actions: list[Action]) -> Iterator[tuple[Action, ...]]:
    """Every set of the actions, smallest first, up to `COMBINATIONS_TRIED` of them."""
    sets = itertools.chain.from_iterable(itertools.combinations(actions, n) for n in range(len(actions) + 1))
    return itertools.islice(sets, COMBINATIONS_TRIED)


# words ----------------------------------------------------------------------------------------


def _value(pack: StoryPack, section: str, value: Any) -> str:
    if section == "items":
        return f'"{value}", {describe_place(pack, value)}'
    return str(value).lower() if isinstance(value, bool) else str(value)


def _stat_name(pack: StoryPack, stat_id: str) -> str:
    return pack.stats[stat_id].label or stat_id


def describe_change(pack: StoryPack, change: Change) -> str:
    """A change as the story would say it, with the path the patch used."""
    if change.section == "flags":
        return f"{change.path} goes from {_value(pack, 'flags', change.was)} to {_value(pack, 'flags', change.now)}"
    if change.section == "stats":
        label = pack.stats[change.key].label
        named = f"{change.path} ({label})" if label else change.path
        return f"{named} goes from {change.was} to {change.now}"
    item = pack.items[change.key].name
    return f"{item} ({change.path}) moves from {describe_place(pack, change.was)} to {describe_place(pack, change.now)}"


def describe_action(pack: StoryPack, action_id: str, action: Action) -> str:
    """An action by its id and the words a player would use for it."""
    thing = f" {pack.items[action.item].name}" if action.item is not None else ""
    if action.catch_all:
        return f"{action_id} (any command in {pack.rooms[action.room or pack.start].name} but a move through an exit)"
    if not action.verbs:
        return f'{action_id} ("go {action.direction}" from {pack.rooms[action.room or pack.start].name})'
    return f'{action_id} ("{action.verbs[0]}{thing}")'


def describe_effects(pack: StoryPack, effects: Effects, state: WorldState) -> str:
    """An action's whole effects as patch paths and the values they lead to from this state."""
    parts = [f"/flags/{f} = {str(v).lower()}" for f, v in effects.flags.items()]
    for stat_id, delta in effects.stats.items():
        stat = pack.stats[stat_id]
        value = max(stat.min, min(stat.max, state["stats"][stat_id] + delta))
        parts.append(f"/stats/{stat_id} {delta:+d} (to {value})")
    parts += [f'/items/{i} = "{at}"' for i, at in effects.items.items()]
    return ", ".join(parts) or "no change"


def unmet(pack: StoryPack, action: Action, state: WorldState) -> list[str]:
    """What keeps the action from being done in this state, each with how things stand now."""
    here = pack.rooms[state["location"]].name
    found = []
    room = action.room or action.requires.location
    if room is not None and state["location"] != room:
        found.append(f"the player in {pack.rooms[room].name} (now in {here})")
    if action.item is not None and not within_reach(pack, state, action.item):
        item = pack.items[action.item].name
        place = describe_place(pack, state["items"][action.item])
        dark = ", which is dark" if state["items"][action.item] == state["location"] else ""
        found.append(f"{item} within reach (now in {place}{dark})")
    found += _unmet_condition(pack, action.requires, state)
    if not found and already_done(action, state):
        found.append("not to be done already (its effects hold now)")
    return found


def _unmet_condition(pack: StoryPack, cond: Condition, state: WorldState) -> list[str]:
    found = []
    for item_id, wanted in cond.items.items():
        now = state["items"][item_id]
        if now != wanted:
            item = pack.items[item_id].name
            want = f"carrying {item}" if wanted == PLAYER else f"{item} in {describe_place(pack, wanted)}"
            found.append(f"{want} (now in {describe_place(pack, now)})")
    for flag, wanted_flag in cond.flags.items():
        if state["flags"][flag] != wanted_flag:
            found.append(f"{flag} {str(wanted_flag).lower()} (now {str(state['flags'][flag]).lower()})")
    for stat_id, least in cond.stats_at_least.items():
        if state["stats"][stat_id] < least:
            found.append(f"{_stat_name(pack, stat_id)} at least {least} (now {state['stats'][stat_id]})")
    for stat_id, most in cond.stats_at_most.items():
        if state["stats"][stat_id] > most:
            found.append(f"{_stat_name(pack, stat_id)} at most {most} (now {state['stats'][stat_id]})")
    found += [f"not {_described(pack, other)} (it holds now)" for other in cond.unless if other.holds(state)]
    return found


def _described(pack: StoryPack, cond: Condition) -> str:
    """A condition as a sentence's part: "carrying oil lantern and lantern_lit true"."""
    parts = [f"the player in {pack.rooms[cond.location].name}"] if cond.location is not None else []
    for item_id, at in cond.items.items():
        item = pack.items[item_id].name
        parts.append(f"carrying {item}" if at == PLAYER else f"{item} in {describe_place(pack, at)}")
    parts += [f"{flag} {str(value).lower()}" for flag, value in cond.flags.items()]
    parts += [f"{_stat_name(pack, s)} at least {v}" for s, v in cond.stats_at_least.items()]
    parts += [f"{_stat_name(pack, s)} at most {v}" for s, v in cond.stats_at_most.items()]
    parts += [f"not {_described(pack, other)}" for other in cond.unless]
    return "(" + " and ".join(parts) + ")" if len(parts) > 1 else "".join(parts) or "anything"


# what a pack binds, and what can never happen ------------------------------------------------


@dataclass(frozen=True)
class Binding:
    """What a pack's actions govern, what it leaves free, and what can never happen in it
    (`storyloom check-story` prints it).

    Attributes:
        bound: for each bound flag, stat and item (`flags/ID`, `stats/ID`, `items/ID`), the actions that change it.
        fixed: flags and stats no action changes and the pack does not leave free: they never change.
        free: what the pack leaves to the narrator (`flags/ID`, ...).
        never_done: actions whose room, item and requirements can never all hold.
        never_reached: endings whose condition can never hold.
    """

    bound: dict[str, list[str]]
    fixed: list[str]
    free: list[str]
    never_done: list[str]
    never_reached: list[str]


def binding(pack: StoryPack) -> Binding:
    """What the story's rules bind in this pack, and what its actions and endings can never reach."""
    free = [f"{section}/{key}" for section in ("flags", "stats", "items") for key in getattr(pack.free, section)]
    bound: dict[str, list[str]] = {}
    for action_id, action in pack.actions.items():
        for section in ("flags", "stats", "items"):
            for key in getattr(action.effects, section):
                if f"{section}/{key}" not in free:
                    bound.setdefault(f"{section}/{key}", []).append(action_id)
    fixed = [
        f"{section}/{key}"
        for section in ("flags", "stats")
        for key in getattr(pack, section)
        if f"{section}/{key}" not in bound and f"{section}/{key}" not in free
    ]
    reach = _Reach(pack)
    never_done = [action_id for action_id, action in pack.actions.items() if not reach.can_do(action)]
    never_reached = [ending_id for ending_id, ending in pack.endings.items() if not reach.holds(ending.when)]
    return Binding(bound, fixed, free, never_done, never_reached)


class _Reach:
    """Every value each part of the state can ever take, each part on its own: a room the player can
    get to, the places an item can be, a flag's values, a stat's lowest and highest. It is more than
    the story can reach (parts are not tied to one another), so what it cannot reach, the story never can."""

    def __init__(self, pack: StoryPack):
        self.pack = pack
        everywhere = {*pack.rooms, PLAYER, NOWHERE}
        self.rooms = {pack.start}
        self.places = {i: everywhere if i in pack.free.items else {item.at} for i, item in pack.items.items()}
        self.flags = {f: {True, False} if f in pack.free.flags else {v} for f, v in pack.flags.items()}
        self.stats = {
            s: (stat.min, stat.max) if s in pack.free.stats else (stat.initial, stat.initial)
            for s, stat in pack.stats.items()
        }
        while self._grow():
            pass

    def _grow(self) -> bool:
        size = self._size()
        pack = self.pack
        for room_id in list(self.rooms):
            room = pack.rooms[room_id]
            for direction, target in room.exits.items():
                gate = room.gates.get(direction)
                if gate is None or True in self.flags[gate]:
                    self.rooms.add(target)
        for item_id, item in pack.items.items():
            places = self.places[item_id]
            if item.portable and places & self.rooms:
                places.add(PLAYER)
            if PLAYER in places:
                places |= self.rooms
        for action in pack.actions.values():
            if self.can_do(action):
                self._apply(action.effects)
        return self._size() != size

    def _size(self) -> int:
        return (
            len(self.rooms)
            + sum(map(len, self.places.values()))
            + sum(map(len, self.flags.values()))
            + sum(hi - lo for lo, hi in self.stats.values())
        )

    def _apply(self, effects: Effects) -> None:
        for item_id, place in effects.items.items():
            self.places[item_id].add(place)
        for flag, value in effects.flags.items():
            self.flags[flag].add(value)
        for stat_id, delta in effects.stats.items():
            stat, (lo, hi) = self.pack.stats[stat_id], self.stats[stat_id]
            self.stats[stat_id] = (stat.min, hi) if delta < 0 else (lo, stat.max) if delta > 0 else (lo, hi)

    def can_do(self, action: Action) -> bool:
        return (
            (action.room is None or action.room in self.rooms)
            and (action.item is None or bool(self.places[action.item] & {*self.rooms, PLAYER}))
            and self.holds(action.requires)
        )

    def holds(self, cond: Condition) -> bool:
        return (
            (cond.location is None or cond.location in self.rooms)
            and all(at in self.places[i] for i, at in cond.items.items())
            and all(v in self.flags[f] for f, v in cond.flags.items())
            and all(self.stats[s][1] >= v for s, v in cond.stats_at_least.items())
            and all(self.stats[s][0] <= v for s, v in cond.stats_at_most.items())
        )  # `unless` is left out: that none of its conditions holds is always taken to be possible
