"""What can be wrong with a save, one exception class per kind of damage.

Each message names the file, the record (sequence number and line) where it
went wrong, and what the player can do about it. Loading never repairs a
damaged save: every error here leaves the file exactly as it was.
"""

from __future__ import annotations

from pathlib import Path


class SaveError(Exception):
    """Base of every save problem.

    Attributes:
        path: the save file.
        line: the 1-based line of the first bad record, when there is one.
        seq: the sequence number of the first bad record, when known.
    """

    def __init__(self, path: str | Path, message: str, *, line: int | None = None, seq: int | None = None):
        self.path = Path(path)
        self.line = line
        self.seq = seq
        self.reason = message
        where = f" (line {line})" if line is not None else ""
        super().__init__(f"{self.path}{where}: {message}")


class SaveUnreadable(SaveError):
    """The file is missing, unreadable, or not a storyloom save at all."""

    @classmethod
    def from_os_error(cls, path: Path, exc: OSError, cannot: str) -> SaveUnreadable:
        """The error for a save that could not be opened or read; `cannot` says what failed."""
        if isinstance(exc, FileNotFoundError):
            return cls(path, "no such save file (see `storyloom saves`)")
        if isinstance(exc, IsADirectoryError):
            return cls(path, "this is a folder, not a save file")
        return cls(path, f"{cannot}: {exc.strerror or exc}")


class UnsupportedVersion(SaveUnreadable):
    """The save was written in a format version this storyloom does not know."""


class SaveDamaged(SaveError):
    """The save was altered or damaged after it was written."""


class CorruptRecord(SaveDamaged):
    """A record in the middle of the file is not valid JSON or not a valid record."""


class TamperedRecord(SaveDamaged):
    """A record's content does not match its own hash: bytes inside it changed."""


class BrokenChain(SaveDamaged):
    """A record does not follow the hash of the record before it."""


class MissingRecord(SaveDamaged):
    """One or more records were removed from the middle of the file."""


class ReorderedRecords(SaveDamaged):
    """Records are not in the order they were written."""


class PackMismatch(SaveError):
    """The story pack is not the one the save was played with (or cannot be found)."""


class InvalidCommit(SaveDamaged):
    """A recorded commit does not pass the rules again, or does not lead to its recorded state."""


class SaveLocked(SaveError):
    """Another storyloom process is writing this save."""

    def __init__(self, path: str | Path, pid: int | None):
        self.pid = pid
        who = f"another storyloom process (pid {pid})" if pid else "another storyloom process"
        super().__init__(path, f"this save is being written by {who}; close it there first, or play another save")


class SaveExists(SaveError):
    """A new save was asked for at a path that already holds a file."""


class SaveWriteError(SaveError):
    """The save could not be written (disk full, permissions); later records are refused."""


class NoSuchBranch(SaveUnreadable):
    """A branch was asked for (`--branch K`) that the save does not have: nothing of it can be shown."""
