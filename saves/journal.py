"""The save journal: an append-only, hash-chained JSON Lines record of a session.

A save is a sink for the engine's events. The first line is a header (format
version, story and pack digest, narrator, model, seed, budget, storyloom
version); every later line is one event. Each line is one JSON object:

    {"seq": 3, "time": "2026-11-29T22:30:00.123Z", "kind": "turn_committed",
     "data": {...}, "prev": "<hash of record 2>", "hash": "<sha256>"}

`hash` is the sha256 of the canonical JSON of the record without `hash`
(which includes `prev`), so a record proves its own content and its place in
the chain. Records are written with one `write` each; a commit is flushed and
fsynced before `Journal.record` returns, so the UI may show it as committed.

Loading (`load_save`) drops a torn last line (a crash mid-write) with a
warning and refuses any other damage with a specific `saves.errors` exception,
never touching the file. A sound current-format save is read line by line as
written (`_read_as_written`); anything else, damage included, is read the
careful way (`_read_carefully`), which names the first fault.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import functools
import gc
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, get_args, get_type_hints

import platformdirs
import pydantic_core
from pydantic import ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from engine.events import (
    AttemptFinished,
    CorrectionStarted,
    Event,
    NarratorRetrying,
    ProseDelta,
    ProseReplaced,
    TurnCancelled,
    TurnFailed,
    TurnStarted,
    event_from_json,
)
from engine.packs import StoryPack
from engine.state import canonical_json
from saves.errors import (
    BrokenChain,
    CorruptRecord,
    MissingRecord,
    ReorderedRecords,
    SaveError,
    SaveExists,
    SaveLocked,
    SaveUnreadable,
    SaveWriteError,
    TamperedRecord,
    UnsupportedVersion,
)

FORMAT = "storyloom-save"
VERSION = 1
"""The format version this storyloom writes; see `migrate` and docs/saves.md."""
GENESIS = "0" * 64
"""The `prev` of the header: there is no record before it."""
SUFFIX = ".jsonl"

HEADER = "header"
RESUMED = "resumed"
"""A journal's own record: the save was reopened to continue (narrator and model may differ)."""

