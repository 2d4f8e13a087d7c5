"""What a narrator must return each turn, and what is wrong when it does not."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, StringConstraints

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


def turn_json_schema() -> dict[str, Any]:
    """The JSON schema a narrator is asked to fill (tool input or response format)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["narrative", "state_patch"],
        "properties": {
            "narrative": {
                "type": "string",
                "minLength": 1,
                "maxLength": NARRATIVE_MAX,
                "description": "Prose for the player, in the story's style.",
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
