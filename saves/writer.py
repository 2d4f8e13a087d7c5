"""Writing a save: the `Journal` that appends chained records, holds the save's lock, and rescues it.

A commit is flushed and fsynced before `Journal.record` returns, so the UI may
show it as committed. Records are written with one `write` each. A save that
stops taking writes (disk full, deleted, read-only) keeps its records in memory
until `rescue_save` writes the whole chain somewhere that takes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from storyloom.engine.events import (
    AlternativeStarted,
    AttemptFinished,
    CorrectionStarted,
    Event,
    NarratorRetrying,
    ProseDelta,
    ProseReplaced,
    TurnCancelled,
    TurnFailed,
    TurnStarted,
)
from storyloom.engine.files import open_regular, read_open
from storyloom.engine.ledger import STORY_KINDS, StoryLedger
from storyloom.engine.state import canonical_json
from storyloom.saves.chain import Chain, PrefixHashing, last_line, prefix_digest
from storyloom.saves.errors import SaveError, SaveLocked, SaveUnreadable, SaveWriteError
from storyloom.saves.format import (
    GENESIS,
    HEADER,
    RESUMED,
    TALLIED,
    TALLY,
    VERSION,
    Record,
    Save,
    SaveHeader,
    Tally,
    compact_attempt,
    record_hash,
    storyloom_version,
)
from storyloom.saves.locations import place_new_save, rescue_paths
from storyloom.saves.reader import (
    SAVE_MAX_BYTES,
    NotStreamable,
    ReadFrom,
    StreamedSave,
    open_stream_at,
    parse_save,
)

_DURABLE = {
    HEADER,
    RESUMED,
    "turn_committed",
    "turn_undone",
    "turn_failed",
    "turn_cancelled",
    "story_ended",
    "alternative_chosen",
    "branch_started",
    "branch_switched",
}
"""Record kinds fsynced before `record` returns: every outcome a player may be shown."""
_STATELESS = {"turn_committed", "turn_undone", "branch_started", "branch_switched"}
"""Events whose full `state` is left out: it is rebuilt from the patches and checked by hash."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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