_DURABLE = {HEADER, RESUMED, "turn_committed", "turn_undone", "turn_failed", "turn_cancelled", "story_ended"}
"""Record kinds fsynced before `record` returns: every outcome a player may be shown."""
_STATELESS = {"turn_committed", "turn_undone"}
"""Events whose full `state` is left out: it is rebuilt from the patches and checked by hash."""


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

    @classmethod
    def for_session(cls, pack: StoryPack, narrator: Any, *, source: str | None = None, seed: int = 0,
                    budget: int = 2, faults: float = 0.0) -> SaveHeader:
        """The header for a new session; `narrator` only contributes its `name` and `model`."""
        return cls(
            story_id=pack.id, story_digest=pack.digest, story_title=pack.title,
            story_source=source if source is not None else pack.id,
            narrator=str(getattr(narrator, "name", "unknown")), model=str(getattr(narrator, "model", "") or ""),
            seed=int(seed), budget=int(budget), faults=float(faults),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "version": self.version, "storyloom": self.storyloom,
            "story": {"id": self.story_id, "digest": self.story_digest, "title": self.story_title,
                      "source": self.story_source},
            "narrator": self.narrator, "model": self.model, "seed": self.seed, "budget": self.budget,
            "faults": self.faults,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SaveHeader:
        """Read a (migrated) header. Raises KeyError/TypeError/ValueError when it is malformed."""
        story = data["story"]
        header = cls(
            story_id=str(story["id"]), story_digest=str(story["digest"]), story_title=str(story.get("title", "")),
            story_source=str(story.get("source", "")), narrator=str(data.get("narrator", "")),
            model=str(data.get("model", "")), seed=int(data.get("seed", 0)), budget=int(data.get("budget", 2)),
            faults=float(data.get("faults", 0.0)), storyloom=str(data.get("storyloom", "")),
            version=int(data["version"]),
        )
        if not header.story_id or len(header.story_digest) != 64:
            raise ValueError("the story id or digest is missing")
        return header


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

    @functools.cached_property
    def data(self) -> dict[str, Any]:
        """The record's `data` (an attempt's `raw` and `text` put back, see `_expand`)."""
        if isinstance(self.written, bytes):  # already read once as valid JSON (no NaN, no lone surrogate)
            return _expand(self.kind, pydantic_core.from_json(self.written, allow_inf_nan=False))
        return self.written

    @functools.cached_property
    def event(self) -> Event | None:
        """The engine event this record holds, or None for the journal's own records (header, resumed)."""
        if isinstance(self.checked, dict):
            return _event_from_fields(self.kind, self.checked)
        return self.checked

    @property
    def turn(self) -> int | None:
        """The turn of its event, without making the event."""
        if isinstance(self.checked, dict):
            return int(self.checked["turn"])
        return None if self.checked is None else self.checked.turn


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


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record_hash(record: Mapping[str, Any]) -> str:
    """sha256 over the canonical JSON of a record without its `hash` (its `prev` included)."""
    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


# --- loading -----------------------------------------------------------------------------------------------


def migrate(version: int, header: dict[str, Any],
            records: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Bring a save's header and records from `version` to the current format, in memory.

    The file is never rewritten: the hash chain covers the bytes as written.
    Version 1 is the current format, so it is the identity. A future version 2
    adds a step `_v1_to_v2(header, records)` here and applies the steps in turn.

    Raises:
        ValueError: the version is unknown (newer than this storyloom, or below 1).
    """
    if version == 1:
        return header, records
    raise ValueError(f"unknown save format version {version!r}")


def load_save(path: str | Path) -> Save:
    """Read, chain-check and migrate a save without changing the file.

    Raises:
        SaveUnreadable: missing, unreadable, empty or not a storyloom save.
        UnsupportedVersion: a format version this storyloom does not know.
        CorruptRecord, TamperedRecord, BrokenChain, MissingRecord, ReorderedRecords: damage, with the first bad record.
    """
    path = Path(path)
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        raise SaveUnreadable(path, "no such save file (see `storyloom saves`)") from None
    except IsADirectoryError:
        raise SaveUnreadable(path, "this is a folder, not a save file") from None
    except OSError as exc:
        raise SaveUnreadable(path, f"cannot read the file: {exc.strerror or exc}") from None
    return parse_save(path, blob)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off Python's cycle collector while a save is read or rebuilt.

    Loading makes hundreds of thousands of small dicts and lists, none of them garbage
    cycles, and the collector kept re-scanning them all: a third of a 10,000-turn verify.
    It is switched back on afterwards (only if it was on); nothing is collected early or lost.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@gc_paused()
def parse_save(path: Path, blob: bytes) -> Save:
    """`load_save` over bytes already read."""
    warnings: list[str] = []
    lines = blob.split(b"\n")
    tail = lines.pop()  # after the last newline: b"" when the last write was whole
    good_size = len(blob) - len(tail)
    if tail:
        warnings.append(f"the last line ({len(tail)} bytes, line {len(lines) + 1}) was cut off by a crash while it "
                        f"was written and is ignored; nothing before it is affected")
    if not lines:
        raise SaveUnreadable(path, "the file is empty: it is not a storyloom save (or its first record was never "
                                   "completely written)")
    read = _read_as_written(path, lines) or _read_carefully(path, lines)
    header_raw, header, records = read
    last_hash, last_seq = (records[-1].hash, records[-1].seq) if records else (header_raw["hash"], header_raw["seq"])
    return Save(path=path, header=header, records=records, warnings=tuple(warnings), size=len(blob),
                good_size=good_size, last_hash=last_hash, last_seq=last_seq, header_time=str(header_raw["time"]))


_Read = tuple[dict[str, Any], SaveHeader, tuple["Record", ...]]


def _read_carefully(path: Path, lines: list[bytes]) -> _Read:
    """Read every line as generic JSON, check the header and chain, migrate, then check each event.

    Any save can be read this way; it is the one that names what is wrong with a damaged save."""
    parsed = [_parse_line(path, raw, number) for number, raw in enumerate(lines, 1)]
    header_raw = parsed[0]
    header_data = _check_header(path, header_raw)
    _check_chain(path, parsed, lines)
    version = int(header_data["version"])
    migrated_header, migrated = migrate(version, header_data, [dict(r) for r in parsed[1:]])
    header = _header(path, migrated_header)
    records = tuple(_record(path, raw, number) for number, raw in enumerate(migrated, 2))
    return header_raw, header, records


def _header(path: Path, data: dict[str, Any]) -> SaveHeader:
    try:
        return SaveHeader.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptRecord(path, f"the header record is malformed ({exc})", line=1, seq=0) from None


_TAIL = re.compile(rb',"hash":"([0-9a-f]{64})","kind":"([a-z_]{1,64})","prev":"([0-9a-f]{64})",'
                   rb'"seq":(0|[1-9][0-9]{0,17}),"time":"([ !#-\[\]-~]*)"}')
"""The end of a line as the journal writes it: the record's own members after `data`, in canonical
JSON (sorted keys, no spaces), spelled in plain ASCII that needs no escape."""
_MEMBER = len(',"hash":"",') + 64
"""Bytes of the `"hash":"…",` member (with the comma before it) cut out to hash a line."""


def _read_as_written(path: Path, lines: list[bytes]) -> _Read | None:
    """Read a current-format save whose lines are as the journal writes them, or None.

    The careful reading parses each line into generic JSON, checks each event's fields and
    joins an attempt's deltas from the generic lists. Here each line's tail (hash, kind, prev,
    seq, time) is matched in place, its hash taken over the line as written, and its `data`
    read straight into the event's fields by one strict pydantic call per record. Whatever this
    reading does not accept exactly as the careful one would (a line in another shape, an older
    version, any damage) returns None, and the careful reading runs from the start and names
    the first fault, so the two always agree (tests/test_journal.py checks it).
    """
    try:
        header_raw = _parse_line(path, lines[0], 1)
        header_data = _check_header(path, header_raw)
        if (header_data["version"] != VERSION or header_raw["prev"] != GENESIS
                or not _hashed_as_written(lines[0], header_raw)):
            return None
        header = _header(path, header_data)
    except SaveError:
        return None
    readers = _data_readers()
    records: list[Record] = []
    previous, previous_text = header_raw["hash"].encode(), header_raw["hash"]
    for number, line in enumerate(lines[1:], 2):
        at = line.rfind(b',"hash":"')
        tail = _TAIL.fullmatch(line, at) if at > 8 else None
        if tail is None or not line.startswith(b'{"data":{') or line.count(b'"hash":') != 1:
            return None
        digest, kind, prev, seq, written_at = tail.groups()
        if prev != previous or int(seq) != number - 1:
            return None
        view = memoryview(line)
        hashed = hashlib.sha256(view[:at])
        hashed.update(b",")
        hashed.update(view[at + _MEMBER:])
        digest_text = hashed.hexdigest()
        if digest_text.encode() != digest:
            return None
        kind_name = kind.decode()
        record = _record_as_written(line[8:at], kind_name, readers.get(kind_name))
        if record is None:
            return None
        written, checked = record
        records.append(Record(number - 1, written_at.decode(), kind_name, previous_text, digest_text, number, written,
                              checked))
        previous, previous_text = digest, digest_text
    return header_raw, header, tuple(records)


def _record_as_written(written: bytes, kind: str, reader: _Reader | None
                       ) -> tuple[dict[str, Any] | bytes, Event | dict[str, Any] | None] | None:
    """A record's data and checked event (or event fields) from its `data` bytes, or None when the
    careful reading must judge it."""
    if reader is not None:
        required, validator, may_hold_constants = reader
        if may_hold_constants and (b"NaN" in written or b"Infinity" in written):
            return None  # pydantic reads these into an `Any`; the careful reading refuses them
        try:
            fields = validator.validate_json(written, strict=True)
        except ValidationError:
            return None
        if not required <= fields.keys():
            return None  # the event could not be made
        return written, fields
    try:
        data = _expand(kind, pydantic_core.from_json(written, allow_inf_nan=False))
    except ValueError:
        return None
    event = _event_of(kind, data)
    if event is None and _is_engine_kind(kind):
        return None
    return data, event


def _event_from_fields(kind: str, fields: dict[str, Any]) -> Event:
    """The event of a record read as written, from its checked fields (see `_data_readers`)."""
    from engine.events import EVENT_TYPES

    cls = EVENT_TYPES[kind]
    if cls is AttemptFinished and not ("raw" in fields and "text" in fields):
        fields = _with_joined(fields)
    return cls(**fields)


_Reader = tuple[frozenset[str], pydantic_core.SchemaValidator, bool]


@functools.cache
def _data_readers() -> dict[str, _Reader]:
    """Per event kind: the fields it must have (an attempt's `raw` can be joined from its deltas),
    a strict validator of its fields read from JSON into a dict of the fields present (as
    `event_from_json` checks them: the same annotations, strict, other keys ignored), and
    whether a value may be `Any` JSON (where pydantic would read NaN).

    Kinds with a float field are left to the careful reading: pydantic reads JSON `1` there as
    `1.0`, `event_from_json` keeps `1`."""
    from engine.events import EVENT_TYPES

    readers: dict[str, _Reader] = {}
    for kind, cls in EVENT_TYPES.items():
        declared = dataclasses.fields(cls)
        hints = {f.name: get_type_hints(cls)[f.name] for f in declared}
        if any(_mentions(hint, float) for hint in hints.values()):
            continue
        required = frozenset(f.name for f in declared if f.default is dataclasses.MISSING
                             and f.default_factory is dataclasses.MISSING) - ({"raw"} if cls is AttemptFinished else set())
        fields = TypedDict(f"{cls.__name__}Data", hints, total=False)  # type: ignore[misc]
        fields.__pydantic_config__ = ConfigDict(strict=True)  # type: ignore[attr-defined]
        readers[kind] = (required, TypeAdapter(fields).validator, any(_mentions(hint, Any) for hint in hints.values()))
    return readers


def _mentions(hint: Any, wanted: Any) -> bool:
    """Whether a type annotation is `wanted` or holds it anywhere (`tuple[dict[str, Any], ...]` holds Any)."""
    return hint is wanted or any(_mentions(arg, wanted) for arg in get_args(hint))


def _with_joined(fields: dict[str, Any]) -> dict[str, Any]:
    """An attempt's fields with `raw` and `text` put back where they were left out as its deltas joined
    (see `_compact`)."""
    deltas = fields.get("deltas", ())
    joined = dict(fields)
    if "raw" not in joined:
        structured = [chunk for _, kind, chunk in deltas if kind == "s"]
        joined["raw"] = "".join(structured) if structured else None
    if "text" not in joined:
        joined["text"] = "".join([chunk for _, kind, chunk in deltas if kind == "t"])
    return joined


def _parse_json(text: str) -> Any:
    """`json.loads` (NaN and Infinity refused), about twice as fast on the lines a journal writes.

    pydantic's parser reads a line first; whatever it cannot read (a lone surrogate escape,
    a malformed line, NaN) is left to the json module, so every line gets the json module's
    answer and error message, as before.
    """
    try:
        return pydantic_core.from_json(text, allow_inf_nan=False)
    except (ValueError, TypeError):
        return json.loads(text, parse_constant=_no_constant)


def _parse_line(path: Path, raw: bytes, number: int) -> dict[str, Any]:
    try:
        data = _parse_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        if number == 1:
            raise SaveUnreadable(path, "the first line is not JSON: this is not a storyloom save") from None
        raise CorruptRecord(path, f"the record is not valid JSON ({exc}); the file was damaged or edited",
                            line=number) from None
    if not (isinstance(data, dict) and isinstance(data.get("seq"), int) and isinstance(data.get("hash"), str)
            and isinstance(data.get("prev"), str) and isinstance(data.get("kind"), str)
            and isinstance(data.get("data"), dict) and isinstance(data.get("time"), str)):
        if number == 1:
            raise SaveUnreadable(path, "the first line is not a storyloom save header")
        raise CorruptRecord(path, "the line is JSON but not a save record (seq, time, kind, data, prev, hash)",
                            line=number)
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _check_header(path: Path, header: dict[str, Any]) -> dict[str, Any]:
    data = header["data"]
    if header["kind"] != HEADER or header["seq"] != 0 or data.get("format") != FORMAT:
        raise SaveUnreadable(path, "the first record is not a storyloom save header")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise UnsupportedVersion(path, f"the save format version {version!r} is not a number", line=1, seq=0)
    if version > VERSION:
        raise UnsupportedVersion(path, f"the save is in format version {version}, newer than this storyloom "
                                       f"({storyloom_version()}, format {VERSION}) can read; upgrade storyloom",
                                 line=1, seq=0)
    if version < 1:
        raise UnsupportedVersion(path, f"unknown save format version {version}", line=1, seq=0)
    return data


def _check_chain(path: Path, parsed: list[dict[str, Any]], lines: list[bytes]) -> None:
    """Each record proves its content, sits right after its predecessor, and follows its hash."""
    previous_hash = GENESIS
    expected_seq = 0
    for index, record in enumerate(parsed):
        number = index + 1
        if not _hashed_as_written(lines[index], record) and record_hash(record) != record["hash"]:
            raise TamperedRecord(path, f"record {record['seq']} does not match its hash: bytes inside it were "
                                       f"changed after it was written", line=number, seq=record["seq"])
        seq = record["seq"]
        if seq != expected_seq:
            later = {r["seq"] for r in parsed[index + 1:]}
            earlier = {r["seq"] for r in parsed[:index]}
            if seq < expected_seq or expected_seq in later:
                what = "a second copy of" if seq in earlier else "out of place:"
                raise ReorderedRecords(path, f"records are out of order: record {seq} is {what} it comes where "
                                             f"record {expected_seq} belongs", line=number, seq=seq)
            gap = f"record {expected_seq} is" if seq == expected_seq + 1 else f"records {expected_seq}..{seq - 1} are"
            raise MissingRecord(path, f"{gap} missing: the record before this one (seq {seq}) was removed",
                                line=number, seq=seq)
        if record["prev"] != previous_hash:
            raise BrokenChain(path, f"record {seq} does not follow the hash of record {seq - 1}: the chain is "
                                    f"broken (a record was replaced)", line=number, seq=seq)
        previous_hash = record["hash"]
        expected_seq += 1


_HEX64 = re.compile(r"[0-9a-f]{64}")
_json_string = json.encoder.encode_basestring  # how canonical_json spells a string (ensure_ascii=False)


def _hashed_as_written(line: bytes, record: dict[str, Any]) -> bool:
    """Whether a line, less its own `"hash":"…",` member, hashes to its `hash`: `record_hash`
    without re-encoding the record.

    The journal writes each record as its canonical JSON (keys sorted: data, hash, kind, prev,
    seq, time), so the canonical JSON of the record without `hash` is the line with that one
    member cut out. The line must end in exactly the canonical spelling of the parsed
    `hash`, `kind`, `prev`, `seq` and `time` and hold no other `"hash":` key, so that member
    is the record's own and cutting it out leaves the same record; a byte changed anywhere
    else changes the digest. Any line not in this shape is checked by re-encoding it.
    """
    digest, seq = record["hash"], record["seq"]
    if len(record) != 6 or type(seq) is not int or not _HEX64.fullmatch(digest) or line.count(b'"hash":') != 1:
        return False
    try:
        tail = (f'"kind":{_json_string(record["kind"])},"prev":{_json_string(record["prev"])},"seq":{seq},'
                f'"time":{_json_string(record["time"])}}}').encode()
    except UnicodeEncodeError:
        return False
    member = b',"hash":"' + digest.encode() + b'",'
    if not (line.startswith(b'{"data":') and line.endswith(member + tail)):
        return False
    return hashlib.sha256(line[:-len(member) - len(tail)] + b"," + tail).hexdigest() == digest


def _joined(deltas: Any, kind: str) -> str | None:
    """The text of an attempt's deltas of one kind ("s" structured, "t" text), None when there are none."""
    if not isinstance(deltas, list):
        return None
    chunks = [d[2] for d in deltas if isinstance(d, list) and len(d) == 3 and d[1] == kind and isinstance(d[2], str)]
    return "".join(chunks) if chunks else None


def _compact(data: dict[str, Any]) -> dict[str, Any]:
    """An attempt's `raw` and `text` are left out when they are exactly its deltas joined (they nearly
    always are), which halves a save; `_expand` puts them back on load."""
    deltas = [list(d) for d in data.get("deltas", ())]
    out = {**data, "deltas": deltas}
    if out.get("raw") == _joined(deltas, "s"):
        out.pop("raw", None)
    if out.get("text") == (_joined(deltas, "t") or ""):
        out.pop("text", None)
    return out


def _expand(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    if kind != "attempt_finished" or ("raw" in data and "text" in data):
        return data
    deltas = data.get("deltas", [])
    return {"raw": _joined(deltas, "s"), "text": _joined(deltas, "t") or "", **data}


def _record(path: Path, raw: dict[str, Any], number: int) -> Record:
    kind = raw["kind"]
    data = _expand(kind, raw["data"])
    event = _event_of(kind, data)
    if kind not in (HEADER, RESUMED) and event is None and _is_engine_kind(kind):
        raise CorruptRecord(path, f"record {raw['seq']} is not a valid {kind} event", line=number, seq=raw["seq"])
    return Record(seq=raw["seq"], time=raw["time"], kind=kind, prev=raw["prev"], hash=raw["hash"], line=number,
                  written=data, checked=event)


def _event_of(kind: str, data: dict[str, Any]) -> Event | None:
    """The engine event a record's data holds, or None (the journal's own records, or not a valid event)."""
    if kind in (HEADER, RESUMED):
        return None
    try:
        return event_from_json({**data, "event": kind})
    except ValueError:
        return None


def _is_engine_kind(kind: str) -> bool:
    from engine.events import EVENT_TYPES

    return kind in EVENT_TYPES


# --- where saves live ---------------------------------------------------------------------------------------


def saves_dir() -> Path:
    """`platformdirs.user_data_dir("storyloom")/saves`."""
    return Path(platformdirs.user_data_dir("storyloom")) / "saves"


def list_saves(folder: Path | None = None) -> list[Path]:
    """The save files in the saves folder, newest first."""
    folder = folder or saves_dir()
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.is_file() and p.name.endswith(SUFFIX)]
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name), reverse=True)


