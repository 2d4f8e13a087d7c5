"""Exporting a save: a readable Markdown transcript, or JSON with every committed turn.

Both are built from a save that passed `rebuild` (every commit re-judged), and
every piece of model or player text goes through `engine.safety.safe_text`, so
an exported file never carries escape sequences or invisible characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.events import StoryEnded, TurnCommitted, TurnStarted, TurnUndone
from engine.packs import StoryPack
from engine.safety import safe_text
from engine.state import state_hash
from saves.format import FORMAT, Save
from saves.verify import Rebuilt, rebuild


@dataclass(frozen=True)
class CommittedTurn:
    """A commit as recorded, with whether a later undo took it back."""

    turn: int
    player_input: str
    narrative: str
    state_patch: tuple[dict[str, Any], ...]
    suggestions: tuple[str, ...]
    state_hash: str
    time: str
    undone: bool = False


def committed_turns(save: Save) -> list[CommittedTurn]:
    """Every commit in the order it was made; undone ones are marked, not dropped."""
    inputs: dict[int, str] = {}
    turns: list[CommittedTurn] = []
    standing: list[int] = []
    for record, event in save.events:
        if isinstance(event, TurnStarted):
            inputs[event.turn] = event.player_input
        elif isinstance(event, TurnCommitted):
            standing.append(len(turns))
            turns.append(CommittedTurn(event.turn, inputs.get(event.turn, ""), event.narrative,
                                       tuple(event.state_patch), tuple(event.suggestions), event.state_hash,
                                       record.time))
        elif isinstance(event, TurnUndone) and standing:
            index = standing.pop()
            old = turns[index]
            turns[index] = CommittedTurn(old.turn, old.player_input, old.narrative, old.state_patch,
                                         old.suggestions, old.state_hash, old.time, undone=True)
    return turns


def _ending(save: Save, built: Rebuilt) -> StoryEnded | None:
    if built.ending is None:
        return None
    endings = [e for _, e in save.events if isinstance(e, StoryEnded)]
    return endings[-1] if endings else None


def export_markdown(save: Save, pack: StoryPack) -> str:
    """A transcript to read: the intro, then each standing turn's input and narrative."""
    built = rebuild(save, pack)
    header = save.header
    lines = [f"# {safe_text(pack.title)}", ""]
    model = f" ({safe_text(header.model)})" if header.model else ""
    lines += [f"*Story `{header.story_id}`, narrated by {safe_text(header.narrator)}{model}; "
              f"last played {save.last_time}.*", ""]
    lines += [safe_text(pack.intro).strip(), ""]
    turns = committed_turns(save)
    for turn in turns:
        if turn.undone:
            continue
        lines += ["---", "", f"**> {_inline(turn.player_input)}**", "", _prose(turn.narrative), ""]
    ending = _ending(save, built)
    if ending is not None:
        lines += ["---", "", f"## {_inline(ending.title)}", "", _prose(ending.text), ""]
    undone = sum(t.undone for t in turns)
    if undone:
        lines += ["---", "", f"*{undone} turn(s) were undone during play and are not shown.*", ""]
    return "\n".join(lines)


def _prose(text: str) -> str:
    """Model prose as Markdown text: links, images, autolinks and HTML it writes show as written, inert
    (a viewer must not fetch `![](file:...)` or offer a `javascript:` link); emphasis stays."""
    return "".join("\\" + c if c in "\\[]<>" else c for c in safe_text(text).strip())


def _inline(text: str) -> str:
    """Player text on one line, with Markdown's emphasis markers escaped."""
    flat = " ".join(safe_text(text).split())
    return "".join("\\" + c if c in "\\*_`[]<>#" else c for c in flat)


def _safe(value: Any) -> Any:
    """Every string inside a JSON value made safe (patch values passed the rules, but cost nothing to clean)."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, list):
        return [_safe(v) for v in value]
    if isinstance(value, dict):
        return {safe_text(k): _safe(v) for k, v in value.items()}
    return value


def export_json(save: Save, pack: StoryPack) -> dict[str, Any]:
    """Every committed turn (undone ones marked) with its patch, and the final state."""
    built = rebuild(save, pack)
    header = save.header
    return {
        "format": f"{FORMAT}-export",
        "version": 1,
        "story": {"id": header.story_id, "title": safe_text(pack.title), "digest": header.story_digest},
        "narrator": safe_text(header.narrator),
        "model": safe_text(header.model),
        "turns": [
            {"turn": t.turn, "player_input": safe_text(t.player_input), "narrative": safe_text(t.narrative),
             "state_patch": _safe(list(t.state_patch)), "suggestions": [safe_text(s) for s in t.suggestions],
             "state_hash": t.state_hash, "time": t.time, "undone": t.undone}
            for t in committed_turns(save)
        ],
        "final_state": built.state,
        "final_state_hash": state_hash(built.state),
    }