class Journal:
    """The writer of one save: holds its lock and appends chained records.

    Create with `Journal.create` (a new save) or `Journal.open_for_append`
    (continue one); feed it every engine event with `record`. Use it as a
    context manager, or call `close`.
    """

    def __init__(self, path: Path, fd: int, last_hash: str, last_seq: int):
        self.path = path
        self._fd: int | None = fd
        self._last_hash = last_hash
        self._seq = last_seq
        self.reopened = False
        """True for a save opened to continue it (`open_for_append`), False for a new one."""
        self.header: SaveHeader | None = None
        """The header of a save opened to continue it."""
        self.warnings: tuple[str, ...] = ()
        """What reading a reopened save found for the player (a torn last line cut off), once read."""
        self._reading: StreamedSave | Save | None = None
        """A reopened save until its records are read (`records`): nothing is written before."""
        self._broken: SaveWriteError | None = None
        self._chain = Chain()
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
        self._size = 0
        """Bytes of the file as this journal wrote it: anything else there means someone else changed it."""
        self.prefix_hashed: tuple[int, hashlib._Hash] | None = None
        """(size, sha256 so far) of the file's bytes before where a reopened save's records ended (or its
        resume record's offset), as the last `check` read them: its resume record at quit hashes on from it."""
        self._read_end = 0
        """Where a reopened save's records ended when read (0: not reopened, or not read yet)."""
        self._ledger = StoryLedger(keep=1)
        """The story so far; its counts go into each outcome record (`storyloom saves` reads the last)."""

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

        place_new_save(path, write_header, "a file is already there; resume it with --resume, or choose another path")
        journal = made[0]
        journal._placed = True
        with contextlib.suppress(OSError):
            _lock_path(path).write_text(f"{os.getpid()}\n", encoding="utf-8")
        return journal

    @classmethod
    def open_for_append(cls, path: str | Path) -> Journal:
        """Reopen a save to continue it: lock it and read its header; `records` then reads the rest, once.

        The save is read through the locked descriptor, a block at a time
        (`storyloom.saves.reader.StreamedSave`), so a save of any size is continued in the same
        memory; one in an older format or damaged is read whole (`parse_save`), which names the
        fault. That one reading is what the caller resumes from and what the journal keeps,
        compressed, to rescue the save. A torn last line is cut off only when the first new record
        is written, so a resume that is refused (say, the story changed) leaves the file as it was.

        Raises:
            SaveLocked: another process is writing it.
            SaveError: any damage `load_save` reports (the file is left untouched).
        """
        path = Path(path)
        try:
            fd = open_regular(path, os.O_RDWR | os.O_APPEND)
        except OSError as exc:
            raise SaveUnreadable.from_os_error(path, exc, "cannot open the save for writing") from None
        _lock(fd, path)
        journal = cls(path, fd, GENESIS, -1)
        journal.reopened = True
        try:
            try:
                stream = open_stream_at(path, fd, keep=journal._chain.keep)
            except NotStreamable:
                journal._read_whole()
            else:
                journal.header, journal._reading = stream.header, stream
        except BaseException:
            journal.close()
            raise
        return journal

    def read_from(self, at: ReadFrom, sha256: str, ledger: StoryLedger, *, hashed: PrefixHashing | None = None) -> bool:
        """Read a reopened save on from `at` (its records before were judged and kept, in a resume
        record) when its first `at.offset` bytes still hash to `sha256`; the journal's copy of those
        bytes is made by a thread (`Chain.keep_file_prefix`). False, and nothing changed, otherwise.

        Args:
            ledger: the story as those records leave it (their tallies go on from it).
            hashed: those bytes, hashed by a thread since the program started; its digest is taken
                only if the file is the one it hashed, unchanged since.
        """
        if not isinstance(self._reading, StreamedSave) or self._reading.count or self._fd is None:
            return False
        try:
            digest = None if hashed is None else hashed.digest(self._fd, at.offset)
            if (digest or prefix_digest(self._fd, at.offset)) != sha256:
                return False
            first, last, chain = self._chain.first, last_line(self._fd, at.offset), Chain()
            reading = open_stream_at(self.path, self._fd, keep=chain.keep, at=at)
        except (OSError, NotStreamable):
            return False
        chain.keep_file_prefix(self._fd, at.offset, first, last, sha256)
        self._chain, self._reading, self._ledger = chain, reading, ledger
        return True

    @property
    def first_line(self) -> bytes:
        """The save's header line, as read or written (what its resume record is found by)."""
        return self._chain.first

    @property
    def read_to(self) -> tuple[ReadFrom, str] | None:
        """Once a reopened save's records are read and before anything is written: where they end,
        and the sha256 of the file's bytes before that (None when not known: read whole, or from a
        resume record)."""
        digest = self._chain.digest()
        return None if digest is None else (ReadFrom(self._chain.size, self._seq, self._last_hash), digest)

    def records(self) -> Iterator[Record]:
        """The records of a reopened save, read once, in order; then the journal can write.

        Raises:
            NotStreamable: a record the streamed reading does not take (an older shape, damage)
                came after others were given: the save is read whole now, and the next call
                gives its records again from the first.
            SaveError: the save is damaged (`load_save`'s faults).
        """
        reading = self._reading
        if isinstance(reading, Save):
            yield from reading.records
            self._opened(reading.last_hash, reading.last_seq, reading.size, reading.good_size, reading.warnings)
            return
        assert reading is not None, "the records are read once"
        try:
            for record in reading.records():
                if record.kind in STORY_KINDS and (event := record.event) is not None:
                    self._ledger = self._ledger.apply(event)
                yield record
        except NotStreamable:
            self._read_whole()
            raise
        except OSError as exc:
            raise SaveUnreadable.from_os_error(self.path, exc, "cannot read the file") from None
        self._opened(reading.last_hash, reading.last_seq, reading.size, reading.good_size, tuple(reading.warnings))

    def _read_to_end(self) -> None:
        """Read what `records` has not given yet: a reopened save is written after its last record."""
        while self._reading is not None:
            with contextlib.suppress(NotStreamable):
                for _ in self.records():
                    pass

    def _read_whole(self) -> None:
        """Read the locked save whole (the careful reading names any fault), for `records` to give."""
        assert self._fd is not None
        try:
            os.lseek(self._fd, 0, os.SEEK_SET)
            blob = read_open(self._fd, SAVE_MAX_BYTES, self.path)
            save = parse_save(self.path, blob)
        except OSError as exc:
            raise SaveUnreadable.from_os_error(self.path, exc, "cannot read the file") from None
        self._chain = Chain()
        self._chain.keep(blob[: save.good_size])
        self._ledger = StoryLedger(keep=1).fold(e for r in save.records if r.kind in STORY_KINDS and (e := r.event))
        self.header, self._reading = save.header, save

    def _opened(self, last_hash: str, last_seq: int, size: int, good_size: int, warnings: tuple[str, ...]) -> None:
        self._reading = None
        self._read_end = self._chain.size
        self._last_hash, self._seq, self._size, self.warnings = last_hash, last_seq, size, warnings
        if good_size < size:
            self._truncate_to = good_size

    def note_resumed(self, narrator: Any) -> None:
        """Record that the save continues from here, and with which narrator and model."""
        self._append(
            RESUMED,
            {
                "narrator": str(getattr(narrator, "name", "unknown")),
                "model": str(getattr(narrator, "model", "") or ""),
                "storyloom": storyloom_version(),
                "version": VERSION,
            },
        )

    def record_interrupted(self, turn: int) -> None:
        """Close a turn that was in flight when the save stopped (a crash): nothing of it was committed."""
        self._ledger = self._ledger.apply(TurnCancelled(turn=turn))
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
        self._ledger = self._ledger.apply(event)
        if isinstance(event, ProseDelta):
            return
        data = event.to_json()
        data.pop("event", None)
        if event.event in _STATELESS:
            data.pop("state", None)
        if isinstance(event, AttemptFinished):
            data = compact_attempt(data)
        if (
            isinstance(event, TurnCancelled | TurnFailed)
            and not self._attempt_done
            and (self._partial or isinstance(event, TurnCancelled))
        ):
            data["partial"] = {"attempt": self._attempt_number, "prose": [list(p) for p in self._partial]}
        if isinstance(event, NarratorRetrying) and self._cleared:
            data["partial"] = {"attempt": event.attempt, "prose": [list(p) for p in self._cleared]}
        self._append(event.event, data)
        if isinstance(event, NarratorRetrying):
            self._attempt_started = time.monotonic()
            self._partial, self._cleared = [], []

    def _track(self, event: Event) -> None:
        """Follow the attempt in flight, to keep the prose shown if it is cancelled."""
        if isinstance(event, TurnStarted | AlternativeStarted | CorrectionStarted):
            self._attempt_number = 1 if isinstance(event, AlternativeStarted) else event.attempt
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
        if self._reading is not None:
            self._read_to_end()
        if kind in TALLIED:
            data = {**data, TALLY: Tally.of(self._ledger).to_json()}
        record: dict[str, Any] = {
            "seq": self._seq + 1,
            "time": _now(),
            "kind": kind,
            "data": data,
            "prev": self._last_hash,
        }
        record["hash"] = record_hash(record)
        line = (canonical_json(record) + "\n").encode("utf-8")
        self._chain.keep(line)
        self._seq += 1
        self._last_hash = record["hash"]
        if self._broken is not None:
            self.unsaved += 1
            return
        start = self._size
        try:
            if self._placed and (changed := self._changed_on_disk(tail=False)):
                raise _Changed(changed)
            if self._truncate_to is not None:
                os.ftruncate(self._fd, self._truncate_to)
                os.fsync(self._fd)
                self._size = start = self._truncate_to
                self._truncate_to = None
            view = memoryview(line)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            self._size = start + len(line)
            if kind in _DURABLE:
                os.fsync(self._fd)
                if self._placed and (changed := self._changed_on_disk(tail=True)):
                    raise _Changed(changed)
        except _Changed as exc:
            self._stop_writing(str(exc))
        except OSError as exc:
            self._cut_back(start)
            self._stop_writing(f"the save could not be written ({exc.strerror or exc})")

    def _stop_writing(self, why: str) -> None:
        """From now on the story is kept in memory only; raise the one `SaveWriteError` that says why."""
        self.unsaved += 1
        self._broken = SaveWriteError(self.path, f"{why}; the story goes on in memory, unsaved")
        raise self._broken from None

    def _cut_back(self, size: int) -> None:
        """A write that failed part way (a full disk) leaves a torn line: cut it off, so the save
        stays exactly the records that were written (shrinking a file needs no free space)."""
        assert self._fd is not None
        with contextlib.suppress(OSError):
            if os.fstat(self._fd).st_size > size and not self._changed_on_disk(tail=False, size=False):
                os.ftruncate(self._fd, size)
        self._size = size

    def check(self) -> SaveWriteError | None:
        """Whether the save on disk is still every record this journal wrote (call before saying it is saved).

        A save deleted, replaced, cut short or overwritten while the game ran takes no more of
        the story; it is then `broken`, as after a failed write, and `save_as` can write it
        whole elsewhere. Returns why it stopped being written, or None.
        """
        self.prefix_hashed = None
        if self._broken is None and self._fd is not None and self._placed:
            try:
                changed = self._changed_on_disk(tail=True) or self._changed_inside()
            except OSError as exc:
                changed = f"the save could not be checked ({exc.strerror or exc})"
            if changed:
                self._broken = SaveWriteError(self.path, f"{changed}; the story so far is only in memory")
        return self._broken

    def _changed_on_disk(self, *, tail: bool, size: bool = True) -> str | None:
        """Why the file at `path` is no longer the save this journal wrote, or None.

        A save deleted or replaced still takes writes (into a file no one can open), and one cut
        short or overwritten in place takes them after whatever is there now: either way every
        later turn would be lost from the file, so the player must be told. `tail` also reads
        back the first and the last record (after each durable record and before saying "saved").
        """
        assert self._fd is not None
        mine = os.fstat(self._fd)
        try:
            there = os.stat(self.path)
        except FileNotFoundError:
            there = None
        if mine.st_nlink == 0 or there is None or (there.st_dev, there.st_ino) != (mine.st_dev, mine.st_ino):
            return "the save file was deleted or replaced while the game was running"
        cut = "the save file was cut short or overwritten while the game was running"
        if size and mine.st_size != self._size:
            return f"{cut} ({mine.st_size} bytes where the game had written {self._size})"
        if tail and self._truncate_to is None and self._chain.size:
            first, last = self._chain.first, self._chain.last
            if (
                os.pread(self._fd, len(first), 0) != first
                or os.pread(self._fd, len(last), self._size - len(last)) != last
            ):
                return cut
        return None

    def _changed_inside(self) -> str | None:
        """Why the file no longer reads back as the records this journal holds, byte for byte, or None.

        `_changed_on_disk` reads the first and last records only (it runs after every outcome); a
        byte changed in place inside an earlier record leaves the size, the first and the last
        record as they were, and the save unreadable from there on. This reads the whole file back
        against the journal's own copy of its lines, once, before the game says the story is saved:
        hashed against the sha256 of that copy (unpacking it was the slow part of quitting a long
        save), but for the session's own lines after the first bytes a thread copied.
        """
        assert self._fd is not None
        if self._truncate_to is not None:
            return None  # a reopened save not written yet: it is the file that was read
        changed = "the save file was changed in place while the game was running"
        if (whole := self._chain.digest()) is not None:  # hashed, not unpacked: 0.12 s against 0.3 at 130 MB
            at, hashed = min(self._read_end, self._chain.size), hashlib.sha256()
            read = prefix_digest(self._fd, at, hashed) is not None
            before = hashed.copy()
            if not read or prefix_digest(self._fd, self._chain.size, hashed, start=at) != whole:
                return f"{changed} (it no longer reads back)"
            self.prefix_hashed = (at, before) if at else None
            return None
        kept = self._chain.file_prefix  # the bytes a thread copied: they must hash as the resume record said
        assert kept is not None, "a chain hashes what it keeps unless a thread copies the file's first bytes"
        offset, hashed = kept[0], hashlib.sha256()
        if prefix_digest(self._fd, offset, hashed) != kept[1]:
            return changed
        for block in self._chain.blocks(prefix=False):
            if os.pread(self._fd, len(block), offset) != block:
                return f"{changed} (it no longer reads back)"
            offset += len(block)
        if self._chain.prefix_changed:
            return f"{changed} (it no longer reads back)"
        self.prefix_hashed = (kept[0], hashed)
        return None

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
            for block in self._chain.blocks():
                view = memoryview(block)
                while view:
                    view = view[os.write(fd, view) :]
            os.fsync(fd)

        fd = place_new_save(path, write_chain, "a file is already there; choose another path")
        old_fd, old_path = self._fd, self.path
        self._fd, self.path, self._broken, self.unsaved, self._truncate_to = fd, path, None, 0, None
        self._size = self._chain.size
        with contextlib.suppress(OSError):
            _lock_path(path).write_text(f"{os.getpid()}\n", encoding="utf-8")
        if old_fd is not None:
            self._release(old_fd, old_path)
        return path

    def close(self) -> None:
        """Release the lock; the file stays as written."""
        self._chain.stop()
        if self._fd is not None:
            fd, self._fd = self._fd, None
            self._release(fd, self.path)

    @staticmethod
    def _release(fd: int, path: Path) -> None:
        if _lock_owner(path) == os.getpid():
            with contextlib.suppress(OSError):
                _lock_path(path).unlink()
        os.close(fd)


class _Changed(Exception):
    """The save on disk is no longer what this journal wrote (see `Journal._changed_on_disk`)."""


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
