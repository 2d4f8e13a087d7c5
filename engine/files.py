"""Opening the files a player names (a save, a story pack, the config file): regular files only, read bounded.

A path can name a named pipe (which blocks every read until a writer comes), a device such
as `/dev/zero` (endless), a socket or a folder. Each is refused before a byte is read: the
file is opened without blocking and judged by `fstat` on the open descriptor (so it cannot
be swapped between a check and the read), and a regular file is read only up to a limit.
This module is light: settings are read through it before the first frame.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotARegularFile(OSError):
    """The path names something other than a regular file (a pipe, a device, a socket, a folder)."""


class FileTooLarge(OSError):
    """A regular file larger than anything of its kind storyloom reads."""


def open_regular(path: str | Path, flags: int = os.O_RDONLY) -> int:
    """Open `path` with `flags` (without blocking on a pipe) and return its descriptor, if it is a regular file.

    Raises:
        IsADirectoryError: a folder.
        NotARegularFile: a named pipe, a device or a socket.
        OSError: it cannot be opened (missing, no permission...).
    """
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, f"this is {kind}, not a file", str(path))
            raise NotARegularFile(errno.EINVAL, f"this is {kind}, not a regular file", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_open(fd: int, limit: int, path: str | Path) -> bytes:
    """Every byte of the open regular file `fd` (just opened: read from its start), refusing more than `limit`.

    Raises:
        FileTooLarge: the file holds more than `limit` bytes.
    """
    size = os.fstat(fd).st_size
    if size > limit:
        raise _too_large(path, limit)
    chunks, total = [], 0
    while chunk := os.read(fd, min(1 << 20, limit + 1 - total)):
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:  # it grew while being read
            raise _too_large(path, limit)
    return b"".join(chunks)


def read_regular_file(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them (see `open_regular`, `read_open`)."""
    fd = open_regular(path)
    try:
        return read_open(fd, limit, path)
    finally:
        os.close(fd)


def _too_large(path: str | Path, limit: int) -> FileTooLarge:
    return FileTooLarge(
        errno.EFBIG, f"the file is larger than {limit // (1 << 20)} MB, more than this kind of file holds", str(path)
    )
