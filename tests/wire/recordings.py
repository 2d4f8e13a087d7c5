"""Recorded streams from real servers and SDK fixtures, kept in `tests/wire/recorded/`.

Each file starts with `#` lines that cite where the bytes come from and say what was
changed (only the content: the tool's name, the turn's text); everything after them is
the body exactly as the source shows it, served as is by `tests.wire.server`.
"""

from __future__ import annotations

import re
from pathlib import Path

RECORDED = Path(__file__).parent / "recorded"


def names() -> list[str]:
    """Every recording, by file name without the extension."""
    return sorted(path.stem for path in RECORDED.glob("*.sse"))


def header(name: str) -> list[str]:
    """The recording's `#` lines: its source and what was changed."""
    lines = (RECORDED / f"{name}.sse").read_text(encoding="utf-8").split("\n")
    return [line for line in _header_lines(lines)]


def events(name: str) -> list[bytes]:
    """The body, cut after each blank line so the server sends one event per chunk, as a server would.

    A blank line is LF LF or, from servers that end lines with CRLF (sse-starlette), CRLF CRLF.
    Nothing is added or dropped: joined again, the pieces are the body byte for byte.
    """
    raw = (RECORDED / f"{name}.sse").read_bytes()
    lines = raw.split(b"\n")
    skip = len(list(_header_lines([line.decode("utf-8", "replace") for line in lines])))
    body = b"\n".join(lines[skip:])
    pieces: list[bytes] = []
    start = 0
    for blank in _BLANK_LINE.finditer(body):
        pieces.append(body[start : blank.end()])
        start = blank.end()
    if start < len(body):
        pieces.append(body[start:])
    return pieces


_BLANK_LINE = re.compile(rb"\r\n\r\n|\n\n")


def _header_lines(lines: list[str]):
    for line in lines:
        if not line.startswith("#"):
            return
        yield line
