"""The careful reading of a save, and the checks of one line every reading shares.

Any save can be read this way (generic JSON, the header, the chain, migration, then each event);
it is the reading that names what is wrong with a damaged one. `saves/reader.py` reads a sound
save faster as it was written and falls back to this; `saves/summary.py` checks a listing's header
and last record with the same line checks.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pydantic_core

from storyloom.engine.events import Event, event_from_json
from storyloom.saves.errors import (
    BrokenChain,
    CorruptRecord,
    MissingRecord,
    ReorderedRecords,
    SaveUnreadable,
    TamperedRecord,
    UnsupportedVersion,
)
from storyloom.saves.format import (
    FORMAT,
    GENESIS,
    HEADER,
    RESUMED,
    VERSION,
    Record,
    SaveHeader,
    expand_attempt,
    migrate,
    record_hash,
    storyloom_version,
)

Reading = tuple[dict[str, Any], SaveHeader, tuple[Record, ...]]


def read_carefully(path: Path, lines: list[bytes]) -> Reading:
    """Read every line as generic JSON, check the header and chain, migrate, then check each event.

    Any save can be read this way; it is the one that names what is wrong with a damaged save."""
    parsed = [parse_line(path, raw, number) for number, raw in enumerate(lines, 1)]
    header_raw = parsed[0]
    header_data = check_header(path, header_raw)
    _check_chain(path, parsed, lines)
    version = int(header_data["version"])
    migrated_header, migrated = migrate(version, header_data, [dict(r) for r in parsed[1:]])
    header = header_of(path, migrated_header)
    records = tuple(_record(path, raw, number) for number, raw in enumerate(migrated, 2))
    return header_raw, header, records


def header_of(path: Path, data: dict[str, Any]) -> SaveHeader:
    try:
        return SaveHeader.from_json(data)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # a fault rate of 1e400 overflows
        raise CorruptRecord(path, f"the header record is malformed ({exc})", line=1, seq=0) from None


def parse_json(text: str) -> Any:
    """`json.loads` (NaN and Infinity refused), about twice as fast on the lines a journal writes.

    pydantic's parser reads a line first; whatever it cannot read (a lone surrogate escape,
    a malformed line, NaN) is left to the json module, so every line gets the json module's
    answer and error message, as before.
    """
    try:
        return pydantic_core.from_json(text, allow_inf_nan=False)
    except (ValueError, TypeError):
        return json.loads(text, parse_constant=no_constant)


def parse_line(path: Path, raw: bytes, number: int) -> dict[str, Any]:
    try:
        data = parse_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        if number == 1:
            raise SaveUnreadable(path, "the first line is not JSON: this is not a storyloom save") from None
        raise CorruptRecord(
            path, f"the record is not valid JSON ({exc}); the file was damaged or edited", line=number
        ) from None
    if not (
        isinstance(data, dict)
        and isinstance(data.get("seq"), int)
        and isinstance(data.get("hash"), str)
        and isinstance(data.get("prev"), str)
        and isinstance(data.get("kind"), str)
        and isinstance(data.get("data"), dict)
        and isinstance(data.get("time"), str)
    ):
        if number == 1:
            raise SaveUnreadable(path, "the first line is not a storyloom save header")
        raise CorruptRecord(
            path, "the line is JSON but not a save record (seq, time, kind, data, prev, hash)", line=number
        )
    return data


def no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def check_header(path: Path, header: dict[str, Any]) -> dict[str, Any]:
    data = header["data"]
    if header["kind"] != HEADER or header["seq"] != 0 or data.get("format") != FORMAT:
        raise SaveUnreadable(path, "the first record is not a storyloom save header")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise UnsupportedVersion(path, f"the save format version {version!r} is not a number", line=1, seq=0)
    if version > VERSION:
        raise UnsupportedVersion(
            path,
            f"the save is in format version {version}, newer than this storyloom "
            f"({storyloom_version()}, format {VERSION}) can read; upgrade storyloom",
            line=1,
            seq=0,
        )
    if version < 1:
        raise UnsupportedVersion(path, f"unknown save format version {version}", line=1, seq=0)
    return dict(data)


def _check_chain(path: Path, parsed: list[dict[str, Any]], lines: list[bytes]) -> None:
    """Each record proves its content, sits right after its predecessor, and follows its hash."""
    previous_hash = GENESIS
    expected_seq = 0
    for index, record in enumerate(parsed):
        number = index + 1
        if not hashed_as_written(lines[index], record) and record_hash(record) != record["hash"]:
            raise TamperedRecord(
                path,
                f"record {record['seq']} does not match its hash: bytes inside it were changed after it was written",
                line=number,
                seq=record["seq"],
            )
        seq = record["seq"]
        if seq != expected_seq:
            later = {r["seq"] for r in parsed[index + 1 :]}
            earlier = {r["seq"] for r in parsed[:index]}
            if seq < expected_seq or expected_seq in later:
                what = "a second copy of an earlier record" if seq in earlier else "out of place"
                raise ReorderedRecords(
                    path,
                    f"records are out of order: record {seq} is {what}: it comes where record {expected_seq} belongs",
                    line=number,
                    seq=seq,
                )
            gap = f"record {expected_seq} is" if seq == expected_seq + 1 else f"records {expected_seq}..{seq - 1} are"
            raise MissingRecord(
                path, f"{gap} missing: the record before this one (seq {seq}) was removed", line=number, seq=seq
            )
        if record["prev"] != previous_hash:
            raise BrokenChain(
                path,
                f"record {seq} does not follow the hash of record {seq - 1}: the chain is "
                f"broken (a record was replaced)",
                line=number,
                seq=seq,
            )
        previous_hash = record["hash"]
        expected_seq += 1


_HEX64 = re.compile(r"[0-9a-f]{64}")
_json_string = json.encoder.encode_basestring  # how canonical_json spells a string (ensure_ascii=False)


def hashed_as_written(line: bytes, record: dict[str, Any]) -> bool:
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
        tail = (
            f'"kind":{_json_string(record["kind"])},"prev":{_json_string(record["prev"])},"seq":{seq},'
            f'"time":{_json_string(record["time"])}}}'
        ).encode()
    except UnicodeEncodeError:
        return False
    member = b',"hash":"' + digest.encode() + b'",'
    if not (line.startswith(b'{"data":') and line.endswith(member + tail)):
        return False
    return bool(hashlib.sha256(line[: -len(member) - len(tail)] + b"," + tail).hexdigest() == digest)


def _record(path: Path, raw: dict[str, Any], number: int) -> Record:
    kind = raw["kind"]
    data = expand_attempt(kind, raw["data"])
    event = event_of(kind, data)
    if kind not in (HEADER, RESUMED) and event is None and is_engine_kind(kind):
        raise CorruptRecord(path, f"record {raw['seq']} is not a valid {kind} event", line=number, seq=raw["seq"])
    return Record(
        seq=raw["seq"],
        time=raw["time"],
        kind=kind,
        prev=raw["prev"],
        hash=raw["hash"],
        line=number,
        written=data,
        checked=event,
    )


def event_of(kind: str, data: dict[str, Any], *, checked: bool = False) -> Event | None:
    """The engine event a record's data holds, or None (the journal's own records, or not a valid event);
    `checked`: see `event_from_json`."""
    if kind in (HEADER, RESUMED):
        return None
    try:
        return event_from_json({**data, "event": kind}, checked=checked)
    except ValueError:
        return None


def is_engine_kind(kind: str) -> bool:
    from storyloom.engine.events import EVENT_TYPES

    return kind in EVENT_TYPES
