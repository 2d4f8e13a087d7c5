"""Reading a save: load, chain-check and migrate it, never touching the file.

`load_save` reads a file and `parse_save` reads bytes already read (the writer
reads a save it reopens through the descriptor it holds locked); both end in
the one reading below. A torn last line (a crash mid-write) is dropped with a
warning; any other damage is refused with a specific `storyloom.saves.errors` exception.

Why two readers behind `parse_save`: a save is read far more often than it is
damaged, and most of its bytes are attempts the reader only has to check. So a
sound current-format save is read line by line as the journal wrote it
(`_read_as_written`: each line's tail matched in place, its hash taken over the
bytes as written, its data read straight into the event's fields), about twice
as fast. Anything that reading does not accept exactly (an older version, a line
in another shape, any damage) is read again the careful way
(`saves/careful.py`, `read_carefully`: generic JSON, the header, the chain, migration, then each
event), which any save can go through and which names the first fault. The two
agree record for record on every sound save (tests/test_journal.py checks it).

A save of any size is read a record at a time by `open_stream` (`StreamedSave`, the reading as
written); what a listing shows of one is read by `saves/summary.py` from its header and its tail.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import hashlib
import os
import re
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast, get_args, get_type_hints

import pydantic_core
from pydantic import ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from storyloom.engine.events import AttemptFinished, Event
from storyloom.engine.files import open_regular, read_regular_file
from storyloom.saves.careful import (
    Reading,
    check_header,
    event_of,
    hashed_as_written,
    header_of,
    is_engine_kind,
    parse_line,
    read_carefully,
)
from storyloom.saves.errors import SaveError, SaveUnreadable
from storyloom.saves.format import GENESIS, SAME_RECORDS_SINCE, VERSION, Record, Save, SaveHeader, expand_attempt
from storyloom.saves.locations import HEADER_MAX_BYTES
from storyloom.saves.summary import SaveSummary, summarize_save

__all__ = [
    "SAVE_MAX_BYTES",
    "NotStreamable",
    "ReadFrom",
    "SaveSummary",
    "StreamedSave",
    "gc_paused",
    "load_save",
    "open_stream",
    "open_stream_at",
    "parse_save",
    "read_through",
    "summarize_save",
]
"""`SaveSummary` and `summarize_save` live in `saves/summary.py`; they are named here too for the readers
that still import them from here (the open-a-save screen)."""

T = TypeVar("T")

SAVE_MAX_BYTES = 1 << 31
"""The largest save read (2 GB, some 700,000 turns): a bound, so a file that is not a save cannot exhaust memory."""


def load_save(path: str | Path) -> Save:
    """Read, chain-check and migrate a save without changing the file.

    Raises:
        SaveUnreadable: missing, unreadable, empty or not a storyloom save.
        UnsupportedVersion: a format version this storyloom does not know.
        CorruptRecord, TamperedRecord, BrokenChain, MissingRecord, ReorderedRecords: damage, with the first bad record.
    """
    path = Path(path)
    try:
        blob = read_regular_file(path, SAVE_MAX_BYTES)  # never a pipe or a device: they would hang or never end
    except OSError as exc:
        raise SaveUnreadable.from_os_error(path, exc, "cannot read the file") from None
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
        warnings.append(_torn(len(tail), len(lines) + 1))
    if not lines:
        raise SaveUnreadable(
            path, "the file is empty: it is not a storyloom save (or its first record was never completely written)"
        )
    read = _read_as_written(path, lines) or read_carefully(path, lines)
    header_raw, header, records = read
    last_hash, last_seq = (records[-1].hash, records[-1].seq) if records else (header_raw["hash"], header_raw["seq"])
    return Save(
        path=path,
        header=header,
        records=records,
        warnings=tuple(warnings),
        size=len(blob),
        good_size=good_size,
        last_hash=last_hash,
        last_seq=last_seq,
        header_time=str(header_raw["time"]),
    )


_TAIL = re.compile(
    rb',"hash":"([0-9a-f]{64})","kind":"([a-z_]{1,64})","prev":"([0-9a-f]{64})",'
    rb'"seq":(0|[1-9][0-9]{0,17}),"time":"([ !#-\[\]-~]*)"}'
)
"""The end of a line as the journal writes it: the record's own members after `data`, in canonical
JSON (sorted keys, no spaces), spelled in plain ASCII that needs no escape."""
_MEMBER = len(',"hash":"",') + 64
"""Bytes of the `"hash":"…",` member (with the comma before it) cut out to hash a line."""


def _read_as_written(path: Path, lines: list[bytes]) -> Reading | None:
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
        reading = _AsWritten(path, lines[0])
        records = tuple(reading.record(line) for line in lines[1:])
    except _NotAsWritten:
        return None
    return reading.header_raw, reading.header, records


class _NotAsWritten(Exception):
    """A line the reading as written does not accept: the careful reading must judge the save."""


class _AsWritten:
    """The reading as written, a line at a time (see `_read_as_written`): the header line first,
    then each record's line in order; `record` raises `_NotAsWritten` at the first line it does
    not accept exactly."""

    def __init__(self, path: Path, header_line: bytes):
        try:
            self.header_raw = parse_line(path, header_line, 1)
            header_data = check_header(path, self.header_raw)
            if (
                not SAME_RECORDS_SINCE <= header_data["version"] <= VERSION
                or self.header_raw["prev"] != GENESIS
                or not hashed_as_written(header_line, self.header_raw)
            ):
                raise _NotAsWritten
            self.header = header_of(path, header_data)
        except SaveError:
            raise _NotAsWritten from None
        self.last_hash: str = str(self.header_raw["hash"])
        self.previous = self.last_hash.encode()
        self.number = 1
        """The line number of the last line read."""

    def record(self, line: bytes) -> Record:
        at = line.rfind(b',"hash":"')
        tail = _TAIL.fullmatch(line, at) if at > 8 else None
        if tail is None or not line.startswith(b'{"data":{') or line.count(b'"hash":') != 1:
            raise _NotAsWritten
        digest, kind, prev, seq, written_at = tail.groups()
        seq_number = self.number
        if prev != self.previous or int(seq) != seq_number:
            raise _NotAsWritten
        hashed = hashlib.sha256(line[:at])
        hashed.update(b",")
        hashed.update(line[at + _MEMBER :])
        digest_text = hashed.hexdigest()
        if digest_text.encode() != digest:
            raise _NotAsWritten
        kind_name = kind.decode()
        reader = _data_readers().get(kind_name)
        data = line[8:at]
        written: dict[str, Any] | bytes = data
        checked: Event | dict[str, Any] | None
        if reader is not None and not reader[2]:  # the common case of `_record_as_written`, inline
            try:
                fields: dict[str, Any] = reader[1].validate_json(data, strict=True)
            except ValidationError:
                raise _NotAsWritten from None
            if not reader[0] <= fields.keys():
                raise _NotAsWritten
            checked = fields
        else:
            read = _record_as_written(data, kind_name, reader)
            if read is None:
                raise _NotAsWritten
            written, checked = read
        record = Record.as_read(
            seq_number, written_at.decode(), kind_name, self.last_hash, digest_text, seq_number + 1, written, checked
        )
        self.previous, self.last_hash, self.number = digest, digest_text, seq_number + 1
        return record


class StreamedSave:
    """A sound current-format save read a record at a time, for verify and resume of a save of any
    size: only the block being read is in memory, never the whole file or every record.

    `open_stream` (or `open_stream_at`, over a descriptor already open) reads the header; iterate
    `records()` once. Any line the reading as written does not accept raises `NotStreamable`: the
    caller reads the save whole (`load_save`), which names the fault. After the records: `warnings`
    (a torn last line), `count`, `last_hash` and `last_seq` (the chain's end), `size` (bytes read)
    and `good_size` (bytes of whole lines, before a torn one).

    Args:
        keep: given the bytes of each run of whole lines once its records are read (the header line
            first), in order: a journal keeps them to write the save elsewhere if its file is lost.
    """

    BLOCK = 1024 * 1024

    def __init__(
        self,
        path: Path,
        read: Callable[[int], bytes],
        header_line: bytes,
        *,
        close: Callable[[], None] = lambda: None,
        keep: Callable[[bytes], None] | None = None,
        at: ReadFrom | None = None,
    ):
        self.path, self._read, self._close, self._keep = path, read, close, keep
        try:
            self._reading = _AsWritten(path, header_line[:-1])
        except _NotAsWritten:
            raise NotStreamable from None
        self.header = self._reading.header
        self.warnings: list[str] = []
        self.count = 0
        """Records after the header read so far."""
        self.size = self.good_size = len(header_line)
        if at is not None:  # the records before `at.offset` were read and judged before (a resume record)
            self._reading.last_hash, self._reading.number = at.last_hash, at.last_seq + 1
            self._reading.previous = at.last_hash.encode()
            self.size = self.good_size = at.offset
            self.count = at.last_seq
        elif keep is not None:
            keep(header_line)

    @property
    def header_time(self) -> str:
        return str(self._reading.header_raw["time"])

    @property
    def last_hash(self) -> str:
        return self._reading.last_hash

    @property
    def last_seq(self) -> int:
        return self._reading.number - 1

    def records(self) -> Generator[Record, None, None]:
        pending = b""
        try:
            while block := self._read(self.BLOCK):
                self.size += len(block)
                if self.size > SAVE_MAX_BYTES:
                    raise SaveUnreadable(
                        self.path, f"the file is larger than {SAVE_MAX_BYTES >> 20} MB, more than a save holds"
                    )
                data = pending + block
                cut = data.rfind(b"\n") + 1
                whole, pending = data[:cut], data[cut:]
                for line in whole.split(b"\n")[:-1]:
                    try:
                        yield self._reading.record(line)
                    except _NotAsWritten:
                        raise NotStreamable from None
                    self.count += 1
                self.good_size += len(whole)
                if self._keep is not None and whole:
                    self._keep(whole)
        finally:
            self._close()
        if pending:
            self.warnings.append(_torn(len(pending), self._reading.number + 1))


@dataclasses.dataclass(frozen=True)
class ReadFrom:
    """Where a reading of a save may start past its header: a line's end, the record there and its hash
    (what the reading found there before, for bytes up to `offset` known unchanged since)."""

    offset: int
    last_seq: int
    last_hash: str


class NotStreamable(Exception):
    """The save is not one the streamed reading accepts exactly: read it whole instead."""


def open_stream(path: str | Path) -> StreamedSave:
    """Open a save to read it a record at a time (see `StreamedSave`).

    Raises:
        SaveUnreadable: it cannot be opened.
        NotStreamable: its header is not read as written (another version, damage): read it whole.
    """
    path = Path(path)
    try:  # never a pipe or a device: they would hang or never end
        handle = os.fdopen(open_regular(path), "rb")  # closed when its records are read
    except OSError as exc:
        raise SaveUnreadable.from_os_error(path, exc, "cannot read the file") from None
    try:
        return StreamedSave(path, handle.read, _header_line(handle.readline), close=handle.close)
    except BaseException:
        handle.close()
        raise


def read_through(path: str | Path, read: Callable[[SaveHeader, Iterable[Record], str], T]) -> tuple[T, tuple[str, ...]]:
    """What `read` makes of a save's header, records and header time, and the save's warnings.

    The records go by a record at a time (`StreamedSave`: a save of any size in the same memory);
    a save the streamed reading does not take (an older format, a line spelled otherwise, damage)
    is read whole (`load_save`, which names any fault) and `read` is called again from the first.

    Raises:
        SaveError: as `load_save`.
    """
    try:
        stream = open_stream(path)
        records = stream.records()
        try:
            made = read(stream.header, records, stream.header_time)
            for _ in records:  # to the end: a torn last line is only seen there
                pass
        finally:
            records.close()
        return made, tuple(stream.warnings)
    except NotStreamable:
        save = load_save(path)
        return read(save.header, save.records, save.header_time), save.warnings


def open_stream_at(
    path: Path, fd: int, keep: Callable[[bytes], None] | None = None, at: ReadFrom | None = None
) -> StreamedSave:
    """`open_stream` over a descriptor already open (a save locked to continue it), read from its
    start (or from `at`) by position: the descriptor's own offset is left alone. The descriptor stays open."""
    offset = 0

    def read(size: int) -> bytes:
        nonlocal offset
        block = os.pread(fd, size, offset)
        offset += len(block)
        return block

    def readline(limit: int) -> bytes:
        first = os.pread(fd, limit, 0)
        end = first.find(b"\n")
        return first if end < 0 else first[: end + 1]

    header_line = _header_line(readline)
    offset = len(header_line) if at is None else at.offset
    return StreamedSave(path, read, header_line, keep=keep, at=at)


def _header_line(readline: Callable[[int], bytes]) -> bytes:
    """The header line, newline included, if the streamed reading can take the save."""
    try:
        first = readline(HEADER_MAX_BYTES)
    except OSError:
        raise NotStreamable from None
    if not first.endswith(b"\n"):
        raise NotStreamable
    return first


def _torn(size: int, line: int) -> str:
    return (
        f"the last line ({size} bytes, line {line}) was cut off by a crash (or a full disk) while it "
        f"was written and is ignored; nothing before it is affected"
    )


def _record_as_written(
    written: bytes, kind: str, reader: _Reader | None
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
        data = expand_attempt(kind, pydantic_core.from_json(written, allow_inf_nan=False))
    except ValueError:
        return None
    event = event_of(kind, data)
    if event is None and is_engine_kind(kind):
        return None
    return data, event


_Reader = tuple[frozenset[str], pydantic_core.SchemaValidator, bool]


def _mentions(hint: Any, wanted: Any) -> bool:
    """Whether a type annotation is `wanted` or holds it anywhere (`tuple[dict[str, Any], ...]` holds Any)."""
    return hint is wanted or any(_mentions(arg, wanted) for arg in get_args(hint))


@functools.cache
def _data_readers() -> dict[str, _Reader]:
    """Per event kind: the fields it must have (an attempt's `raw` can be joined from its deltas),
    a strict validator of its fields read from JSON into a dict of the fields present (as
    `event_from_json` checks them: the same annotations, strict, other keys ignored), and
    whether a value may be `Any` JSON (where pydantic would read NaN).

    Kinds with a float field are left to the careful reading: pydantic reads JSON `1` there as
    `1.0`, `event_from_json` keeps `1`."""
    from storyloom.engine.events import EVENT_TYPES

    readers: dict[str, _Reader] = {}
    for kind, cls in EVENT_TYPES.items():
        declared = dataclasses.fields(cls)
        hints = {f.name: get_type_hints(cls)[f.name] for f in declared}
        if any(_mentions(hint, float) for hint in hints.values()):
            continue
        required = frozenset(
            f.name for f in declared if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ) - ({"raw"} if cls is AttemptFinished else set())
        fields = TypedDict(f"{cls.__name__}Data", hints, total=False)  # type: ignore[misc]
        fields.__pydantic_config__ = ConfigDict(strict=True)  # type: ignore[attr-defined]
        validator = cast(pydantic_core.SchemaValidator, TypeAdapter(fields).validator)  # no pydantic plugins here
        readers[kind] = (required, validator, any(_mentions(hint, Any) for hint in hints.values()))
    return readers
