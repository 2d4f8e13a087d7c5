"""The offline narrator: a deterministic game master that needs no key and no server.

It speaks to the engine exactly like a remote model: the turn's JSON text in
small streamed deltas, plain text when it "forgets" the structured output, and
a `Finish`. With `faults` above zero it makes the mistakes real models make
(rule violations, prose that disagrees with the patch, wrong types, truncated
JSON, no structured output) and answers corrections by fixing what the issues
name, so every repair path of the engine can be played and tested offline.

Everything is derived from `random.Random` instances seeded with the seed, the
turn number, the attempt and the player's input, never from global random or
the clock: the same pack, seed and inputs give byte-identical events.

Another version of a turn (a regeneration) is seeded with its version number
too: it is worded differently from the versions before it, and a deed that
changes the world sometimes turns out otherwise (the player holds back).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from random import Random
from typing import Any

from storyloom.engine.narration import Chunk, Finish, NarrationRequest, StructuredDelta, TextDelta
from storyloom.engine.narrators.offline import prose as say
from storyloom.engine.narrators.offline.world import RoomsSeen, write_held_back, write_turn
from storyloom.engine.packs import PLAYER, StoryPack
from storyloom.engine.rules import names

FAULT_KINDS: tuple[str, ...] = (
    "take_reach",  # an item taken from another room
    "missing_exit",  # a move to a room no exit leads to
    "stat_bounds",  # a stat pushed out of its bounds
    "not_portable",  # an item that cannot be carried, taken
    "prose_item",  # the patch moves an item the prose does not name
    "wrong_type",  # a field of the wrong type
    "missing_field",  # a required field left out
    "truncated",  # JSON cut off before it is complete
    "no_output",  # plain text only, no structured output at all
)
"""Every realistic way a first attempt can go wrong, by name (see `OfflineNarrator`)."""

STUBBORN_SHARE = 0.25
"""The default share of faults whose corrections fail too."""
RESENDS_PROSE_SHARE = 0.25
"""The share of corrections asked for only the patch that send the whole turn anyway, the prose
the player has read too, as a model that disregards the request would."""
OTHER_OUTCOME_SHARE = 0.5
"""The share of other versions of a world-changing turn in which the deed turns out otherwise."""
WORDINGS_TRIED = 8
"""How many wordings another version tries for one the earlier versions did not use."""


@dataclass(frozen=True)
class Output:
    """What one attempt says: structured JSON text and/or plain text, and why it stopped."""

    structured: str | None
    text: str = ""
    stop_reason: str = "tool_use"


@dataclass(frozen=True)
class FaultPlan:
    """The fault a turn will show, decided once per turn and retry.

    Attributes:
        kind: one of `FAULT_KINDS`.
        repeats: how many corrections repeat the mistake before one fixes it
            (0 for an ordinary fault; a large number never gives in).
    """

    kind: str
    repeats: int


class OfflineNarrator:
    """The built-in narrator: a classic adventure game master over the pack's world.

    Args:
        pack: the story.
        seed: the seed every choice derives from.
        faults: the rate (0..1) at which a first attempt fails in a realistic way.
        pace: seconds between streamed chunks (0 streams everything at once).
        correction_delay: seconds a correction "thinks" before answering; defaults to
            20 x pace, so the correcting status shows for a moment in the UI and
            nothing waits in headless play.
        fault_kinds: restrict faults to these kinds (tests force one this way).
        stubborn: the share of faults whose corrections fail too (a budget can run out).
    """

    name = "offline"
    model = "offline-1"

    def __init__(
        self,
        pack: StoryPack,
        *,
        seed: int = 0,
        faults: float = 0.0,
        pace: float = 0.0,
        correction_delay: float | None = None,
        fault_kinds: Sequence[str] | None = None,
        stubborn: float = STUBBORN_SHARE,
    ):
        if not 0.0 <= faults <= 1.0:
            raise ValueError("faults must be a rate between 0 and 1")
        unknown = set(fault_kinds or ()) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kind(s) {sorted(unknown)}; known: {', '.join(FAULT_KINDS)}")
        self.pack = pack
        self.seed = seed
        self.faults = faults
        self.pace = max(0.0, pace)
        self.correction_delay = 20 * self.pace if correction_delay is None else max(0.0, correction_delay)
        self.fault_kinds = tuple(fault_kinds) if fault_kinds else FAULT_KINDS
        self.stubborn = stubborn
        self._starts: dict[tuple[int, int], int] = {}
        """How many times each (turn, version) was started: a retry is seeded apart from the first try."""
        self._seen = RoomsSeen(pack)

    async def narrate(self, request: NarrationRequest) -> AsyncIterator[Chunk]:
        """Stream the answer to one request: JSON deltas (or plain text), then `Finish`."""
        if request.attempt == 1 and not request.is_correction:
            start = (request.turn, request.alternative)
            self._starts[start] = self._starts.get(start, 0) + 1
        output = self.respond(request)
        pieces = [("t", c) for c in chunks(output.text)] + [("s", c) for c in chunks(output.structured or "")]
        if request.is_correction:
            # A correction is judged whole, never streamed: it "thinks" a moment, then arrives at once.
            if self.correction_delay > 0:
                await asyncio.sleep(self.correction_delay)
            times = [round(self.correction_delay * 1000)] * len(pieces)
        else:
            times = [round(index * self.pace * 1000) for index in range(len(pieces))]
        for index, ((kind, piece), at) in enumerate(zip(pieces, times, strict=True)):
            if index and self.pace > 0 and not request.is_correction:
                await asyncio.sleep(self.pace)
            yield TextDelta(piece, at_ms=at) if kind == "t" else StructuredDelta(piece, at_ms=at)
        yield Finish(output.stop_reason)

    def respond(self, request: NarrationRequest) -> Output:
        """The whole answer to a request, decided without any waiting."""
        retry = max(0, self._starts.get((request.turn, request.alternative), 1) - 1)
        key = f"{self.seed}|{request.turn}|{retry}|{request.player_input}"
        if request.is_regeneration:
            key += f"|version {request.alternative}"
        clean = _meant(request, key, self._seen if request.pack is self.pack else None)
        plan = self._plan(request, clean, retry, Random(f"plan|{key}"))
        rng = Random(f"attempt|{key}|{request.attempt}")
        if not request.is_correction:
            return _faulty(plan.kind, clean, request, rng) if plan else _whole(clean)
        corrections = request.attempt - 1
        if plan is not None and corrections <= plan.repeats:
            return _faulty(plan.kind, clean, request, rng)
        return _fix(clean, request, rng)

    def _plan(self, request: NarrationRequest, clean: dict[str, Any], retry: int, rng: Random) -> FaultPlan | None:
        """Whether this turn (this retry of it) goes wrong, and how; retries mostly go right."""
        rate = self.faults if retry == 0 else self.faults / 4
        if rng.random() >= rate:
            return None
        kinds = [k for k in self.fault_kinds if _applicable(k, clean, request)]
        if not kinds:
            return None
        kind = rng.choice(kinds)
        repeats = 0
        if retry == 0 and rng.random() < self.stubborn:
            repeats = rng.choice((1, 1_000))
        return FaultPlan(kind, repeats)


def _meant(request: NarrationRequest, key: str, seen: RoomsSeen | None) -> dict[str, Any]:
    """The valid turn the narrator means to give; for another version, one worded unlike the earlier
    versions while the phrasebook has another wording left (a few replies have only three), and
    (seeded) sometimes with another outcome."""
    pack, state, history, command = request.pack, request.state, request.history, request.player_input
    if not request.is_regeneration:
        return write_turn(pack, state, history, command, Random(f"turn|{key}"), seen)
    otherwise = Random(f"outcome|{key}").random() < OTHER_OUTCOME_SHARE
    turn: dict[str, Any] = {}
    earlier = request.earlier_versions
    for wording in range(WORDINGS_TRIED):
        rng = Random(f"turn|{key}|{wording}")
        turn = write_turn(pack, state, history, command, rng, seen, earlier)
        if otherwise and turn["state_patch"]:
            turn = write_held_back(pack, state, history, rng, earlier) or turn
        if turn["narrative"] not in earlier:
            break
    return turn


def chunks(text: str) -> list[str]:
    """Split text into stream deltas of a few characters to a word, as a model streams tokens."""
    return re.findall(r"\s*\S{1,8}|\s+", text)


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False)


def _whole(turn: dict[str, Any]) -> Output:
    return Output(_dump(turn))


# faults -------------------------------------------------------------------------------------


def _moved_items(turn: dict[str, Any]) -> list[str]:
    return [op["path"].split("/")[2] for op in turn["state_patch"] if op["path"].startswith("/items/")]


def _after_location(turn: dict[str, Any], state: dict[str, Any]) -> str:
    moves = [str(op["value"]) for op in turn["state_patch"] if op["path"] == "/location"]
    return moves[-1] if moves else str(state["location"])


def _far_items(clean: dict[str, Any], request: NarrationRequest) -> list[str]:
    here = {request.state["location"], _after_location(clean, request.state)}
    pack = request.pack
    return [
        i for i, at in request.state["items"].items() if at in pack.rooms and at not in here and pack.items[i].portable
    ]


def _unreachable_rooms(request: NarrationRequest) -> list[str]:
    here = request.state["location"]
    neighbours = set(request.pack.rooms[here].exits.values())
    return [r for r in request.pack.rooms if r != here and r not in neighbours]


def _heavy_items(request: NarrationRequest) -> list[str]:
    """Items that cannot be carried, those in the player's room first (the likelier slip)."""
    heavy = [i for i, item in request.pack.items.items() if not item.portable and request.state["items"][i] != PLAYER]
    here = [i for i in heavy if request.state["items"][i] == request.state["location"]]
    return here or heavy