def resolve_save(ref: str | Path, folder: Path | None = None) -> Path:
    """A save named by path, by file name in the saves folder, or `latest`.

    Raises:
        SaveUnreadable: `latest` with no saves, or no such file.
    """
    folder = folder or saves_dir()
    if str(ref) == "latest":
        saves = list_saves(folder)
        if not saves:
            raise SaveUnreadable(folder, "there are no saves yet: play a story first")
        return saves[0]
    path = Path(ref)
    if not path.exists() and path.parent == Path(".") and (folder / path.name).exists():
        return folder / path.name
    if not path.exists() and path.parent == Path(".") and (folder / (path.name + SUFFIX)).exists():
        return folder / (path.name + SUFFIX)
    return path


def new_save_path(story_id: str, folder: Path | None = None) -> Path:
    """A fresh file name in the saves folder: `<story>-<UTC time>.jsonl` (never an existing file)."""
    folder = folder or saves_dir()
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    candidate = folder / f"{story_id}-{stamp}{SUFFIX}"
    n = 2
    while candidate.exists():
        candidate = folder / f"{story_id}-{stamp}-{n}{SUFFIX}"
        n += 1
    return candidate


# --- writing ------------------------------------------------------------------------------------------------


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _lock(fd: int, path: Path) -> None:
    """Take the exclusive write lock on an open save, or say which process holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SaveLocked(path, _lock_owner(path)) from None
    with contextlib.suppress(OSError):
        _lock_path(path).write_text(f"{os.getpid()}\n", encoding="utf-8")


def _lock_owner(path: Path) -> int | None:
    try:
        return int(_lock_path(path).read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class Journal:
    """The writer of one save: holds its lock and appends chained records.

    Create with `Journal.create` (a new save) or `Journal.open_for_append`
    (continue one); feed it every engine event with `record`. Use it as a
    context manager, or call `close`.
    """

    def __init__(self, path: Path, fd: int, last_hash: str, last_seq: int, loaded: Save | None = None):
        self.path = path
        self._fd: int | None = fd
        self._last_hash = last_hash
        self._seq = last_seq
        self.loaded = loaded
        """The save as it was when opened for append (None for a new save)."""
        self._broken: SaveWriteError | None = None
        self._lines: list[bytes] = []
        """Every record of the save, as written: a save that cannot be written can be written elsewhere."""
        self.unsaved = 0
        """Records kept only in memory since the save stopped being writable (see `save_as`)."""
        self._placed = True
        """The file is at `path` (not yet while `create` writes the header under a temporary name)."""
        self._attempt_started = time.monotonic()
        self._attempt_done = False
        self._attempt_number = 1
        self._partial: list[tuple[int, str]] = []
        self._cleared: list[tuple[int, str]] = []
        self._truncate_to: int | None = None

    @classmethod
    def create(cls, path: str | Path, header: SaveHeader) -> Journal:
        """Start a new save at `path` (its folder is created) and write its header durably.

        The header is written and fsynced under a temporary name, then linked into
        place, so a crash never leaves a save without its header (and an existing
        file is never overwritten).

        Raises:
            SaveExists: a file is already there (resume it instead).
            SaveWriteError: the folder or file cannot be written.
        """
        path = Path(path)
        made: list[Journal] = []

        def write_header(fd: int) -> None:
            journal = cls(path, fd, GENESIS, -1)
            journal._placed = False
            made.append(journal)
            journal._append(HEADER, header.to_json())

        _place_new_save(path, write_header, "a file is already there; resume it with --resume, or choose another path")
        journal = made[0]
        journal._placed = True
        with contextlib.suppress(OSError):
            _lock_path(path).write_text(f"{os.getpid()}\n", encoding="utf-8")
        return journal

    @classmethod
    def open_for_append(cls, path: str | Path) -> Journal:
        """Reopen a save to continue it: lock it, then load and check it.

        A torn last line is cut off only when the first new record is written,
        so a resume that is refused (say, the story changed) leaves the file as it was.

        Raises:
            SaveLocked: another process is writing it.
            SaveError: any damage `load_save` reports (the file is left untouched).
        """
        path = Path(path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            raise SaveUnreadable(path, "no such save file (see `storyloom saves`)") from None
        except IsADirectoryError:
            raise SaveUnreadable(path, "this is a folder, not a save file") from None
        except OSError as exc:
            raise SaveUnreadable(path, f"cannot open the save for writing: {exc.strerror or exc}") from None
        _lock(fd, path)
        try:
            save = load_save(path)
        except BaseException:
            cls._release(fd, path)
            raise
        journal = cls(path, fd, save.last_hash, save.last_seq, save)
        try:
            journal._lines = path.read_bytes()[:save.good_size].splitlines(keepends=True)
        except OSError as exc:
            cls._release(fd, path)
            raise SaveUnreadable(path, f"cannot read the file: {exc.strerror or exc}") from None
        if save.good_size < save.size:
            journal._truncate_to = save.good_size
        return journal

    def note_resumed(self, narrator: Any) -> None:
        """Record that the save continues from here, and with which narrator and model."""
        self._append(RESUMED, {"narrator": str(getattr(narrator, "name", "unknown")),
                               "model": str(getattr(narrator, "model", "") or ""), "storyloom": storyloom_version(),
                               "version": VERSION})

    def record_interrupted(self, turn: int) -> None:
        """Close a turn that was in flight when the save stopped (a crash): nothing of it was committed."""
        self._append("turn_cancelled", {"turn": turn, "interrupted": True})

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._fd is None

    def record(self, event: Event) -> None:
        """Append one engine event; a turn's outcome is on disk (fsynced) when this returns.

        `prose_delta` events are not written (their text and timing are inside
        `attempt_finished`); the prose shown of an attempt cut short by a cancel
        or a narrator fault is kept (as `partial`) with the `turn_cancelled`,
        `turn_failed` or `narrator_retrying` record, so a replay can show it.

        Raises:
            SaveWriteError: the save cannot be written (raised once; later events are kept in
                memory, counted by `unsaved`, until `save_as` writes them elsewhere).
        """
        self._track(event)
        if isinstance(event, ProseDelta):
            return
        data = event.to_json()
        data.pop("event", None)
        if event.event in _STATELESS:
            data.pop("state", None)
        if isinstance(event, AttemptFinished):
            data = _compact(data)
        if isinstance(event, TurnCancelled | TurnFailed) and not self._attempt_done and (
                self._partial or isinstance(event, TurnCancelled)):
            data["partial"] = {"attempt": self._attempt_number, "prose": [list(p) for p in self._partial]}
        if isinstance(event, NarratorRetrying) and self._cleared:
            data["partial"] = {"attempt": event.attempt, "prose": [list(p) for p in self._cleared]}
        self._append(event.event, data)
        if isinstance(event, NarratorRetrying):
            self._attempt_started = time.monotonic()
            self._partial, self._cleared = [], []

    def record_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.record(event)

    def _track(self, event: Event) -> None:
        """Follow the attempt in flight, to keep the prose shown if it is cancelled."""
        if isinstance(event, TurnStarted | CorrectionStarted):
            self._attempt_number = event.attempt
            self._attempt_started = time.monotonic()
            self._attempt_done = False
            self._partial, self._cleared = [], []
        elif isinstance(event, AttemptFinished):
            self._attempt_done = True
        elif isinstance(event, ProseReplaced) and not self._attempt_done:
            self._cleared, self._partial = self._partial, []  # a transient fault wiped the prose shown
        elif isinstance(event, ProseDelta) and not self._attempt_done:
            self._partial.append((int((time.monotonic() - self._attempt_started) * 1000), event.text))

    def _append(self, kind: str, data: dict[str, Any]) -> None:
        """Write one record; if the file cannot take it, keep it (and every later one) in memory.

        The first failure raises `SaveWriteError` so the player can be told; later records
        are kept without raising until `save_as` writes the whole save somewhere else.
        """
        if self._fd is None:
            raise SaveWriteError(self.path, "the save is closed")
        record: dict[str, Any] = {"seq": self._seq + 1, "time": _now(), "kind": kind, "data": data,
                                  "prev": self._last_hash}
        record["hash"] = record_hash(record)
        line = (canonical_json(record) + "\n").encode("utf-8")
        self._lines.append(line)
        self._seq += 1
        self._last_hash = record["hash"]
        if self._broken is not None:
            self.unsaved += 1
            return
        try:
            if self._truncate_to is not None:
                os.ftruncate(self._fd, self._truncate_to)
                os.fsync(self._fd)
                self._truncate_to = None
            view = memoryview(line)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            if kind in _DURABLE:
                os.fsync(self._fd)
                if self._placed:
                    self._check_still_there()
        except OSError as exc:
            self.unsaved += 1
            self._broken = SaveWriteError(self.path, f"the save could not be written ({exc.strerror or exc}); "
                                                     f"the story goes on in memory, unsaved")
            raise self._broken from None

    def _check_still_there(self) -> None:
        """A save deleted or replaced while the game runs still takes writes (into a file no one can
        open): notice, so the player is told instead of losing every turn from here on."""
        assert self._fd is not None
        mine = os.fstat(self._fd)
        try:
            there = os.stat(self.path)
        except FileNotFoundError:
            there = None
        if mine.st_nlink == 0 or there is None or (there.st_dev, there.st_ino) != (mine.st_dev, mine.st_ino):
            raise OSError(errno.ENOENT, "the save file was deleted or replaced while the game was running")

    @property
    def broken(self) -> SaveWriteError | None:
        """Why the save stopped being written, or None while it is written as play goes on."""
        return self._broken

    def save_as(self, path: str | Path) -> Path:
        """Write the whole save (records only in memory too) to a new file and go on writing there.

        The new file is a complete save, hash chain and all; the old one is left as it is.

        Raises:
            SaveExists: a file is already at `path`.
            SaveWriteError: `path` cannot be written either (the journal stays in memory).
        """
        path = Path(path)

        def write_chain(fd: int) -> None:
            view = memoryview(b"".join(self._lines))
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)

        fd = _place_new_save(path, write_chain, "a file is already there; choose another path")
        old_fd, old_path = self._fd, self.path
        self._fd, self.path, self._broken, self.unsaved, self._truncate_to = fd, path, None, 0, None
        with contextlib.suppress(OSError):
            _lock_path(path).write_text(f"{os.getpid()}\n", encoding="utf-8")
        if old_fd is not None:
            self._release(old_fd, old_path)
        return path

    def close(self) -> None:
        """Release the lock; the file stays as written."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            self._release(fd, self.path)

    @staticmethod
    def _release(fd: int, path: Path) -> None:
        if _lock_owner(path) == os.getpid():
            with contextlib.suppress(OSError):
                _lock_path(path).unlink()
        os.close(fd)


