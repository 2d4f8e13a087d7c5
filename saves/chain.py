"""The journal's own copy of a save's lines, kept compressed in memory, to write the save whole
elsewhere when its file is lost (deleted, cut short, a full disk): `Chain`.

A save's lines repeat themselves; compressed they take about a sixth of the file. Compressing is the
slow part of keeping them (some 30 MB/s here), so a save resumed from its resume record
(`saves/resume_record.py`), whose records before the record's offset are not read again, has those
bytes copied by a thread (`Chain.keep_file_prefix`) off the game's critical path; whatever reads the
copy (`blocks`) waits for that thread first, so a rescue written before it finishes is still whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
import time
import zlib
from collections.abc import Iterator

BLOCK = 1024 * 1024


class Chain:
    """Every line of the save as the journal wrote or read it, kept compressed, in the save's order."""

    def __init__(self) -> None:
        self._packer = zlib.compressobj(1)
        self._packed: list[bytes] = []
        self._prefix: list[bytes] = []
        """The file's first bytes, when a thread copies them (`keep_file_prefix`): its own zlib stream."""
        self._copying: threading.Thread | None = None
        self._prefix_at: tuple[int, str] = (0, "")
        self._stopping = False
        self.prefix_changed = False
        """The bytes the thread copied do not hash as the resume record said: the file changed under us."""
        self._hashed: hashlib._Hash | None = hashlib.sha256()
        """The sha256 of every byte kept (None once the first bytes are copied by the thread)."""
        self.size = 0
        self.first = self.last = b""
        """The first line (the header) and the last, as written: read back to see the file is still the save."""

    def keep(self, lines: bytes) -> None:
        """Add whole lines (each ending in a newline), in the save's order."""
        if not lines:
            return
        if not self.first:
            self.first = lines[: lines.find(b"\n") + 1]
        self.last = lines[lines.rfind(b"\n", 0, len(lines) - 1) + 1 :]
        self.size += len(lines)
        if self._hashed is not None:
            self._hashed.update(lines)
        if packed := self._packer.compress(lines):
            self._packed.append(packed)

    def keep_file_prefix(self, fd: int, size: int, first: bytes, last: bytes, sha256: str) -> None:
        """Keep the file's first `size` bytes (whole lines: `first` is its first, `last` its last),
        copied from `fd` by a thread; they must hash to `sha256`, as the caller just checked."""
        assert not self.size, "the prefix comes first"
        self.first, self.last, self.size, self._hashed = first, last, size, None
        self._prefix_at = (size, sha256)
        own = os.dup(fd)  # the thread's own (it shares the save's lock: `stop` ends it before the journal closes)

        def copy() -> None:
            with contextlib.suppress(OSError, AttributeError):  # Linux: this thread only gives way to the game's
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
            packer, hashed, offset = zlib.compressobj(1), hashlib.sha256(), 0
            try:
                while offset < size and not self._stopping:
                    block = os.pread(own, min(BLOCK, size - offset), offset)
                    if not block:
                        break
                    hashed.update(block)
                    offset += len(block)
                    if packed := packer.compress(block):
                        self._prefix.append(packed)
                self._prefix.append(packer.flush())
            except OSError:
                pass
            finally:
                os.close(own)
            self.prefix_changed = offset != size or hashed.hexdigest() != sha256

        self._copying = threading.Thread(target=copy, name="storyloom-save-copy", daemon=True)
        self._copying.start()

    def digest(self) -> str | None:
        """The sha256 of the bytes kept so far, when this chain hashed them all itself."""
        return None if self._hashed is None else self._hashed.hexdigest()

    @property
    def file_prefix(self) -> tuple[int, str] | None:
        """(size, sha256) of the file's first bytes when a thread copies them (`keep_file_prefix`), else None."""
        return self._prefix_at if self._copying is not None else None

    def stop(self) -> None:
        """End the thread copying the file's first bytes (the save is closed: no rescue will need them)."""
        self._stopping = True
        self.wait()

    def wait(self) -> None:
        """Until the thread copying the file's first bytes (if any) is done."""
        if self._copying is not None:
            self._copying.join()

    def blocks(self, *, prefix: bool = True) -> Iterator[bytes]:
        """The save's bytes, in blocks, as they were kept (more may be kept afterwards); without
        `prefix`, only those after the file's first bytes a thread copies (see `copying`)."""
        if prefix:
            self.wait()
            if self._prefix:
                yield from _unpacked(self._prefix)
        yield from _unpacked([*self._packed, self._packer.copy().flush()])


