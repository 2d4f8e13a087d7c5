"""The resume record: where this machine last judged a save, so resuming it judges only what came after.

Resuming a save re-judges every commit from the story's start (`saves/rebuild.py`), because a commit
record carries only its state's hash. A save played or resumed on this machine leaves a resume record
in the user's cache folder (`platformdirs.user_cache_dir("storyloom")/resume`, which honours
`XDG_CACHE_HOME`), one per save, found by the save's header line (so a copied or rescued save finds
it too). It holds the byte offset, sequence number and hash of the last record judged, the sha256 of
the file's bytes up to there, and where judging stood there (`storyloom.saves.rebuild.Progress`, and
the latest tries a resumed screen shows). The save's format is not changed. The offset is written in the
clear too (covered by the record's MAC), so the save's bytes before it can be hashed by a thread while the
program starts (`saves/resume_hint.py`, `saves.chain.PrefixHashing`).

A resume uses the record only when the file's first bytes still hash to the record's sha256 (bytes are
hashed, not parsed) and the record was made by this same storyloom (its code, the format version, the
rule set and the pack's digest); it then judges the records after the offset with the same judging
reader. Anything else (no record, another version, a byte changed before the offset, a damaged or
foreign record file) is a full check, as without a record: a record is never an error shown to the
player.

Why pickle: `Progress` is the engine's own objects (the story ledger, a persistent structure shared
between branches and the undo stack; world states; the model's history; versions), and pickle keeps
their types and their sharing exactly, so a resume from a record is the same session as a full check
by construction, where a JSON form would need a codec for each of them that any change could silently
break. Pickle runs code when read, so a record is authenticated before it is unpickled: an HMAC-SHA256
under a random key kept in the same folder (mode 0600), made on first use; a record from another
machine or account, or altered, fails it and is ignored.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import pickle
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_core import from_json

from storyloom.engine.events import Event
from storyloom.engine.files import read_regular_file
from storyloom.engine.packs import StoryPack
from storyloom.saves.careful import event_of
from storyloom.saves.format import VERSION, Record, expand_attempt, storyloom_version
from storyloom.saves.locations import resume_record_path
from storyloom.saves.reader import ReadFrom
from storyloom.saves.rebuild import Progress
from storyloom.saves.resume_hint import MAGIC, RECORD_VERSION, offset_hint

_RECORD_MAX_BYTES = 256 << 20
KEPT_RECORDS = 64
"""Resume records kept: the oldest (by when they were written) go when there are more."""
_SUFFIX = ".resume"
_PICKLE_DEPTH = 20_000


@dataclass(frozen=True)
class KeptRecord:
    """A record of a kept try as a resume record holds it: its kind, turn and data as written. Its event
    is made only if its turn's details are shown (an event's many small objects are slow to unpickle)."""

    kind: str
    turn: int | None
    written: dict[str, Any] | bytes

    @classmethod
    def of(cls, record: Record | KeptRecord) -> KeptRecord:
        return record if isinstance(record, KeptRecord) else cls(record.kind, record.turn, record.written)

    @property
    def event(self) -> Event | None:
        """The record's event, as the careful reading makes it (its fields were checked when it was first
        read, and its bytes are proven unchanged since by the save's hash: they are not checked again)."""
        written = self.written
        data = (
            expand_attempt(self.kind, from_json(written, allow_inf_nan=False))
            if isinstance(written, bytes)
            else written
        )
        return event_of(self.kind, data, checked=True)


@dataclass
class ResumePoint:
    """A save judged up to `at` (a line's end): the sha256 of its bytes before, and where judging stood.

    Attributes:
        tries: the latest tries of the latest turns (`saves/resume.py`'s `_Tries`), for the details of
            the turns a resumed screen shows.
    """

    at: ReadFrom
    sha256: str
    progress: Progress
    tries: dict[int, list[Record | KeptRecord]]


def records_folder() -> Path:
    """`platformdirs.user_cache_dir("storyloom")/resume` (read when called: it honours `XDG_CACHE_HOME`)."""
    return resume_record_path(b"").parent


def _stamp(pack: StoryPack, rules: int) -> tuple[Any, ...]:
    """What must be the same for a record to be trusted: this storyloom's code, the format, the rules, the pack."""
    return (_made_by(), rules, pack.digest)