def _silent_moves(clean: dict[str, Any], request: NarrationRequest) -> list[tuple[str, str]]:
    """Item moves that would be legal but that the prose does not mention: (item, new place)."""
    pack, state = request.pack, request.state
    here = _after_location(clean, state)
    found = []
    for item_id, at in state["items"].items():
        if names(clean["narrative"], pack.item_words(item_id)) or item_id in _moved_items(clean):
            continue
        if at == state["location"] == here and pack.items[item_id].portable:
            found.append((item_id, PLAYER))
        elif at == PLAYER:
            found.append((item_id, here))
    return found


def _applicable(kind: str, clean: dict[str, Any], request: NarrationRequest) -> bool:
    checks = {
        "take_reach": lambda: bool(_far_items(clean, request)),
        "missing_exit": lambda: bool(_unreachable_rooms(request)),
        "stat_bounds": lambda: bool(request.pack.stats),
        "not_portable": lambda: bool(_heavy_items(request)),
        "prose_item": lambda: bool(_moved_items(clean) or _silent_moves(clean, request)),
    }
    return checks.get(kind, lambda: True)()


def _faulty(kind: str, clean: dict[str, Any], request: NarrationRequest, rng: Random) -> Output:
    """The attempt as a model that made this mistake would write it."""
    pack = request.pack
    narrative, patch, hints = clean["narrative"], list(clean["state_patch"]), clean["suggestions"]
    if kind == "take_reach":
        item = pack.items[item_id := rng.choice(_far_items(clean, request))]
        narrative += " " + say.pick(
            rng,
            ("You also pocket {the}.", "On your way, you pick up {the} as well.", "And you take {the} too."),
            the=say.the(item.name),
        )
        patch.append({"op": "replace", "path": f"/items/{item_id}", "value": PLAYER})
    elif kind == "missing_exit":
        room = pack.rooms[room_id := rng.choice(_unreachable_rooms(request))]
        narrative = say.pick(
            rng,
            ("You push on, and on, until you come to {the}.", "Somehow your steps bring you to {the}."),
            the=say.the(room.name),
        )
        narrative += " " + room.description_in(request.state)
        patch = [{"op": "replace", "path": "/location", "value": room_id}]
    elif kind == "stat_bounds":
        stat_id = rng.choice(list(pack.stats))
        stat = pack.stats[stat_id]
        value = rng.choice((stat.max + 1, stat.max + rng.randint(2, 9), stat.min - 1))
        patch.append({"op": "replace", "path": f"/stats/{stat_id}", "value": value})
    elif kind == "not_portable":
        item = pack.items[item_id := rng.choice(_heavy_items(request))]
        narrative += " " + say.pick(
            rng, ("You heave {the} up and carry it with you.", "Somehow you take {the} along."), the=say.the(item.name)
        )
        patch.append({"op": "replace", "path": f"/items/{item_id}", "value": PLAYER})
    elif kind == "prose_item":
        moved = _moved_items(clean)
        if moved:
            words = [w for item_id in moved for w in pack.item_words(item_id)]
            kept = [s for s in say.sentences(narrative.replace("\n\n", " ")) if not names(s, words)]
            narrative = " ".join(kept) or say.pick(rng, ("You see to it and carry on.", "Done; you carry on."))
        else:
            item_id, place = rng.choice(_silent_moves(clean, request))
            patch.append({"op": "replace", "path": f"/items/{item_id}", "value": place})
    elif kind == "wrong_type":
        return _wrong_type(clean, request, rng)
    elif kind == "missing_field":
        if patch and rng.random() < 0.5:
            broken = [{k: v for k, v in op.items() if k != "op"} for op in patch]
            return Output(_dump({"narrative": narrative, "state_patch": broken, "suggestions": hints}))
        return Output(_dump({"text": narrative, "state_patch": patch, "suggestions": hints}))
    elif kind == "truncated":
        raw = _dump(clean)
        cut = rng.randint(len(raw) * 2 // 5, len(raw) * 9 // 10)
        return Output(raw[:cut], stop_reason=rng.choice(("max_tokens", "end")))
    elif kind == "no_output":
        return Output(None, text=narrative, stop_reason="end")
    return Output(_dump({"narrative": narrative, "state_patch": patch, "suggestions": hints}))


def _wrong_type(clean: dict[str, Any], request: NarrationRequest, rng: Random) -> Output:
    variants = ["suggestions", "narrative"]
    if request.pack.stats:
        variants.append("stat")
    if clean["state_patch"]:
        variants.append("patch")
    variant = rng.choice(variants)
    data = dict(clean)
    if variant == "suggestions":
        data["suggestions"] = "; ".join(clean["suggestions"]) or "look"
    elif variant == "narrative":
        data["narrative"] = [p for p in clean["narrative"].split("\n\n") if p]
    elif variant == "stat":
        stat_id = rng.choice(list(request.pack.stats))
        value = request.state["stats"][stat_id]
        data["state_patch"] = [
            *clean["state_patch"],
            {"op": "replace", "path": f"/stats/{stat_id}", "value": str(value)},
        ]
    else:
        data["state_patch"] = clean["state_patch"][0]
    return Output(_dump(data))


# corrections --------------------------------------------------------------------------------


def _fix(clean: dict[str, Any], request: NarrationRequest, rng: Random) -> Output:
    """Answer a correction with the turn the narrator meant, fixing what the issues name.

    The issues point at either the patch or the prose. When the prose on screen is the
    prose it meant (the mistake was an extra or malformed patch operation), it usually
    answers as the correction asks: the corrected `state_patch` alone, and its suggestions
    only if the correction does not keep them (`request.kept`); in `RESENDS_PROSE_SHARE` of
    them it sends the whole turn anyway, as a model that disregards the request would. When the prose was part
    of the mistake (it told of a deed that broke a rule, or forgot to name what moved), or
    no turn could be read at all, it sends the whole turn again, and the engine swaps the prose.
    """
    if request.kept_narrative == clean["narrative"] and rng.random() < 1 - RESENDS_PROSE_SHARE:
        answer: dict[str, Any] = {"state_patch": clean["state_patch"]}
        if request.kept.get("suggestions") != clean["suggestions"]:
            answer["suggestions"] = clean["suggestions"]
        return Output(_dump(answer))
    return _whole(clean)
