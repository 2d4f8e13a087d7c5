"""Where a save's resume record says its judging ended, read from the record's first bytes with nothing of
the engine loaded: `storyloom play --resume` hashes the save's bytes before that point on another core while
it goes on loading (`saves.chain.PrefixHashing`). `saves/resume_record.py` writes records and decides which
to trust; the layout of their first bytes is here: the magic line, this storyloom's stamp (a sha256 in hex
and a newline), the MAC (32 bytes), then the offset in decimal and a newline."""

from __future__ import annotations

from pathlib import Path

from storyloom.saves.chain import PrefixHashing
from storyloom.saves.errors import SaveError
from storyloom.saves.locations import HEADER_MAX_BYTES, resolve_save, resume_record_path

RECORD_VERSION = 2
MAGIC = b"storyloom resume record %d\n" % RECORD_VERSION
_HEAD = len(MAGIC) + 65 + 32


def offset_hint(header_line: bytes, made_by: bytes | None = None) -> int | None:
    """The offset the resume record of the save whose first line is `header_line` names, read without
    checking the record (`made_by`: only a record with this stamp line); None when there is none."""
    try:
        with open(resume_record_path(header_line), "rb") as record:
            blob = record.read(_HEAD + 24)
    except OSError:
        return None
    if not blob.startswith(MAGIC) or (made_by is not None and blob[len(MAGIC) : len(MAGIC) + 65] != made_by):
        return None
    end = blob.find(b"\n", _HEAD)
    offset = blob[_HEAD:end]
    return int(offset) if end > 0 and offset.isdigit() else None


def hash_before_record(ref: str | Path) -> PrefixHashing | None:
    """Start hashing the bytes of the save `ref` names (a path, a name in the saves folder or `latest`)
    before its resume record's offset, if it has a record; None otherwise."""
    try:
        path = resolve_save(ref)
        with path.open("rb") as save:
            header_line = save.readline(HEADER_MAX_BYTES)
    except (SaveError, OSError, ValueError):
        return None
    offset = offset_hint(header_line)
    return None if offset is None else PrefixHashing(path, offset)
