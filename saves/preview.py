"""A resumed save's story and newest turns, read from its two ends before the save is read whole.

Reading and checking a long save takes seconds (every record's hash, every commit
judged again); a player resuming it should see where the story stands at once. These
functions read only the first line and the last few records: nothing here is checked,
so what they return is only ever painted as a preview that the checked save replaces
(and a save that fails its check is refused as before).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

HEADER_MAX = 64 * 1024
"""Bytes: the longest first line read for a save's header."""
TAIL_MAX = 4 * 1024 * 1024
"""Bytes: the most read back from a save's end for its newest turns, whatever its size."""


def story_source(path: Path) -> str | None:
    """The story a save was made from (its header's `story.source`), or None when the first line says otherwise."""
    try:
        with path.open("rb") as save:
            line = save.readline(HEADER_MAX)
        record = json.loads(line)
        source = record["data"]["story"]["source"] if record.get("kind") == "header" else None
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    return source if isinstance(source, str) else None


def newest_turns(path: Path, count: int) -> list[tuple[str, str]]:
    """Up to `count` of the newest committed turns as (player input, narrative), oldest first.

    Read backwards from the end in blocks, at most `TAIL_MAX` bytes whatever the save's
    size; an undone turn is left out; a line that does not parse is skipped. Unchecked:
    see the module docstring.
    """
    found: list[tuple[str, str]] = []
    narratives: dict[int, str] = {}
    undone = 0
    for record in _backwards(path):
        kind, data = record.get("kind"), record.get("data")
        if not isinstance(data, dict):
            continue
        turn = data.get("turn")
        if kind == "turn_undone":
            undone += 1
        elif kind == "turn_committed" and isinstance(data.get("narrative"), str) and isinstance(turn, int):
            if undone:
                undone -= 1
            else:
                narratives[turn] = data["narrative"]
        elif kind == "turn_started" and turn in narratives and isinstance(data.get("player_input"), str):
            found.append((data["player_input"], narratives.pop(turn)))
            if len(found) >= count:
                break
    return found[::-1]


def _backwards(path: Path) -> Any:
    """The save's records from the last to the first, as parsed JSON objects (at most `TAIL_MAX` bytes read)."""
    try:
        save = path.open("rb")
    except OSError:
        return
    with save:
        end = save.seek(0, os.SEEK_END)
        read, rest = 0, b""
        while end > 0 and read < TAIL_MAX:
            size = min(64 * 1024, end)
            end -= size
            save.seek(end)
            block = save.read(size) + rest
            read += size
            lines = block.split(b"\n")
            rest = lines.pop(0) if end > 0 else b""
            for line in reversed(lines):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(record, dict):
                    yield record
