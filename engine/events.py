"""The one vocabulary the engine speaks to the TUI, the headless runner, the journal and tests.

Each event is a frozen dataclass with an `event` name; `to_json` gives a plain,
JSON-serialisable dict and `event_from_json` reads it back.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, get_type_hints

from pydantic import ConfigDict, TypeAdapter, ValidationError, create_model

from storyloom.engine.turns import Issue


@dataclass(frozen=True)
class Event:
    """Base of every engine event."""

    event: ClassVar[str] = "event"
    turn: int

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"event": self.event}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, tuple) and value and isinstance(value[0], Issue):
                value = [issue.to_json() for issue in value]
            elif isinstance(value, tuple):
                value = list(value)
            data[f.name] = value
        return data


@dataclass(frozen=True)
class TurnStarted(Event):
    """A new attempt at a turn begins; `retry` counts manual retries of this turn."""

    event: ClassVar[str] = "turn_started"
    attempt: int
    player_input: str = ""
    retry: int = 0


@dataclass(frozen=True)
class ProseDelta(Event):
    """More prose of the first attempt, to append to what is shown."""

    event: ClassVar[str] = "prose_delta"
    text: str


@dataclass(frozen=True)
class AttemptFinished(Event):
    """A model attempt ended: its raw output, usage, delta timing and issues (for the journal)."""

    event: ClassVar[str] = "attempt_finished"
    attempt: int
    kind: str
    """"turn" for a first answer, "correction" for a corrective request."""
    raw: str | None
    """The structured output as JSON text, or None when the model gave none."""
    text: str = ""
    """Plain text the model wrote outside the structured output."""
    stop_reason: str = "end"
    usage: dict[str, int] = field(default_factory=dict)
    deltas: tuple[tuple[int, str, str], ...] = ()
    """(milliseconds since the attempt started, "s" structured or "t" text, chunk)."""
    issues: tuple[Issue, ...] = ()


@dataclass(frozen=True)
class ValidationFailed(Event):
    """An attempt was judged and rejected."""

    event: ClassVar[str] = "validation_failed"
    attempt: int
    issues: tuple[Issue, ...]


@dataclass(frozen=True)
class CorrectionStarted(Event):
    """The engine asks the model to correct its last attempt (`correction` of `budget`)."""

    event: ClassVar[str] = "correction_started"
    attempt: int
    budget: int
    correction: int = 1


@dataclass(frozen=True)
class ProseReplaced(Event):
    """A correction was judged: its prose replaces what is shown only when `changed`."""

    event: ClassVar[str] = "prose_replaced"
    changed: bool
    text: str = ""


@dataclass(frozen=True)
class NarratorRetrying(Event):
    """A transient narrator fault; the same request is sent again after `delay` seconds."""

    event: ClassVar[str] = "narrator_retrying"
    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True)
class TurnCommitted(Event):
    """The turn passed every rule and is now the committed state."""

    event: ClassVar[str] = "turn_committed"
    state_hash: str
    narrative: str = ""
    state_patch: tuple[dict[str, Any], ...] = ()
    suggestions: tuple[str, ...] = ()
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnFailed(Event):
    """The budget is spent (or the narrator cannot go on); nothing was committed."""

    event: ClassVar[str] = "turn_failed"
    issues: tuple[Issue, ...]


@dataclass(frozen=True)
class TurnCancelled(Event):
    """The player cancelled the turn; nothing was committed."""

    event: ClassVar[str] = "turn_cancelled"


@dataclass(frozen=True)
class TurnUndone(Event):
    """The last committed turn was undone; `state` is the committed state again."""

    event: ClassVar[str] = "turn_undone"
    state_hash: str
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AlternativeStarted(Event):
    """The player asked for another version of the latest committed turn (`Session.regenerate`).

    What follows is a turn's own events (prose, attempts, corrections), then `turn_committed`
    (this version is now the chosen one), `turn_failed` or `turn_cancelled` (the chosen one
    stays). `alternative` is the number this version gets if it commits (1 is the turn as first
    committed), so a failed try and its retry carry the same number.
    """

    event: ClassVar[str] = "alternative_started"
    alternative: int
    player_input: str = ""


@dataclass(frozen=True)
class AlternativeChosen(Event):
    """The player chose one of the committed versions of the latest turn (`Session.choose`): its
    world is now the committed state and its prose the turn's. Everything needed to show it is
    here: `alternative` of `alternatives`, its prose, suggestions and state."""

    event: ClassVar[str] = "alternative_chosen"
    alternative: int
    alternatives: int
    state_hash: str
    narrative: str = ""
    suggestions: tuple[str, ...] = ()
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StoryEnded(Event):
    """The committed state reached one of the story's endings."""

    event: ClassVar[str] = "story_ended"
    ending: str
    title: str
    text: str


