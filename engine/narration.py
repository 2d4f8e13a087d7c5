"""The one interface every narrator (offline, anthropic, openai, replay) speaks, and the engine's
own types for it: the conversation (`Exchange`), the request (`NarrationRequest`) and a rejected
attempt (`Rejection`). The narrators in `engine/narrators/` implement it; the engine owns it.

A narrator gets a `NarrationRequest` and yields `StructuredDelta` chunks (the
turn's JSON text as it is written: a tool call's input, or a JSON response),
`TextDelta` chunks (plain text outside the structured output) and finally one
`Finish`. The engine, not the narrator, parses and judges the output, so every
narrator is held to the same rules.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from storyloom.engine.packs import StoryPack
from storyloom.engine.state import WorldState
from storyloom.engine.turns import Issue, Turn


@dataclass(frozen=True)
class Exchange:
    """A committed turn as the model's conversation remembers it."""

    player_input: str
    turn: Turn
    number: int = 0
    """The turn's number in the story (numbers are never reused), so a screen can pair it with its
    details; the model is not sent it."""


@dataclass(frozen=True)
class Rejection:
    """The latest rejected attempt and exactly what was wrong with it.

    Only the latest goes into a correction request, never the chain of earlier
    failures, so a correction stays small however many attempts there are.
    """

    raw: str | None
    """The rejected structured output (JSON text), or None if there was none."""
    text: str
    """Plain text the model wrote instead of, or beside, the structured output."""
    issues: tuple[Issue, ...]

    @property
    def missing_output(self) -> bool:
        """True when the model never reported a turn through the structured output."""
        return any(issue.rule == "output.missing" for issue in self.issues)


@dataclass(frozen=True)
class NarrationRequest:
    """What a narrator is asked: a new turn, or a correction of its last attempt."""

    pack: StoryPack
    state: WorldState
    """The committed state (never a rejected one)."""
    history: tuple[Exchange, ...]
    """Committed turns only: failed, cancelled and rejected attempts never appear."""
    player_input: str
    turn: int
    attempt: int = 1
    correction: Rejection | None = None
    kept: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """For a correction: the fields of the rejected turn it keeps if it leaves them out
    (`storyloom.engine.turns.kept_fields`; under rule sets before 4, only the narrative), so it
    is asked for only the rest. The narrative is the prose on screen when that was the first's."""
    alternative: int = 1
    """Which version of the turn this is: 1 for the turn as first played, 2 and on when the player
    asked for another version of it (then `state` and `history` are those from before the turn)."""
    earlier_versions: tuple[str, ...] = ()
    """For another version: the narratives of the versions already committed, which it should not repeat."""

    @property
    def is_correction(self) -> bool:
        return self.correction is not None

    @property
    def kept_narrative(self) -> str | None:
        """The narrative a correction keeps if it leaves it out (the prose the player has read)."""
        narrative = self.kept.get("narrative")
        return narrative if isinstance(narrative, str) else None

    @property
    def is_regeneration(self) -> bool:
        """Whether the player asked for another version of a committed turn."""
        return self.alternative > 1


@dataclass(frozen=True)
class StructuredDelta:
    """A piece of the turn's JSON text. `at_ms` is the narrator's own clock, if it keeps one."""

    text: str
    at_ms: int | None = None


@dataclass(frozen=True)
class TextDelta:
    """A piece of plain text outside the structured output."""

    text: str
    at_ms: int | None = None


@dataclass(frozen=True)
class Finish:
    """The end of an attempt: why it stopped, and what it cost."""

    stop_reason: str = "end"
    """"end", "tool_use", "max_tokens", or the provider's own word."""
    usage: dict[str, int] = field(default_factory=dict)
    """{"input_tokens", "output_tokens", "cached_tokens"} where the narrator knows them."""


Chunk = StructuredDelta | TextDelta | Finish


class NarratorError(Exception):
    """The narrator cannot answer this request; the turn fails with this message.

    Attributes:
        rule: the issue's rule id ("narrator.error", "narrator.refusal", ...).
    """

    rule = "narrator.error"


class NarratorRefusal(NarratorError):
    """The model refused to write this turn; correcting it would not help."""

    rule = "narrator.refusal"


class TransientNarratorError(NarratorError):
    """A fault worth retrying (overloaded, rate-limited, connection dropped).

    Retries do not spend the correction budget.
    """

    rule = "narrator.unavailable"

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


@runtime_checkable
class Narrator(Protocol):
    """Anything that can narrate: see the module docstring."""

    name: str
    model: str

    def narrate(self, request: NarrationRequest) -> AsyncIterator[Chunk]:
        """Stream the answer to one request. Closing the iterator must close any connection."""
        ...
