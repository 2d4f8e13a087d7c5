"""The save format: what one line of a save holds, and how the lines are chained.

A save is an append-only, hash-chained JSON Lines record of a session. The first
line is a header (format version, story and pack digest, narrator, model, seed,
budget, storyloom version); every later line is one engine event. Each line is
one JSON object:

    {"seq": 3, "time": "2026-11-29T22:30:00.123Z", "kind": "turn_committed",
     "data": {...}, "prev": "<hash of record 2>", "hash": "<sha256>"}

`hash` is the sha256 of the canonical JSON of the record without `hash`
(which includes `prev`), so a record proves its own content and its place in
the chain. This module holds the shapes both sides agree on; `storyloom.saves.reader`
loads a save, `storyloom.saves.writer` appends to one, and neither knows the other.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

import pydantic_core

from storyloom.engine.events import EVENT_TYPES, AttemptFinished, Event
from storyloom.engine.ledger import StoryLedger
from storyloom.engine.packs import StoryPack
from storyloom.engine.rules import RULE_SET, RULE_SETS
from storyloom.engine.state import canonical_json

FORMAT = "storyloom-save"
VERSION = 3
"""The format version this storyloom writes; see `migrate` and docs/saves.md."""
SAME_RECORDS_SINCE = 1
"""The oldest format version whose records read exactly as the current version's (its migration
changes nothing), so the fast reading of a save as written may take it too."""
GENESIS = "0" * 64
"""The `prev` of the header: there is no record before it."""

HEADER = "header"
RESUMED = "resumed"
"""A journal's own record: the save was reopened to continue (narrator and model may differ)."""
TALLY = "tally"
"""The journal's own member of an outcome record's `data`: the story's counts so far (see `Tally`)."""
TALLIED = frozenset(
    {RESUMED, "turn_committed", "turn_undone", "turn_failed", "turn_cancelled", "story_ended"}
    | {"branch_started", "branch_switched"}
)
"""Record kinds the journal writes the tally into: every outcome, so the last one is near the end of a save."""


@dataclass(frozen=True)
class Tally:
    """How many turns a save's story holds, counted the one way every reader counts them.

    The journal writes the story ledger's counts (`storyloom.engine.ledger`) into each outcome
    record (`TALLIED`), so `storyloom saves` reads them from the end of the file instead of reading
    the whole save, and `rebuild` checks them against its own ledger. Turn numbers are never
    reused, so the last turn's number says nothing about these.

    Attributes:
        committed: turns committed, undone ones included.
        undone: commits taken back by an undo.
        branches: the story's branches (written only once there is more than one: format 3).
    """

    committed: int = 0
    undone: int = 0
    branches: int = 1

    @classmethod
    def of(cls, ledger: StoryLedger) -> Tally:
        """The counts of a story ledger."""
        return cls(ledger.committed, ledger.undone, ledger.branch_count)

    @property
    def in_story(self) -> int:
        """The turns the story holds now: committed and not undone."""
        return self.committed - self.undone

    def to_json(self) -> dict[str, int]:
        counts = {"committed": self.committed, "undone": self.undone}
        return counts if self.branches == 1 else {**counts, "branches": self.branches}

    @classmethod
    def from_json(cls, data: Any) -> Tally | None:
        """A written tally, or None when it is not one (an older save has none)."""
        if not isinstance(data, dict):
            return None
        committed, undone, branches = data.get("committed"), data.get("undone"), data.get("branches", 1)
        if type(committed) is not int or type(undone) is not int or not 0 <= undone <= committed:
            return None
        if type(branches) is not int or branches < 1:
            return None
        return cls(committed, undone, branches)


@functools.cache
def storyloom_version() -> str:
    try:
        return metadata.version("storyloom")
    except metadata.PackageNotFoundError:
        return "0+unknown"