def _unpacked(packed: list[bytes]) -> Iterator[bytes]:
    unpacker = zlib.decompressobj()
    for part in packed:
        if block := unpacker.decompress(part):
            yield block
    if rest := unpacker.flush():
        yield rest


def prefix_digest(fd: int, size: int, hashed: hashlib._Hash | None = None, *, start: int = 0) -> str | None:
    """The sha256 of the file's first `size` bytes (None when it is shorter), read by position; they
    are fed to `hashed` when given (which may then hash what follows them). From `start`: `hashed`
    holds the bytes before it."""
    hashed, offset = hashed or hashlib.sha256(), start
    while offset < size:
        block = os.pread(fd, min(BLOCK, size - offset), offset)
        if not block:
            return None
        hashed.update(block)
        offset += len(block)
    return hashed.copy().hexdigest()


SETTLED_NS = 1_000_000_000
"""How long before its first bytes are hashed a save must have been last written for `PrefixHashing` to vouch
for it: a file's times move in the clock's coarse steps, and a write within the same step as the last one would
leave them as they were."""


class PrefixHashing:
    """The sha256 of a save's first `size` bytes, hashed by a thread while the program goes on starting.

    Resuming a save from its resume record proves its bytes before the record's offset unchanged by hashing
    them: about 0.1 s of a 50,000-turn save's (130 MB) start, the one part of it that grew with the story.
    hashlib lets go of the GIL as it hashes, so a thread started before Textual is imported does it on another
    core meanwhile. Its digest is given (`digest`) only for the same file, unchanged since: the same device,
    inode, size, mtime and ctime as the thread saw before and after it hashed, and last written at least
    `settled_ns` before (a write since then would have moved its times); anything else is hashed again.
    """

    def __init__(self, path: str | os.PathLike[str], size: int, *, settled_ns: int | None = None) -> None:
        self.size = size
        self._found: tuple[tuple[int, ...], str] | None = None
        self._thread = threading.Thread(
            target=self._hash,
            args=(path, SETTLED_NS if settled_ns is None else settled_ns),
            name="storyloom-prefix-hash",
            daemon=True,
        )
        self._thread.start()

    def _hash(self, path: str | os.PathLike[str], settled_ns: int) -> None:
        started = time.time_ns()
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                found = os.fstat(fd)
                if not stat.S_ISREG(found.st_mode) or started - max(found.st_mtime_ns, found.st_ctime_ns) < settled_ns:
                    return
                digest = prefix_digest(fd, self.size)
                if digest is not None and _identity(os.fstat(fd)) == _identity(found):
                    self._found = (_identity(found), digest)
            finally:
                os.close(fd)

    def digest(self, fd: int, size: int) -> str | None:
        """The sha256 of the first `size` bytes of the file open as `fd`, when the thread hashed those of this
        very file and it has not changed since; None otherwise (then the caller hashes them)."""
        self._thread.join()
        if self._found is None or size != self.size:
            return None
        identity, digest = self._found
        return digest if _identity(os.fstat(fd)) == identity else None


def _identity(found: os.stat_result) -> tuple[int, ...]:
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def last_line(fd: int, end: int) -> bytes:
    """The whole line that ends at byte `end` of the file (newline included)."""
    window = 1 << 16
    while True:
        start = max(0, end - window)
        tail = os.pread(fd, end - start, start)
        cut = tail.rfind(b"\n", 0, len(tail) - 1)
        if cut >= 0 or start == 0:
            return tail[cut + 1 :]
        window *= 4