@functools.cache
def _made_by() -> str:
    """This storyloom (its version and code, the format, Python), as the second line of a record says it."""
    made = (RECORD_VERSION, storyloom_version(), _code_stamp(), VERSION, sys.version_info[:2])
    return hashlib.sha256(repr(made).encode()).hexdigest()


def remembered_offset(header_line: bytes) -> int | None:
    """Where the resume record this storyloom made for the save whose first line is `header_line` says its
    judging ended, read from the record's first bytes (a hint: `load` checks the record and that it says
    the same); None when there is no such record."""
    return offset_hint(header_line, _made_by().encode() + b"\n")


def _code_stamp() -> str:
    """The engine's and the saves layer's modules as installed (names, sizes, times): a record made by
    other code (an update, a developer's edit of a rule) is not used."""
    here = Path(__file__).resolve().parent
    seen = []
    for folder in (here, here.parent / "engine"):
        with contextlib.suppress(OSError):
            for entry in sorted(os.scandir(folder), key=lambda e: e.name):
                if entry.name.endswith(".py"):
                    found = entry.stat()
                    seen.append(f"{folder.name}/{entry.name}:{found.st_size}:{found.st_mtime_ns}")
    return hashlib.sha256("\n".join(seen).encode()).hexdigest()


def _key(folder: Path, *, make: bool) -> bytes | None:
    """This account's key for the records in `folder` (made when `make` and there is none), or None."""
    path = folder / "key"
    with contextlib.suppress(OSError):
        key = read_regular_file(path, 64)
        return key if len(key) == 32 else None
    if not make:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _key(folder, make=False)
    except OSError:
        return None
    key = os.urandom(32)
    try:
        os.write(fd, key)
    finally:
        os.close(fd)
    return key


def load(header_line: bytes, pack: StoryPack, rules: int) -> ResumePoint | None:
    """The resume record of the save whose first line is `header_line`, if there is one this storyloom
    can trust (authenticated, of the same code, format, rules and pack); None otherwise, whatever is wrong."""
    try:
        folder = records_folder()
        key = _key(folder, make=False)
        if key is None:
            return None
        blob = read_regular_file(resume_record_path(header_line), _RECORD_MAX_BYTES)
        made_by = _made_by().encode() + b"\n"
        if not blob.startswith(MAGIC + made_by):
            return None
        start = len(MAGIC) + len(made_by)
        mac, cut = blob[start : start + 32], blob.index(b"\n", start + 32) + 1
        offset, body = blob[start + 32 : cut], blob[cut:]
        if not hmac.compare_digest(mac, hmac.new(key, made_by + offset + body, hashlib.sha256).digest()):
            return None
        stamp, line, point = pickle.loads(body)  # noqa: S301 - authenticated above: written by this account
        if (
            stamp != _stamp(pack, rules)
            or line != header_line
            or not isinstance(point, ResumePoint)
            or int(offset) != point.at.offset
        ):
            return None
        return point
    except Exception:  # noqa: BLE001 - a resume record is only ever a shortcut: any fault means a full check
        return None


def store(header_line: bytes, pack: StoryPack, rules: int, point: ResumePoint) -> None:
    """Write the save's resume record (replacing its last one whole); a record that cannot be written is
    simply not there next time."""
    with contextlib.suppress(Exception):
        folder = records_folder()
        key = _key(folder, make=True)
        if key is None:
            return
        limit = sys.getrecursionlimit()  # the story ledger's turns are a linked list (at most 2 x its `keep`)
        sys.setrecursionlimit(max(limit, _PICKLE_DEPTH))
        try:
            body = pickle.dumps((_stamp(pack, rules), header_line, point), protocol=pickle.HIGHEST_PROTOCOL)
        finally:
            sys.setrecursionlimit(limit)
        made_by = _made_by().encode() + b"\n"
        offset = b"%d\n" % point.at.offset
        blob = MAGIC + made_by + hmac.new(key, made_by + offset + body, hashlib.sha256).digest() + offset + body
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(blob)
            os.replace(temporary, resume_record_path(header_line))
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        _prune(folder)


def _prune(folder: Path) -> None:
    """Keep the newest `KEPT_RECORDS` records: a record is a shortcut, and saves come and go."""
    records = [e for e in os.scandir(folder) if e.name.endswith(_SUFFIX)]
    if len(records) > KEPT_RECORDS:
        records.sort(key=lambda e: e.stat().st_mtime_ns)
        for old in records[: len(records) - KEPT_RECORDS]:
            with contextlib.suppress(OSError):
                os.unlink(old.path)