@dataclass(frozen=True)
class SaveHeader:
    """The first record of a save. Only these fields are ever written (no settings, no keys).

    Attributes:
        story_id: the pack's id.
        story_digest: `StoryPack.digest` of the pack played; resume refuses another.
        story_title: for listings.
        story_source: how the pack was named when play began (a built-in id or a file path).
        narrator, model: who narrated.
        seed: the offline narrator's seed.
        budget: corrections per turn.
        faults: the offline narrator's fault rate.
        storyloom: the version that created the save.
        version: the save format version.
        rules: the rule set the save is played and judged under (`storyloom.engine.rules.RULE_SETS`);
            a header without one is from before the story's rules (set 1).
    """

    story_id: str
    story_digest: str
    story_title: str = ""
    story_source: str = ""
    narrator: str = ""
    model: str = ""
    seed: int = 0
    budget: int = 2
    faults: float = 0.0
    storyloom: str = field(default_factory=storyloom_version)
    version: int = VERSION
    rules: int = RULE_SET

    @classmethod
    def for_session(
        cls,
        pack: StoryPack,
        narrator: Any,
        *,
        source: str | None = None,
        seed: int = 0,
        budget: int = 2,
        faults: float = 0.0,
    ) -> SaveHeader:
        """The header for a new session; `narrator` only contributes its `name` and `model`."""
        return cls(
            story_id=pack.id,
            story_digest=pack.digest,
            story_title=pack.title,
            story_source=source if source is not None else pack.id,
            narrator=str(getattr(narrator, "name", "unknown")),
            model=str(getattr(narrator, "model", "") or ""),
            seed=int(seed),
            budget=int(budget),
            faults=float(faults),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": self.version,
            "storyloom": self.storyloom,
            "story": {
                "id": self.story_id,
                "digest": self.story_digest,
                "title": self.story_title,
                "source": self.story_source,
            },
            "narrator": self.narrator,
            "model": self.model,
            "seed": self.seed,
            "budget": self.budget,
            "faults": self.faults,
            "rules": self.rules,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SaveHeader:
        """Read a (migrated) header. Raises KeyError/TypeError/ValueError (OverflowError for a number
        too large for a float) when it is malformed."""
        story = data["story"]
        header = cls(
            story_id=str(story["id"]),
            story_digest=str(story["digest"]),
            story_title=str(story.get("title", "")),
            story_source=str(story.get("source", "")),
            narrator=str(data.get("narrator", "")),
            model=str(data.get("model", "")),
            seed=int(data.get("seed", 0)),
            budget=int(data.get("budget", 2)),
            faults=float(data.get("faults", 0.0)),
            storyloom=str(data.get("storyloom", "")),
            version=int(data["version"]),
            rules=int(data.get("rules", 1)),
        )
        if not header.story_id or len(header.story_digest) != 64:
            raise ValueError("the story id or digest is missing")
        if header.budget < 0 or not 0.0 <= header.faults <= 1.0:
            raise ValueError("its correction budget must be 0 or more and its fault rate between 0 and 1")
        if header.rules not in RULE_SETS:
            raise ValueError(
                f"it was played under rule set {header.rules}, which this storyloom does not know "
                f"(it knows {min(RULE_SETS)} to {max(RULE_SETS)}); a newer storyloom can read it"
            )
        return header


_T = TypeVar("_T")


class _computed_once(Generic[_T]):
    """`functools.cached_property` without its lock (as Python 3.12 has it): the value is computed on
    first use and stored on the instance, which answers every later use. A save's reading asks each
    of its records once or twice, and the lock cost more than making most events."""

    def __init__(self, compute: Callable[[Any], _T]):
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> _computed_once[_T]: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _T: ...
    def __get__(self, instance: object | None, owner: type | None = None) -> _T | _computed_once[_T]:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.compute(instance)
        return value


@dataclass(frozen=True)
class Record:
    """One line of a save, as loaded.

    Attributes:
        written: its `data` as loaded, or the bytes of that JSON object in the line, read into
            `data` only when asked (verify and resume need only the events).
        checked: its engine event, checked on loading; for a record read as written, the event's
            checked fields, made into the event only when asked (a rebuild has no use for an
            attempt's, the bulk of a save). None for the journal's own records and unknown kinds.
    """

    seq: int
    time: str
    kind: str
    prev: str
    hash: str
    line: int
    written: dict[str, Any] | bytes = field(repr=False, compare=False)
    checked: Event | dict[str, Any] | None = field(default=None, repr=False, compare=False)

    @_computed_once
    def data(self) -> dict[str, Any]:
        """The record's `data` (an attempt's `raw` and `text` put back, see `expand_attempt`)."""
        if isinstance(self.written, bytes):  # already read once as valid JSON (no NaN, no lone surrogate)
            return expand_attempt(self.kind, pydantic_core.from_json(self.written, allow_inf_nan=False))
        return self.written

    @_computed_once
    def event(self) -> Event | None:
        """The engine event this record holds, or None for the journal's own records (header, resumed)."""
        if isinstance(self.checked, dict):
            return event_from_fields(self.kind, self.checked)
        return self.checked

    @property
    def turn(self) -> int | None:
        """The turn of its event, without making the event."""
        if isinstance(self.checked, dict):
            return int(self.checked["turn"])
        return None if self.checked is None else self.checked.turn

    @property
    def raw(self) -> str | None:
        """An attempt's structured output (its event's `raw`), without making the event (a rebuild
        asks it of the answer of every commit); None for any other record."""
        checked = self.checked
        if isinstance(checked, AttemptFinished):
            return checked.raw
        if self.kind != "attempt_finished" or not isinstance(checked, dict):
            return None
        return checked["raw"] if "raw" in checked else _joined_deltas(checked.get("deltas", ()), "s")

    @classmethod
    def as_read(
        cls,
        seq: int,
        time: str,
        kind: str,
        prev: str,
        hash: str,  # noqa: A002 (the field's name)
        line: int,
        written: dict[str, Any] | bytes,
        checked: Event | dict[str, Any] | None,
    ) -> Record:
        """`Record(...)` for a reading that makes one per line: the same record, its fields set at once
        rather than one `object.__setattr__` each (a frozen dataclass's `__init__` does no more)."""
        record = object.__new__(cls)
        record.__dict__.update(
            seq=seq, time=time, kind=kind, prev=prev, hash=hash, line=line, written=written, checked=checked
        )
        return record


@dataclass(frozen=True)
class Save:
    """A loaded, chain-checked save.

    Attributes:
        path: the file.
        header: its first record.
        records: every record after the header, in order (already migrated).
        warnings: what loading had to overlook (a torn last line), for the player to read.
        size: the file's size in bytes.
        good_size: bytes up to the end of the last whole record (where the next one is appended).
    """

    path: Path
    header: SaveHeader
    records: tuple[Record, ...]
    warnings: tuple[str, ...]
    size: int
    good_size: int
    last_hash: str
    last_seq: int
    header_time: str = ""

    @property
    def events(self) -> Iterator[tuple[Record, Event]]:
        """The engine events in order, with their records."""
        for record in self.records:
            event = record.event
            if event is not None:
                yield record, event

    @property
    def last_time(self) -> str:
        return self.records[-1].time if self.records else self.header_time


def record_hash(record: Mapping[str, Any]) -> str:
    """sha256 over the canonical JSON of a record without its `hash` (its `prev` included)."""
    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def migrate(
    version: int, header: dict[str, Any], records: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Bring a save's header and records from `version` to the current format, in memory.

    The file is never rewritten: the hash chain covers the bytes as written. Each step takes
    one version to the next; they are applied in turn from the save's version. The header
    keeps the version it was written in (reports name it).

    Raises:
        ValueError: the version is unknown (newer than this storyloom, or below 1).
    """
    if not 1 <= version <= VERSION:
        raise ValueError(f"unknown save format version {version!r}")
    for step in _STEPS[version - 1 :]:
        header, records = step(header, records)
    return header, records


def _v1_to_v2(header: dict[str, Any], records: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Version 2 adds the records of other versions of a turn (`alternative_started`, and
    `alternative_chosen`); every version 1 record means the same in version 2, so nothing changes.
    The version went up so that a storyloom knowing only version 1 refuses a save holding
    alternatives as too new ("upgrade storyloom") instead of calling those records damage."""
    return header, records


def _v2_to_v3(header: dict[str, Any], records: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Version 3 adds branches (`branch_started`, `branch_switched`, and `branches` in a tally once
    there is more than one); every version 2 record means the same in version 3 (a save of one
    path), so nothing changes. The version went up so that a storyloom knowing only version 2
    refuses a save holding branches as too new instead of calling those records damage."""
    return header, records


_STEPS: tuple[Callable[[dict[str, Any], list[dict[str, Any]]], tuple[dict[str, Any], list[dict[str, Any]]]], ...] = (
    _v1_to_v2,
    _v2_to_v3,
)
"""`_STEPS[n - 1]` takes a save from version n to n + 1."""


def event_from_fields(kind: str, fields: dict[str, Any]) -> Event:
    """The event of a record read as written, from its checked fields (see `storyloom.saves.reader`):
    `cls(**fields)`, each field set at once rather than one `object.__setattr__` each (the events
    are frozen dataclasses whose `__init__` does no more; the reading checked every field and that
    the required ones are there)."""
    cls = EVENT_TYPES[kind]
    if cls is AttemptFinished and not ("raw" in fields and "text" in fields):
        fields = _with_joined(fields)
    plain, made = _defaults(cls)
    event = object.__new__(cls)
    values = event.__dict__
    values.update(plain)
    values.update(fields)
    for name, factory in made:
        if name not in fields:
            values[name] = factory()
    return event


def _defaults(cls: type[Event]) -> tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...]]:
    """An event class's default field values, and the fields whose default is made per event."""
    found = _DEFAULTS.get(cls.event)
    if found is None:
        found = _DEFAULTS[cls.event] = _defaults_of(cls)
    return found


_DEFAULTS: dict[str, tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...]]] = {}


def _defaults_of(cls: type[Event]) -> tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...]]:
    declared = dataclasses.fields(cls)
    plain = {f.name: f.default for f in declared if f.default is not dataclasses.MISSING}
    made = tuple((f.name, f.default_factory) for f in declared if f.default_factory is not dataclasses.MISSING)
    return plain, made


