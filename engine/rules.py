"""The rules every turn must pass before it may touch the world.

`judge` takes a narrator's raw output and returns a `Verdict`: the parsed turn
and the state it leads to, or the issues that stop it. It never clamps, fills
in or repairs anything; a turn passes as written or not at all.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonpatch
import jsonpointer
import pydantic_core
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from storyloom.engine.packs import NOWHERE, PLAYER, StoryPack
from storyloom.engine.state import WorldState, describe_place, plainly_valid, state_model
from storyloom.engine.story import in_sight, story_issues
from storyloom.engine.turns import Issue, Turn

OUTPUT_MAX_CHARS = 200_000
"""Raw output longer than this is refused unparsed, so parsing stays bounded."""

RULES: dict[str, str] = {
    "output.missing": "the reply carried no structured turn at all",
    "output.too_large": f"the raw output is over {OUTPUT_MAX_CHARS} characters",
    "output.json": "the structured output is not complete, valid JSON",
    "output.truncated": "the answer was cut off at the narrator's output limit (the lifecycle's check)",
    "turn.schema": "a field of the turn is missing, of the wrong type or out of bounds",
    "patch.path": "a patch path is outside the declared world",
    "patch.apply": "a patch operation cannot be applied to the state",
    "state.schema": "the resulting state has a value of the wrong kind",
    "move.exit": "the player moved somewhere that is not an exit of the room",
    "move.gate": "the player went through an exit that is still closed",
    "item.take_reach": "an item was taken that is not in the player's room",
    "item.not_portable": "an item that cannot be carried was taken",
    "item.drop_reach": "an item was dropped somewhere other than the player's room",
    "stat.bounds": "a stat left its declared bounds",
    "prose.item": "an item changed place but the narrative does not name it",
    "prose.room": "the player moved but the narrative does not name the new room",
    "story.action": "a flag, a stat or an item's place changed other than as the whole effects of "
    "story actions that can be done now (or than the story leaves free)",
}

RULE_SET = 4
"""The rules new turns are judged by. A save names the set it was played under (its header's
`rules`), and is judged by that set ever after; see `RULE_SETS`."""
RULE_SETS: dict[int, str] = {
    1: "the world's rules only, from before story.action",
    2: "the world's rules and the story's",
    3: "the world's rules and the story's, a take or a drop judged in the room walked into too",
    4: "as set 3; a correction keeps every field of the rejected turn it leaves out, not only its narrative",
}
KEEPS_EVERY_FIELD = 4
"""From this rule set on, a correction's answer is laid over the rejected turn (`kept_fields`): each field
it sends replaces the rejected one, each it leaves out is kept. Before it, only a narrative left out was kept
(a patch or suggestions left out were none), and a save played so is still read so."""


def commit_rules(rules: int) -> int:
    """The rule set a commit itself is judged by: set 4 judges a whole turn as set 3 does (it changed
    only what a correction's answer gives), so verify need not judge a set-3 save's commits twice."""
    return min(rules, 3)


@dataclass(frozen=True)
class Verdict:
    """The outcome of judging one output: a turn and its state, or issues."""

    turn: Turn | None
    after: WorldState | None
    issues: tuple[Issue, ...]

    @property
    def ok(self) -> bool:
        return not self.issues and self.turn is not None and self.after is not None


def parse_output(raw: str | None) -> tuple[dict[str, Any] | None, tuple[Issue, ...]]:
    """Parse raw structured output into a JSON object, or say why it cannot be."""
    if raw is None or not raw.strip():
        return None, (
            Issue(
                "",
                "output.missing",
                "No turn was reported through the structured output. Report the final answer through it now.",
            ),
        )
    if len(raw) > OUTPUT_MAX_CHARS:
        return None, (
            Issue(
                "",
                "output.too_large",
                f"The output is {len(raw)} characters; a turn must be far shorter (narrative at most 4000 characters).",
            ),
        )
    try:
        data = json.loads(raw, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        return None, (Issue("", "output.json", _json_fault(raw, exc)),)
    except (ValueError, RecursionError) as exc:
        reason = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return None, (Issue("", "output.json", f"The output is not acceptable JSON: {reason}."),)
    if _has_lone_surrogate(raw, data):
        return None, (
            Issue(
                "",
                "output.json",
                "The output is not acceptable JSON: a \\u escape names half of a "
                "surrogate pair, which is not a character. Write plain text.",
            ),
        )
    if not isinstance(data, dict):
        return None, (
            Issue(
                "",
                "output.json",
                f"The output must be a JSON object with narrative and state_patch, not a {type(data).__name__}.",
            ),
        )
    return data, ()


def _json_fault(raw: str, exc: json.JSONDecodeError) -> str:
    """What is wrong with output that does not parse, in words that tell the model what to change.

    Two objects back to back (`{…}{…}`, a server that ran two tool calls together) are whole
    JSON with more after it, not a cut-off answer: asking for "the rest" of them would mislead.
    """
    if _has_extra_data(raw, exc):
        return (
            f"The output is one complete JSON value followed by more text from character {exc.pos} "
            f"(two objects back to back?). Send exactly one JSON object for the turn and nothing after it."
        )
    where = "it ends before the JSON is complete" if _is_truncated(raw) else f"at character {exc.pos}: {exc.msg}"
    return f"The output is not valid JSON ({where}). Send the whole turn as one complete JSON object."


def _has_extra_data(raw: str, exc: json.JSONDecodeError) -> bool:
    """Whether a complete JSON value ends before the text does (the parser's "Extra data")."""
    return exc.msg == "Extra data" and bool(raw[exc.pos :].strip())


def _is_truncated(raw: str) -> bool:
    """Whether the text is a valid start of JSON that simply stops (a cut-off stream).

    Ask only once `_has_extra_data` said no: a complete value followed by more text also
    passes here, because the partial parser stops after the first value.
    """
    try:
        pydantic_core.from_json(raw, allow_partial=True)
    except ValueError:
        return False
    return True


def _has_lone_surrogate(raw: str, data: Any) -> bool:
    """Whether the parsed value holds a lone surrogate (from an escape such as \\ud800): such a string
    cannot be written as UTF-8, so it would break every save, transcript and screen it reached."""
    if "\\u" not in raw:
        return False
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def judge(
    raw: str | None,
    before: WorldState,
    pack: StoryPack,
    *,
    kept: Mapping[str, Any] | None = None,
    rules: int = RULE_SET,
) -> Verdict:
    """Judge a narrator's raw output against the committed state.

    Args:
        raw: the structured output as JSON text, or None when there was none.
        before: the committed state the turn starts from.
        pack: the story the turn is played in.
        kept: for a correction, the fields of the rejected turn it keeps (`kept_fields`): the
            answer is laid over them, so a field it leaves out is the rejected turn's, and the
            merged whole is judged as any turn.
        rules: the rule set (`RULE_SETS`): a save is judged by the one it was played under.
    """
    data, issues = parse_output(raw)
    if data is None:
        return Verdict(None, None, issues)
    return judge_data(data, before, pack, kept=kept, rules=rules)


def judge_data(
    data: dict[str, Any],
    before: WorldState,
    pack: StoryPack,
    *,
    kept: Mapping[str, Any] | None = None,
    rules: int = RULE_SET,
) -> Verdict:
    """`judge` over output already parsed into a JSON object: a save's recorded commit is judged
    as read, without spelling it as JSON again to parse it back."""
    if rules not in RULE_SETS:
        raise ValueError(f"unknown rule set {rules!r}; this storyloom knows {', '.join(map(str, RULE_SETS))}")
    if kept:
        data = {**kept, **data}
    try:
        turn = Turn.model_validate(data)
    except ValidationError as exc:
        return Verdict(None, None, tuple(_schema_issue(e) for e in exc.errors()))
    issues = tuple(_path_issues(turn, pack))
    if issues:
        return Verdict(turn, None, issues)
    after = _patched(before, turn)
    if after is None:
        try:
            after = jsonpatch.JsonPatch(turn.patch_json()).apply(_copy_state(before), in_place=True)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, ValueError) as exc:
            return Verdict(turn, None, (Issue("/state_patch", "patch.apply", f"The patch cannot be applied: {exc}."),))
    issues = tuple(_state_issues(after, pack))
    if issues:
        return Verdict(turn, None, issues)
    issues = tuple(issue for rule in WORLD_RULES for issue in rule(before, after, turn, pack))
    if rules >= 2:
        issues += tuple(story_issues(before, after, pack, walked_into=rules >= 3))
    return Verdict(turn, None if issues else after, issues)


def _copy_state(state: WorldState) -> WorldState:
    """A copy deep enough for a patch: the sections are fresh dicts, their values are scalars."""
    return {key: dict(value) if isinstance(value, dict) else value for key, value in state.items()}


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _patched(before: WorldState, turn: Turn) -> WorldState | None:
    """The state after the turn's patch, when each operation is one jsonpatch applies plainly: an add,
    a replace of a member there or a test that holds, of a scalar at /location or /<section>/<id>
    (all a turn's patch ever is). It is then the very state jsonpatch makes of it, without building
    its objects; None when any operation is otherwise (a remove, an escape, a test that fails, ...),
    and jsonpatch applies the patch and names what is wrong."""
    after = _copy_state(before)  # a turn that changes nothing (look, examine) is a copy of the state
    for op in turn.state_patch:
        path, value = op.path, op.value
        if op.op == "remove" or "~" in path or type(value) not in _SCALARS:
            return None
        parts = path.split("/")
        section = after.get(parts[1]) if len(parts) == 3 and not parts[0] else None
        if path == "/location":
            target, key = after, "location"
        elif type(section) is dict:
            target, key = section, parts[2]
        else:
            return None
        if op.op == "add":
            target[key] = value
        elif key not in target:
            return None
        elif op.op == "replace":
            target[key] = value
        elif type(target[key]) is not type(value) or target[key] != value:  # a test
            return None
    return after


def _schema_issue(error: ErrorDetails) -> Issue:
    path = "/" + "/".join(str(p) for p in error["loc"])
    field = str(error["loc"][0]) if error["loc"] else ""
    if error["type"] == "missing":
        message = f"{error['loc'][-1]} is required" + (
            f" in {path.rsplit('/', 1)[0]}." if len(error["loc"]) > 1 else "."
        )
    elif error["type"] == "extra_forbidden":
        message = f"{field} is not a field of a turn; use only narrative, state_patch and suggestions."
    else:
        message = f"{error['msg']}."
    hints = {
        "narrative": "narrative must be a string of 1 to 4000 characters.",
        "state_patch": "state_patch must be a list of at most 200 operations {op, path, value} "
        "with op one of add, remove, replace, test.",
        "suggestions": "suggestions must be a list of at most 4 strings of at most 80 characters.",
    }
    if field in hints:
        message = f"{message} {hints[field]}"
    return Issue(path, "turn.schema", message)


_LEAF = re.compile(r"^/(location)$|^/(items|stats|flags)/([^/]+)$")


def _path_issues(turn: Turn, pack: StoryPack) -> Iterable[Issue]:
    if not turn.state_patch:
        return
    sections: dict[str, Mapping[str, object]] = {"items": pack.items, "stats": pack.stats, "flags": pack.flags}
    singular = {"items": "item", "stats": "stat", "flags": "flag"}
    for index, op in enumerate(turn.state_patch):
        where = f"/state_patch/{index}/path"
        match = _LEAF.match(op.path)
        if match is None:
            yield Issue(
                where,
                "patch.path",
                f"{op.path!r} cannot be patched; only /location, /items/<id>, /stats/<id> and /flags/<id> can.",
            )
            continue
        section, key = match.group(2), match.group(3)
        if section is None:
            continue
        key = key.replace("~1", "/").replace("~0", "~")
        if key not in sections[section]:
            known = ", ".join(sections[section]) or "none"
            yield Issue(
                where,
                "patch.path",
                f"There is no {singular[section]} {key!r} in this story; declared {section}: {known}.",
            )
        elif op.op == "remove":
            yield Issue(
                where,
                "patch.path",
                f"{op.path} cannot be removed; every declared {singular[section]} stays in the state (use replace).",
            )


def _state_issues(after: Any, pack: StoryPack) -> Iterable[Issue]:
    if plainly_valid(after, pack):
        return
    try:
        state_model(pack).model_validate(after)
    except ValidationError as exc:
        for error in exc.errors():
            loc = [str(p) for p in error["loc"]]
            path = "/" + "/".join(loc)
            yield Issue(path, "state.schema", _state_message(loc, error, pack))


def _state_message(loc: list[str], error: ErrorDetails, pack: StoryPack) -> str:
    section = loc[0] if loc else ""
    if section == "location":
        return f"location must be one of the rooms: {', '.join(pack.rooms)}."
    if section == "items":
        return f"An item's place must be a room id, {PLAYER!r} or {NOWHERE!r}; rooms: {', '.join(pack.rooms)}."
    if section == "stats":
        return "A stat must be a whole number (not a string, float or boolean)."
    if section == "flags":
        return "A flag must be true or false."
    return f"{error['msg']}."


WorldRule = Callable[[WorldState, WorldState, Turn, StoryPack], Iterable[Issue]]


def _movement(before: WorldState, after: WorldState, turn: Turn, pack: StoryPack) -> Iterable[Issue]:
    here, there = before["location"], after["location"]
    if here == there:
        return
    room = pack.rooms[here]
    exits = {d: t for d, t in room.exits.items()}
    listing = ", ".join(f"{d} to {pack.rooms[t].name} ({t})" for d, t in exits.items()) or "none"
    directions = [d for d, t in exits.items() if t == there]
    if not directions:
        yield Issue(
            "/location",
            "move.exit",
            f"The player cannot go from {room.name} ({here}) to "
            f"{pack.rooms[there].name} ({there}) in one turn; "
            f"exits from {here}: {listing}.",
        )
        return
    open_ways = [d for d in directions if d not in room.gates or before["flags"][room.gates[d]]]
    if not open_ways:
        gate = room.gates[directions[0]]
        yield Issue(
            "/location",
            "move.gate",
            f"The way {directions[0]} from {room.name} is closed until flag {gate!r} is true; it is false now.",
        )


def _item_moves(before: WorldState, after: WorldState, turn: Turn, pack: StoryPack) -> Iterable[Issue]:
    if before["items"] == after["items"]:  # nothing moved (most turns): no item to look at
        return
    rooms_here = {before["location"], after["location"]}
    for item_id, was in before["items"].items():
        now = after["items"][item_id]
        if was == now:
            continue
        item = pack.items[item_id]
        path = f"/items/{item_id}"
        if now == PLAYER:
            if not item.portable:
                yield Issue(
                    path,
                    "item.not_portable",
                    f"{item.name} ({item_id}) cannot be carried; leave it at {describe_place(pack, was)}.",
                )
            elif was not in rooms_here:
                yield Issue(
                    path,
                    "item.take_reach",
                    f"{item.name} ({item_id}) is at {describe_place(pack, was)}, "
                    f"not in the player's room ({pack.rooms[before['location']].name}); "
                    f"it can only be taken there.",
                )
        elif was == PLAYER and now != NOWHERE and now not in rooms_here:
            yield Issue(
                path,
                "item.drop_reach",
                f"{item.name} ({item_id}) can only be dropped in the player's "
                f"room ({pack.rooms[after['location']].name}), not at "
                f"{describe_place(pack, now)}.",
            )


def _stat_bounds(before: WorldState, after: WorldState, turn: Turn, pack: StoryPack) -> Iterable[Issue]:
    for stat_id, value in after["stats"].items():
        stat = pack.stats[stat_id]
        if not stat.min <= value <= stat.max:
            yield Issue(
                f"/stats/{stat_id}",
                "stat.bounds",
                f"{stat_id} would be {value}; it must stay within "
                f"{stat.min}..{stat.max} (it is {before['stats'][stat_id]} now).",
            )


def names(narrative: str, words: Iterable[str]) -> bool:
    """Whether the narrative mentions any of the words, as whole words, in any case."""
    text = narrative.casefold()
    return any(_whole_word(w).search(text) for w in words if w)


@functools.lru_cache(maxsize=4096)
def _whole_word(word: str) -> re.Pattern[str]:
    """A word as a whole word in any case: a pack's few names, each asked of every turn that moves a thing."""
    return re.compile(rf"(?<!\w){re.escape(word.casefold())}(?!\w)")


def _prose_agrees(before: WorldState, after: WorldState, turn: Turn, pack: StoryPack) -> Iterable[Issue]:
    moved = before["items"] != after["items"]  # else no item to look at (most turns)
    for item_id, was in before["items"].items() if moved else ():
        now = after["items"][item_id]
        if was == now:
            continue
        seen = in_sight(pack, before, was) or in_sight(pack, after, now)
        if seen and not names(turn.narrative, pack.item_words(item_id)):
            words = ", ".join(repr(w) for w in pack.item_words(item_id))
            yield Issue(
                f"/items/{item_id}",
                "prose.item",
                f"The patch moves {item_id} to {describe_place(pack, now)}, but the narrative never names "
                f"it; name it as one of {words}, or leave its place unchanged.",
            )
    there = after["location"]
    if there != before["location"] and not names(turn.narrative, pack.room_words(there)):
        words = ", ".join(repr(w) for w in pack.room_words(there))
        yield Issue(
            "/location",
            "prose.room",
            f"The player moves to {there}, but the narrative never names it; name it as {words}.",
        )


WORLD_RULES: tuple[WorldRule, ...] = (_movement, _item_moves, _stat_bounds, _prose_agrees)
"""Rules over (before_state, after_state, turn, pack); rule set 2 adds the story's (`storyloom.engine.story`),
and set 3 judges a take or a drop in the room a turn walks into as well as in the one it starts in."""