def _place_new_save(path: Path, write: Callable[[int], None], exists: str) -> int:
    """Write a new save under a temporary name, locked, then link it into place; return its open fd.

    A crash never leaves a half-written save at `path`, and an existing file is never overwritten.

    Raises:
        SaveExists: a file is already at `path` (`exists` says what to do).
        SaveWriteError: the folder or the file cannot be written.
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    except OSError as exc:
        raise SaveWriteError(path, f"cannot create the save: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        write(fd)
        os.link(temporary, path)
    except FileExistsError:
        os.close(fd)
        raise SaveExists(path, exists) from None
    except (OSError, SaveWriteError) as exc:
        os.close(fd)
        raise SaveWriteError(path, f"cannot write the save: {getattr(exc, 'strerror', None) or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    _fsync_dir(path.parent)
    return fd


def rescue_paths(failed: Path) -> list[Path]:
    """Where a save that cannot be written is written instead: the saves folder, then the temp folder."""
    name = f"{failed.stem}-rescued{SUFFIX}"
    places = [saves_dir(), Path(tempfile.gettempdir())]
    return [_fresh(folder / name) for folder in places if folder.resolve() != failed.parent.resolve()]


def _fresh(path: Path) -> Path:
    n = 2
    candidate = path
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate


def rescue_save(journal: Journal, on_refused: Callable[[Path, SaveError], None] | None = None) -> Path | None:
    """Write a save that stopped taking writes to the first place in `rescue_paths` that takes it.

    Returns:
        The path the story is saved (and from now on written) to, or None when no place took it;
        the records then stay in memory (`Journal.unsaved`).
    """
    for path in rescue_paths(journal.path):
        try:
            journal.save_as(path)
        except SaveError as exc:
            if on_refused is not None:
                on_refused(path, exc)
            continue
        return path
    return None