def _with_joined(fields: dict[str, Any]) -> dict[str, Any]:
    """An attempt's fields with `raw` and `text` put back where they were left out as its deltas joined
    (see `compact_attempt`)."""
    deltas = fields.get("deltas", ())
    joined = dict(fields)
    if "raw" not in joined:
        joined["raw"] = _joined_deltas(deltas, "s")
    if "text" not in joined:
        joined["text"] = "".join([chunk for _, kind, chunk in deltas if kind == "t"])
    return joined


def _joined_deltas(deltas: Iterable[tuple[int, str, str]], kind: str) -> str | None:
    """The checked deltas' chunks of one kind joined, None when there are none."""
    chunks = [chunk for _, of, chunk in deltas if of == kind]
    return "".join(chunks) if chunks else None


def _joined(deltas: Any, kind: str) -> str | None:
    """The text of an attempt's deltas of one kind ("s" structured, "t" text), None when there are none."""
    if not isinstance(deltas, list):
        return None
    chunks = [d[2] for d in deltas if isinstance(d, list) and len(d) == 3 and d[1] == kind and isinstance(d[2], str)]
    return "".join(chunks) if chunks else None


def compact_attempt(data: dict[str, Any]) -> dict[str, Any]:
    """An attempt's `raw` and `text` are left out when they are exactly its deltas joined (they nearly
    always are), which halves a save; `expand_attempt` puts them back on load."""
    deltas = [list(d) for d in data.get("deltas", ())]
    out = {**data, "deltas": deltas}
    if out.get("raw") == _joined(deltas, "s"):
        out.pop("raw", None)
    if out.get("text") == (_joined(deltas, "t") or ""):
        out.pop("text", None)
    return out


def expand_attempt(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """A record's `data` as the event had it: an attempt's `raw` and `text` put back (see `compact_attempt`)."""
    if kind != "attempt_finished" or ("raw" in data and "text" in data):
        return data
    deltas = data.get("deltas", [])
    return {"raw": _joined(deltas, "s"), "text": _joined(deltas, "t") or "", **data}
