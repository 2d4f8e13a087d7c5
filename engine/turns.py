"""What a narrator must return each turn, and what is wrong when it does not."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, StrictStr, StringConstraints, ValidationError

NARRATIVE_MAX = 4000
SUGGESTIONS_MAX = 4
SUGGESTION_MAX_CHARS = 80

Suggestion = Annotated[str, StringConstraints(min_length=1, max_length=SUGGESTION_MAX_CHARS)]


@dataclass(frozen=True)
class Issue:
    """One reason a turn was rejected, worded so a model can act on it.

    Attributes:
        path: JSON pointer into the turn (`/state_patch/0/value`) or the state (`/items/lamp`).
        rule: the stable id of the rule that failed (see `storyloom.engine.rules.RULES`).
        message: what is wrong and what is allowed instead.
    """

    path: str
    rule: str
    message: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, str]) -> Issue:
        return cls(path=data["path"], rule=data["rule"], message=data["message"])


class StatePatchOp(BaseModel):
    """One RFC 6902 operation; storyloom accepts add, remove, replace and test."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    op: Literal["add", "remove", "replace", "test"]
    path: StrictStr
    value: Any = None


class Turn(BaseModel):
    """A complete turn: prose for the player and the change it makes to the world."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    narrative: str = Field(min_length=1, max_length=NARRATIVE_MAX)
    state_patch: list[StatePatchOp] = Field(default=[], max_length=200)
    suggestions: list[Suggestion] = Field(default=[], max_length=SUGGESTIONS_MAX)

    def patch_json(self) -> list[dict[str, Any]]:
        """The state patch as plain RFC 6902 JSON."""
        return [op.model_dump(exclude_none=op.op == "remove") for op in self.state_patch]

    def to_json(self) -> dict[str, Any]:
        return {"narrative": self.narrative, "state_patch": self.patch_json(), "suggestions": list(self.suggestions)}


TURN_FIELDS = ("narrative", "state_patch", "suggestions")
_PLACEHOLDER = {"narrative": "-"}


def kept_fields(
    data: Mapping[str, Any] | None, raw: str | None, kept: Mapping[str, Any], *, first: bool
) -> dict[str, Any]:
    """The fields of a rejected answer the correction that follows keeps, when it leaves them out.

    The answer is laid over what the turn kept before it (`kept`, nothing for a first attempt; a
    field it leaves out is what a turn without it means: no patch, no suggestions), and each field
    of the result that is valid on its own is kept, so the correction is asked for only the rest
    and what was wrong. An answer that is no JSON object keeps what was kept before; a first one
    keeps its narrative if that string was written whole (it is the prose on screen).
    Shared by the engine (`attempts._next_correction`) and a save's reader (`saves/answers.py`).
    """
    if data is None:
        if not first:
            return dict(kept)
        narrative = closed_narrative(raw)
        return {"narrative": narrative} if narrative is not None and _valid("narrative", narrative) else {}
    merged = {"state_patch": [], "suggestions": [], **kept, **data}
    return {name: merged[name] for name in TURN_FIELDS if name in merged and _valid(name, merged[name])}


def closed_narrative(raw: str | None) -> str | None:
    """The narrative of a broken answer, if its string was closed (a cut-off one is left out): a
    correction may keep it rather than write it again."""
    if not raw:
        return None
    try:
        partial = pydantic_core.from_json(raw, allow_partial=True)
    except ValueError:
        return None
    narrative = partial.get("narrative") if isinstance(partial, dict) else None
    return narrative if isinstance(narrative, str) else None


def _valid(name: str, value: Any) -> bool:
    try:
        Turn.model_validate({**_PLACEHOLDER, name: value})
    except ValidationError:
        return False
    return True


def turn_json_schema() -> dict[str, Any]:
    """The JSON schema a narrator is asked to fill (tool input or response format)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["state_patch"],
        "properties": {
            "narrative": {
                "type": "string",
                "minLength": 1,
                "maxLength": NARRATIVE_MAX,
                "description": "Prose for the player, in the story's style (every turn has it; a correction "
                "leaves it out to keep the prose the player has read).",
            },
            "state_patch": {
                "type": "array",
                "description": "RFC 6902 JSON Patch over the world state (add, remove, replace, test).",
                "items": {
                    "type": "object",
                    "required": ["op", "path"],
                    "properties": {
                        "op": {"type": "string", "enum": ["add", "remove", "replace", "test"]},
                        "path": {"type": "string"},
                        "value": {},
                    },
                },
            },
            "suggestions": {
                "type": "array",
                "maxItems": SUGGESTIONS_MAX,
                "items": {"type": "string", "maxLength": SUGGESTION_MAX_CHARS},
                "description": "Up to four short next actions for the player.",
            },
        },
    }