@dataclass(frozen=True)
class BranchStarted(Event):
    """The story continues from after turn `turn` (0: from its start) on a new branch, numbered
    `branch`, forked from branch `parent` (the one being played). The branch's path is its parent's
    turns up to `turn`, then its own; its world is exactly the world after `turn` (`state_hash`,
    `state`). Nothing of the parent is lost: switching back plays it on where it stood."""

    event: ClassVar[str] = "branch_started"
    branch: int
    parent: int
    state_hash: str
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BranchSwitched(Event):
    """The player goes back to branch `branch`, where it stood (`turn`: its latest standing turn, 0
    if none): its path, its world (`state_hash`, `state`), its versions, undo and ending."""

    event: ClassVar[str] = "branch_switched"
    branch: int
    state_hash: str
    state: dict[str, Any] = field(default_factory=dict)


EVENT_TYPES: dict[str, type[Event]] = {
    cls.event: cls
    for cls in (
        TurnStarted,
        ProseDelta,
        AttemptFinished,
        ValidationFailed,
        CorrectionStarted,
        ProseReplaced,
        NarratorRetrying,
        TurnCommitted,
        TurnFailed,
        TurnCancelled,
        TurnUndone,
        StoryEnded,
        AlternativeStarted,
        AlternativeChosen,
        BranchStarted,
        BranchSwitched,
    )
}


def event_from_json(data: dict[str, Any], *, checked: bool = False) -> Event:
    """Rebuild an event from `Event.to_json` output, every field checked against its declared type.

    A save is a file anyone can edit: a field of the wrong type must be refused here,
    not crash whatever reads the event later.

    Args:
        checked: the data was checked already, and is known unchanged since (a resume record's copy of
            records proven by hash): the same event, without checking its fields' types again.

    Raises:
        ValueError: the name is unknown, a field is missing or of the wrong type.
    """
    cls = EVENT_TYPES.get(data.get("event", ""))
    if cls is None:
        raise ValueError(f"unknown event {data.get('event')!r}")
    kwargs: dict[str, Any] = {}
    try:
        for name in _field_names(cls.event):
            if name not in data:
                continue
            value = data[name]
            if name == "issues":
                value = tuple(_issue(i) for i in value)
            elif name == "deltas":
                value = tuple(tuple(d) for d in value)
            elif isinstance(value, list):
                value = tuple(value)
            kwargs[name] = value
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad {cls.event} event: {exc}") from None
    if not checked:
        _check_fields(cls.event, kwargs)
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ValueError(f"bad {cls.event} event: {exc}") from None


def _check_fields(event: str, kwargs: dict[str, Any]) -> None:
    """Every field of an event of kind `event` is of its declared type (else ValueError, naming the first)."""
    try:
        _event_check(event).validate_python(kwargs, strict=True)
    except ValidationError:
        checks = _field_checks(event)
        for name, value in kwargs.items():  # name the first field at fault
            try:
                checks[name].validate_python(value, strict=True)
            except ValidationError:
                raise ValueError(f"bad {event} event: {name} is not a {checks[name]._type}") from None


def _issue(data: Any) -> Issue:
    if not (isinstance(data, dict) and all(isinstance(data.get(k), str) for k in ("path", "rule", "message"))):
        raise ValueError("an issue must have a text path, rule and message")
    return Issue.from_json(data)


@functools.cache
def _field_names(name: str) -> tuple[str, ...]:
    """The fields of the event called `name` (the caches are keyed by name, each class has one)."""
    return tuple(f.name for f in fields(EVENT_TYPES[name]))


@functools.cache
def _event_check(name: str) -> TypeAdapter[Any]:
    """One strict validator for all the fields of an event class at once (a save holds tens of
    thousands of events; a validator per field cost a call each). The same types as `_field_checks`,
    which is asked only to name the field at fault."""
    cls = EVENT_TYPES[name]
    hints = get_type_hints(cls)
    definitions: dict[str, Any] = {f.name: (hints[f.name], None) for f in fields(cls)}  # None: left out, not checked
    model = create_model(f"{cls.__name__}Fields", __config__=ConfigDict(strict=True), **definitions)
    return TypeAdapter(model)


@functools.cache
def _field_checks(name: str) -> dict[str, TypeAdapter[Any]]:
    """A strict validator per field of an event class, from its annotations."""
    cls = EVENT_TYPES[name]
    hints = get_type_hints(cls)
    return {f.name: TypeAdapter(hints[f.name]) for f in fields(cls)}
