"""`storyloom verify`: a save checked end to end (its chain, format, pack digest, and every commit
and state hash, through `saves/rebuild.py`), and the report that says what was found.

`open_pack` finds the pack a save was played with, for every reader that rebuilds one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from storyloom.engine.ledger import BranchView
from storyloom.engine.packs import PackError, StoryPack, load_pack
from storyloom.engine.rules import RULE_SET, RULE_SETS
from storyloom.engine.safety import safe_text
from storyloom.engine.state import state_hash
from storyloom.engine.words import plural
from storyloom.saves.errors import PackMismatch, SaveError, SaveUnreadable
from storyloom.saves.format import SaveHeader
from storyloom.saves.reader import NotStreamable, gc_paused, load_save, open_stream
from storyloom.saves.rebuild import Rebuilt, rebuild_records


def open_pack(header: SaveHeader, path: Path, pack: StoryPack | None = None) -> StoryPack:
    """The pack a save was played with: the one given, else by its source or id; its digest must match.

    Raises:
        PackMismatch: the pack cannot be found, or it changed since the save was made.
    """
    if pack is None:
        pack = _find_pack(header, path)
    if pack.id != header.story_id:
        raise PackMismatch(path, f"this save is of the story {header.story_id!r}, not {pack.id!r}")
    if pack.digest != header.story_digest:
        raise PackMismatch(
            path,
            f"the story {header.story_id!r} has changed since this save was made (pack digest "
            f"{pack.digest[:12]}… now, {header.story_digest[:12]}… when saved); its turns "
            f"cannot be checked against a different world. Restore the story file the save "
            f"was played with",
        )
    return pack


def _find_pack(header: SaveHeader, path: Path) -> StoryPack:
    tried: list[str] = []
    for ref in dict.fromkeys(r for r in (header.story_source, header.story_id) if r):
        try:
            return load_pack(ref)
        except PackError as exc:
            tried.append(f"{ref}: {exc.problems[0].message if exc.problems else exc}")
    raise PackMismatch(
        path, f"the story {header.story_id!r} this save was played with cannot be found (" + "; ".join(tried) + ")"
    )


@dataclass(frozen=True)
class Report:
    """What `storyloom verify` found."""

    path: Path
    sound: bool
    readable: bool
    lines: tuple[str, ...]


@gc_paused()  # the loaded save is dropped before the collector is back: nothing left for it to scan
def verify_save(path: str | Path, pack: StoryPack | None = None) -> Report:
    """Check a save end to end: chain, version, pack digest, every commit and every state hash.

    A sound save is read a record at a time (`open_stream`) and checked as it is read, so memory
    holds the state and what re-judging needs whatever the save's size. Anything else (damage, an
    older format, a changed story) is read again whole (`load_save`), which names the first fault.
    """
    path = Path(path)
    try:
        return _verify_streamed(path, pack)
    except (NotStreamable, SaveError):
        return _verify_whole(path, pack)


def _verify_streamed(path: Path, pack: StoryPack | None) -> Report:
    stream = open_stream(path)
    records = stream.records()
    try:
        pack = open_pack(stream.header, path, pack)
        built = rebuild_records(path, records, pack, rules=stream.header.rules, note_today=True)
    finally:
        records.close()
    return _sound(path, stream.header, stream.count, tuple(stream.warnings), built)


def _verify_whole(path: Path, pack: StoryPack | None) -> Report:
    lines: list[str] = [f"save: {path}"]
    try:
        save = load_save(path)
    except SaveError as exc:
        readable = not isinstance(exc, SaveUnreadable)
        lines.append(f"{'NOT SOUND' if readable else 'UNREADABLE'}: {_where(exc)}{exc.reason}")
        return Report(path, False, readable, tuple(lines))
    lines += _read_lines(save.header, len(save.records), save.warnings)
    try:
        pack = open_pack(save.header, path, pack)
        lines.append("pack: digest matches")
        built = rebuild_records(path, save.records, pack, rules=save.header.rules, note_today=True)
    except SaveError as exc:
        lines.append(f"NOT SOUND: {_where(exc)}{exc.reason}")
        return Report(path, False, True, tuple(lines))
    return _sound(path, save.header, len(save.records), save.warnings, built)


def _read_lines(header: SaveHeader, records: int, warnings: tuple[str, ...]) -> list[str]:
    lines = [f"warning: {warning}" for warning in warnings]
    lines.append(
        f"story: {header.story_id} ({header.story_title}), narrator {header.narrator}"
        f"{' / ' + header.model if header.model else ''}, format version {header.version}, "
        f"rule set {header.rules} ({RULE_SETS[header.rules]})"
    )
    lines.append(f"records: {records + 1}, hash chain intact")
    return lines


def _sound(path: Path, header: SaveHeader, records: int, warnings: tuple[str, ...], built: Rebuilt) -> Report:
    lines = [f"save: {path}", *_read_lines(header, records, warnings), "pack: digest matches"]
    told = built.ledger
    lines.append(
        f"turns: {built.turns_in_story()}; every commit re-validated ({told.failures} failed, "
        f"{told.cancels} cancelled, {told.corrections} corrections); every state hash matches, and every "
        f"commit is what the model's recorded answer gives"
    )
    if told.versions or told.choices:
        lines.append(
            f"alternatives: {plural(told.versions, 'other version')} of turns re-validated against the state "
            f"before their turn, {plural(told.choices, 'choice')} among them; every state hash matches"
        )
    if told.branch_count > 1:
        lines.append(f"branches: {told.branch_count}, each judged from its fork; branch {told.branch} was played last")
        lines += [f"  {branch_line(view)}" for view in told.branches()]
    if built.ending is not None:
        lines.append(f"ending: {built.ending.title} (reached at turn {built.ending_turn})")
    if built.refused_today:
        lines.append(
            f"note: played under rule set {header.rules}, and judged by it; today's rules (set {RULE_SET}) "
            f"would refuse {built.refused_today} of its commits: {', '.join(built.refused_notes)}"
            f"{', …' if built.refused_today > len(built.refused_notes) else ''}"
        )
    if built.interrupted is not None:
        lines.append(f"note: turn {built.interrupted} was in flight when the save stopped; it was never committed")
    lines.append(f"final state: {state_hash(built.state)}")
    lines.append("sound")
    return Report(path, True, True, tuple(lines))


def branch_line(view: BranchView, current: str = "played last") -> str:
    """One branch as `verify`, `/branches` and the listings say it (the fork's command is untrusted:
    the caller makes it safe for where it goes)."""
    fork = "the story as first played" if not view.parent else f"from turn {view.fork} of branch {view.parent}"
    if view.parent and view.command:
        fork += f" ({safe_text(view.command)})"
    played = f", {current}" if view.current else ""
    return f"branch {view.number}: {fork}; {view.standing} turn{'' if view.standing == 1 else 's'}{played}"


def _where(exc: SaveError) -> str:
    if exc.seq is not None and exc.line is not None:
        return f"first bad record is {exc.seq} (line {exc.line}): "
    if exc.line is not None:
        return f"first bad record is on line {exc.line}: "
    return ""
