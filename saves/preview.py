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

from storyloom.engine.events import BranchStarted, BranchSwitched, Event, TurnStarted, event_from_json
from storyloom.engine.ledger import STORY_KINDS, StoryLedger
from storyloom.saves.locations import HEADER_MAX_BYTES

TAIL_MAX = 4 * 1024 * 1024
"""Bytes: the most read back from a save's end for its newest turns, whatever its size."""


def story_source(path: Path) -> str | None:
    """The story a save was made from (its header's `story.source`), or None when the first line says otherwise."""
    try:
        with path.open("rb") as save:
            line = save.readline(HEADER_MAX_BYTES)
        record = json.loads(line)
        source = record["data"]["story"]["source"] if record.get("kind") == "header" else None
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    return source if isinstance(source, str) else None


def newest_turns(path: Path, count: int) -> list[tuple[str, str]]:
    """Up to `count` of the newest standing turns as (player input, the chosen version's narrative),
    oldest first: the save's tail folded by the story ledger, as every reader folds a save.

    Records are read backwards from the end, at most `TAIL_MAX` bytes whatever the save's size,
    until the tail from a command on holds `count` standing turns; that tail is then folded
    forwards (`storyloom.engine.ledger`). An undone turn is left out; a line that does not parse
    is skipped. Unchecked: see the module docstring. A save's branches share turns the tail may not
    hold, so only the turns after its newest branch or switch are shown (the checked save shows all).
    """
    tail: list[Event] = []
    fold_at = 16
    for record in _backwards(path):
        event = _story_event(record)
        if event is None:
            continue
        if isinstance(event, BranchStarted | BranchSwitched):
            break  # what came before is another branch's, or the fork this tail does not hold
        tail.append(event)
        if isinstance(event, TurnStarted) and len(tail) >= fold_at:
            fold_at *= 2
            if StoryLedger().fold(reversed(tail)).standing >= count:
                break
    while tail and not isinstance(tail[-1], TurnStarted):
        tail.pop()  # the fold starts at a command: a turn's other records mean nothing without it
    turns = StoryLedger().fold(reversed(tail)).turns()[-count:] if count > 0 else []
    return [(t.player_input, t.shown.narrative) for t in turns]


def _story_event(record: dict[str, Any]) -> Event | None:
    kind, data = record.get("kind"), record.get("data")
    if kind not in STORY_KINDS or not isinstance(data, dict):
        return None
    try:
        return event_from_json({**data, "event": kind})
    except ValueError:
        return None


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
