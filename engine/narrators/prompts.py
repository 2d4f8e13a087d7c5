"""The words the model narrators (anthropic, openai) say to a model: the system prompt, the
player's command and the correction prompts.

The wording lives in plain Markdown files beside this module (`engine/narrators/prompts/*.md`)
so a story author or maintainer can read and change it without touching code; this
module only fills in the story's world, the player's command and the issues, and is the
one place a narrator gets any of that text from. `string.Template` ($name) is used
because the files are full of JSON braces.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from string import Template
from typing import Any

from storyloom.engine.narration import NarrationRequest, Rejection
from storyloom.engine.packs import Described, StoryPack
from storyloom.engine.state import WorldState
from storyloom.engine.story import describe_action, describe_effects, possible_now

TOOL_NAME = "report_turn"
TOOL_DESCRIPTION = (
    "Report the turn: the narrative for the player and the JSON Patch it makes to the world "
    "state. Always answer through this tool."
)


@cache
def _template(name: str) -> Template:
    text = (resources.files("storyloom.engine.narrators") / "prompts" / f"{name}.md").read_text(encoding="utf-8")
    return Template(text.strip())


def world_json(pack: StoryPack) -> dict[str, Any]:
    """The parts of a pack a model needs to narrate it, keyed by the ids the patch uses."""
    rooms = {
        room_id: {
            "name": room.name,
            **({"aliases": room.aliases} if room.aliases else {}),
            "description": room.description,
            "exits": room.exits,
            **({"gates": room.gates} if room.gates else {}),
            **_described(room.descriptions),
            **(
                {"dark": room.dark.model_dump(exclude_defaults=True), "dark_text": room.dark_text}
                if room.dark is not None
                else {}
            ),
        }
        for room_id, room in pack.rooms.items()
    }
    items = {
        item_id: {
            "name": item.name,
            **({"aliases": item.aliases} if item.aliases else {}),
            "portable": item.portable,
            **({"description": item.description} if item.description else {}),
            **_described(item.descriptions),
        }
        for item_id, item in pack.items.items()
    }
    stats = {
        stat_id: {"min": stat.min, "max": stat.max, **({"label": stat.label} if stat.label else {})}
        for stat_id, stat in pack.stats.items()
    }
    actions = {action_id: action.model_dump(exclude_defaults=True) for action_id, action in pack.actions.items()}
    endings = {
        ending_id: {"title": ending.title, "when": ending.when.model_dump(exclude_defaults=True)}
        for ending_id, ending in pack.endings.items()
    }
    world: dict[str, Any] = {
        "start": pack.start,
        "intro": pack.intro,
        "rooms": rooms,
        "items": items,
        "stats": stats,
        "flags": sorted(pack.flags),
    }
    if actions:
        world["actions"] = actions
    if endings:
        world["endings"] = endings
    free = pack.free.model_dump(exclude_defaults=True)
    if free:
        world["free"] = free
    return world


def _described(descriptions: list[Described]) -> dict[str, Any]:
    """A room's or item's descriptions for other states, when it has any: the first whose `when` holds
    replaces `description`, so a model describes the lamp as filled once it is."""
    if not descriptions:
        return {}
    return {"descriptions": [d.model_dump(exclude_defaults=True) for d in descriptions]}


def system_prompt(pack: StoryPack, *, channel: str = f"the `{TOOL_NAME}` tool") -> str:
    """The rules and the story's world: the stable prefix of every request (and so the cached one).

    Args:
        channel: how the turn is reported, in words ("the `report_turn` tool", "one JSON object").
    """
    return _template("system").substitute(
        title=pack.title,
        style=pack.style or "second person, present tense, a few short paragraphs",
        channel=channel,
        world=_compact(world_json(pack)),
    )


def _compact(world: dict[str, Any]) -> str:
    """JSON with one line per room, item or stat: readable, and far fewer tokens than indented JSON."""
    lines = []
    for key, value in world.items():
        if isinstance(value, dict) and value:
            entries = [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in value.items()]
            lines.append(f" {json.dumps(key)}: {{\n" + ",\n".join(entries) + "\n }")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(lines) + "\n}"


def command_message(command: str) -> str:
    """A player's command as the model reads it: alone for a committed turn of the story so far,
    and at the head of `player_message` for the turn being played."""
    return _template("command").substitute(command=command)


def player_message(command: str, state: WorldState, pack: StoryPack) -> str:
    """The player's command with the committed state it applies to and the story actions possible in it.

    All of it changes from turn to turn, so it comes after the cached prefix (the rules, the world
    and the story so far) and never breaks it; a correction sends this same message again.
    """
    state_json = json.dumps(state, ensure_ascii=False, sort_keys=True)
    possible = possible_message(pack, state)
    room = pack.rooms[state["location"]]
    if room.is_dark(state):  # told plainly, so a model need not work out the room's `dark` condition itself
        possible += (
            f"\n\n{room.name} is dark now: tell it by its dark_text; nothing lying in it can be seen, taken or used."
        )
    return _template("player").substitute(command=command_message(command), state=state_json, possible=possible)


def possible_message(pack: StoryPack, state: WorldState) -> str:
    """The story actions that can be done in this state, one line each with its whole effects."""
    actions = possible_now(pack, state)
    if not actions:
        return _template("possible_none").substitute()
    lines = [f"- {describe_action(pack, i, a)}: {describe_effects(pack, a.effects, state)}" for i, a in actions]
    return _template("possible").substitute(actions="\n".join(lines))


def regenerate_message(request: NarrationRequest) -> str:
    """What follows the player's message when the player asked for another version of the turn.

    It comes after the turn's own request (system prompt, history, command and state, all
    unchanged), so a provider's cache of that request still serves it.
    """
    versions = "\n\n".join(f"Version {n}:\n{text}" for n, text in enumerate(request.earlier_versions, 1))
    return _template("regenerate").substitute(alternative=request.alternative, versions=versions)


def issues_json(rejection: Rejection) -> str:
    """The issues of a rejected attempt as a JSON list of {path, rule, message}."""
    return json.dumps([issue.to_json() for issue in rejection.issues], ensure_ascii=False, indent=1)


def correction_message(
    request: NarrationRequest, *, channel: str = f"the `{TOOL_NAME}` tool", json_mode: bool = False
) -> str:
    """What the model is told after its latest attempt (`request.correction`) was rejected.

    Only this latest rejection is ever described, never the chain of earlier ones. It asks for
    only what was wrong: the corrected `state_patch` always (it is short, and what most issues
    name), and each other field only if the correction does not keep it (`request.kept`): the
    narrative the player has read is referenced, not repeated, and sent again only if the prose
    itself must change; kept suggestions are not sent again.

    Args:
        json_mode: the turn was asked for as a `json_schema` response; if the answer was
            not JSON at all, say the server probably ignored the schema.
    """
    rejection = request.correction
    assert rejection is not None
    if rejection.missing_output:
        return _template("missing_output").substitute()
    hint = ""
    if json_mode and not _looks_like_json(rejection.raw):
        hint = "\n" + _template("schema_ignored").substitute() + "\n"
    kept = [name for name in ("narrative", "suggestions") if name in request.kept]
    also = "" if "suggestions" in kept else ", and `suggestions`"
    stands = [_template("prose_stands" if "narrative" in kept else "prose_needed").substitute()]
    if "suggestions" in kept:
        stands.append(_template("suggestions_stand").substitute())
    return _template("correction").substitute(
        issues=issues_json(rejection), hint=hint, channel=channel, also=also, stands=" ".join(stands)
    )


def rejected_turn(turn: dict[str, Any], request: NarrationRequest) -> dict[str, Any]:
    """The rejected turn as the correction shows it back to the model.

    What the correction keeps of it (its narrative, the prose the player has read, and its
    suggestions) is referenced by the correction message rather than repeated: a correction's
    uncached input stays the size of the patch, however long the prose, and the model is not
    shown its prose to copy out again. Its patch, what a correction sends, is always shown.
    """
    return {
        key: value
        for key, value in turn.items()
        if key not in _REFERENCED or key not in request.kept or request.kept[key] != value
    }


_REFERENCED = ("narrative", "suggestions")


def _looks_like_json(raw: str | None) -> bool:
    """Whether the text even starts like a JSON object (a cut-off object still does)."""
    return raw is not None and raw.lstrip().startswith(("{", "```"))
