"""What a listing shows of a save (`storyloom saves`, the open-a-save screen), read from its header
and its last records only, in about the same time whatever the save's size."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from storyloom.engine.ledger import STORY_KINDS, StoryLedger
from storyloom.saves.careful import check_header, event_of, hashed_as_written, header_of, parse_line
from storyloom.saves.errors import SaveError, SaveUnreadable, TamperedRecord
from storyloom.saves.format import TALLIED, TALLY, SaveHeader, Tally, record_hash
from storyloom.saves.locations import HEADER_MAX_BYTES

TAIL_MAX_BYTES = 8 * 1024 * 1024
"""How far back from the end `summarize_save` looks for the last outcome record before it counts
the turns line by line instead (only a save from before tallies were written needs that)."""
_BLOCK = 64 * 1024


@dataclasses.dataclass(frozen=True)
class SaveSummary:
    """What a listing shows of a save, read from its header and its last records only.

    Attributes:
        header: its first record.
        tally: the story's counts at its last outcome (None if they could not be read).
        last_time: when its last whole record was written (the header's time for a save with no turn).
        size: the file's size in bytes.
        torn: the file ends in a line cut off by a crash (it is dropped when the save is read).
    """

    path: Path
    header: SaveHeader
    tally: Tally | None
    last_time: str
    size: int
    torn: bool = False


def summarize_save(path: str | Path) -> SaveSummary:
    """Read what a listing shows of a save in about the same time whatever its size: the header line,
    then whole lines back from the end until the last outcome record, which carries the story's
    `Tally`. A save written before tallies existed is counted line by line from each line's tail,
    in bounded memory. Nothing but the header and the last record is checked: `load_save` and
    `storyloom verify` check the rest.

    Raises:
        SaveUnreadable: missing, unreadable, not a storyloom save.
        UnsupportedVersion, CorruptRecord, TamperedRecord: the header or the last record is damaged.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise SaveUnreadable.from_os_error(path, exc, "cannot read the file") from None
    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, min(size, HEADER_MAX_BYTES), 0)
        end_of_header = head.find(b"\n")
        if end_of_header < 0:
            raise SaveUnreadable(path, "the file does not start with a whole storyloom save header")
        header_raw = parse_line(path, head[:end_of_header], 1)
        header = header_of(path, check_header(path, header_raw))
        tail = _last_lines(fd, size, end_of_header + 1)
        last: dict[str, Any] | None = None
        tally: Tally | None = None
        torn = False
        for number, line in enumerate(tail):
            if number == 0 and not line.endswith(b"\n"):
                torn = bool(line)
                continue
            line = line.rstrip(b"\n")
            if last is None:
                last = parse_line(path, line, 2)
                if not hashed_as_written(line, last) and record_hash(last) != last["hash"]:
                    raise TamperedRecord(
                        path, f"record {last['seq']} (the last) does not match its hash", seq=last["seq"]
                    )
            if line.startswith(_TALLIED_KINDS, line.rfind(b',"kind":"') + 1):
                written = parse_line(path, line, 2)["data"].get(TALLY)
                tally = (
                    Tally.from_json(written) if written is not None else _count_turns(path, fd, end_of_header + 1, size)
                )
                break
        else:
            tally = Tally() if tail.reached_header else _count_turns(path, fd, end_of_header + 1, size)
    except OSError as exc:
        raise SaveUnreadable.from_os_error(path, exc, "cannot read the file") from None
    finally:
        os.close(fd)
    when = str(last["time"]) if last is not None else str(header_raw["time"])
    return SaveSummary(path, header, tally, when, size, torn)


class _Tail:
    """Lines of a file from its end backwards (each with its newline; the first may be a torn
    last line without one), read a block at a time, never before `start` nor more than
    `TAIL_MAX_BYTES`. `reached_header` says whether every line after the header was seen."""

    def __init__(self, fd: int, size: int, start: int):
        self.fd, self.size, self.start = fd, size, start
        self.reached_header = False

    def __iter__(self) -> Iterator[bytes]:
        position, pending = self.size, b""
        while position > self.start and self.size - position < TAIL_MAX_BYTES:
            begin = max(self.start, position - _BLOCK)
            pending = os.pread(self.fd, position - begin, begin) + pending
            position = begin
            if position > self.start:
                cut = pending.find(b"\n")
                if cut < 0:
                    continue  # no line starts in what was read yet
                whole, pending = pending[cut + 1 :], pending[: cut + 1]
            else:
                whole, pending = pending, b""
            yield from reversed(whole.splitlines(keepends=True))
        self.reached_header = position <= self.start


def _last_lines(fd: int, size: int, start: int) -> _Tail:
    return _Tail(fd, size, start)


_TALLIED_KINDS = tuple(f'"kind":"{kind}"'.encode() for kind in sorted(TALLIED))
_STORY_KINDS = tuple(f'"kind":"{kind}"'.encode() for kind in sorted(STORY_KINDS))


def _count_turns(path: Path, fd: int, start: int, size: int) -> Tally | None:
    """The tally of a save written before tallies were (or whose last outcome is too far back): its
    story's events folded by the ledger, as the journal counts them, a block at a time. Only the lines
    of `STORY_KINDS` are parsed (the attempts, most of a save, are passed over): time linear in the
    save, memory bounded. None when a story record is damaged (`storyloom verify` names it)."""
    ledger = StoryLedger(keep=1)
    position, carry = start, b""
    try:
        while position < size:
            block = carry + os.pread(fd, min(_BLOCK * 16, size - position), position)
            if not block:
                break
            position += len(block) - len(carry)
            lines = block.split(b"\n")
            carry = lines.pop()
            for line in lines:
                if line.startswith(_STORY_KINDS, line.rfind(b',"kind":"') + 1):
                    record = parse_line(path, line, 2)
                    event = event_of(record["kind"], record["data"])
                    ledger = ledger if event is None else ledger.apply(event)
    except SaveError:
        return None
    return Tally.of(ledger)
