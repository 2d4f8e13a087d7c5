"""A recorded commit must be what the model's recorded answer for its turn gives, when judged.

A commit whose prose was edited, the hash chain recomputed, passes every other check of a rebuild
(`saves/rebuild.py`); this one names where the commit and the answer part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pydantic_core

from storyloom.engine.events import AttemptFinished, TurnCommitted
from storyloom.engine.packs import StoryPack
from storyloom.engine.rules import KEEPS_EVERY_FIELD, judge_data, parse_output
from storyloom.engine.state import WorldState, canonical_json
from storyloom.engine.turns import kept_fields
from storyloom.saves.errors import InvalidCommit
from storyloom.saves.format import Record

_COMMITTED_FIELDS = ("narrative", "state_patch", "suggestions")


def check_answer(
    path: Path,
    rules: int,
    pack: StoryPack,
    before: WorldState,
    record: Record,
    event: TurnCommitted,
    answer: Record,
    rejected: Sequence[Record] = (),
) -> None:
    """The commit must be what the last answer recorded for its turn gives when judged: the
    same narrative, patch and suggestions. A correction's answer is laid over what it kept of the
    earlier answers of the turn (`rejected`): under rule set 4 on, every field it leaves out, as the
    engine derived them (`kept_fields`, answer by answer); before, only a narrative left out, which
    an earlier answer wrote (the one on screen)."""
    raw = answer.raw
    keeps_every_field = rules >= KEEPS_EVERY_FIELD and bool(rejected)
    if raw is not None and _as_committed(raw, event, none_left_out=not keeps_every_field):
        return
    data = parse_output(raw)[0]
    kept: Mapping[str, Any]
    if keeps_every_field:
        kept = _kept_fields(rejected)
    else:
        narrative = _kept(rejected, event.narrative)
        kept = {"narrative": narrative} if narrative is not None else {}
    verdict = judge_data(data, before, pack, kept=kept, rules=rules) if data is not None else None
    turn = verdict.turn if verdict is not None else None
    if turn is None:
        differs = ["the answer does not give a turn"]
    else:
        given = {
            "narrative": turn.narrative,
            "state_patch": tuple(turn.patch_json()),
            "suggestions": tuple(turn.suggestions),
        }
        committed = {"narrative": event.narrative, "state_patch": event.state_patch, "suggestions": event.suggestions}
        differs = [
            "its {} differs (the commit: {}; the answer: {})".format(
                name, *from_where_they_part(canonical_json(committed[name]), canonical_json(given[name]))
            )
            for name in _COMMITTED_FIELDS
            if given[name] != committed[name]
        ]
    if differs:
        raise InvalidCommit(
            path,
            f"record {record.seq}: the commit of turn {event.turn} is not what the model's answer recorded "
            f"for it (record {answer.seq}) gives: {'; '.join(differs)}; the file was edited",
            line=record.line,
            seq=record.seq,
        )


def from_where_they_part(first: str, second: str, width: int = 40) -> tuple[str, str]:
    """Two texts shown from a little before their first difference, each cut to `width` characters."""
    at = next((i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), min(len(first), len(second)))
    start = max(0, at - 10)

    def cut(text: str) -> str:
        shown = text[start : start + width]
        return ("…" if start else "") + shown + ("…" if start + width < len(text) else "")

    return cut(first), cut(second)


def _kept_fields(rejected: Sequence[Record]) -> dict[str, Any]:
    """What the turn's last answer is laid over: the fields the engine kept of the answers before it."""
    kept: dict[str, Any] = {}
    for earlier in rejected:
        if isinstance(finished := earlier.event, AttemptFinished):
            kept = kept_fields(parse_output(finished.raw)[0], finished.raw, kept, first=finished.attempt == 1)
    return kept


def _kept(rejected: Sequence[Record], committed: str) -> str | None:
    """The narrative a correction that leaves it out keeps: the commit's, when an earlier answer of
    the turn wrote it (the prose on screen, or a rejected turn's own); else the latest one written."""
    written: list[str] = []
    for earlier in rejected:
        try:
            data = pydantic_core.from_json(earlier.raw or "", allow_partial=True)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(narrative := data.get("narrative"), str):
            written.append(narrative)
    if committed in written:
        return committed
    return written[-1] if written else None


def _as_committed(raw: str, event: TurnCommitted, *, none_left_out: bool) -> bool:
    """Whether the answer holds the commit's narrative, patch and suggestions exactly as committed:
    almost always, and far cheaper to see than judging the answer again (which names what differs).

    Args:
        none_left_out: suggestions left out are none (a first answer, or any under rule sets before
            4); else a correction that leaves them out keeps the rejected turn's, which only the
            judging path derives.
    """
    try:
        data = pydantic_core.from_json(raw, allow_inf_nan=False)
    except ValueError:
        return False
    return (
        isinstance(data, dict)
        and data.get("narrative") == event.narrative  # one left out is kept from an earlier answer
        and data.get("state_patch") == list(event.state_patch)
        and data.get("suggestions", [] if none_left_out else None) == list(event.suggestions)
    )
