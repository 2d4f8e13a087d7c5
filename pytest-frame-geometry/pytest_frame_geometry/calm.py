"""Calm reading: the rules a view that must not jump keeps on every frame, counted in rows of text.

A reader follows text that is being written below the last line. What they feel as a jump is
not a widget's region or a content height changing but the rows of text they were reading
moving, changing or vanishing. So these checks read only what each frame painted in the view
(its rows, as text) and, for timing, when it was painted. Blank rows are not text: a reserve of
blank rows that lifts the view counts as a jump, which a check of content height cannot see.

For each pair of consecutive frames (`Sheet`s), after finding how far the view moved (the shift
that lines up the most rows of the frame before with rows of the frame after):

1. no row of text moves down;
2. when rows move up by d, at least d rows arrived below them: the last row of text is no higher
   than it was (a blank separator row between paragraphs or turns counts, blank rows under the
   text do not);
3. no row of text still in view becomes blank (text never disappears to come back);
4. a row of text is only ever appended to while it stays in view: no re-wrap, no half word that
   hops to the next row;
5. when idle with the view full (`idle(sheet)`), at most one blank row sits under the last text;
6. while the same prose is written again (`same(sheet)` on both frames), no row of text changes;
7. after a resize (`resized(sheet)` marks it), once idle, no run of more than one blank row;
8. while the reader is scrolled away from the newest text (`scrolled(sheet)` on both frames), no
   row of text in view moves or changes;
9. every status shown (a row starting with one of `statuses`) stays at least `min_status` seconds.

Rows starting with a status or an `ignore` text (a hint docked over the view) are not text for
rules 1-4 and 6-8: they may come and go. A pair of frames across something that replaces the
text on purpose (an undo, a new game, a swap to different prose, a resize) is not compared by
rules 1-4: give `reset(before, after)`.

This module is pure: it reads recorded frames (`pytest_frame_geometry.Frame`, or
anything with `index`, `phase`, `marks`, `screen` and `texts`) and tmux captures alike.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

RULES = {
    1: "a line moved down",
    2: "the view rose by more than the text that arrived",
    3: "text disappeared",
    4: "a row shown changed other than by appending (re-wrap, a half word hopping rows)",
    5: "more than one blank row under the newest text when idle",
    6: "the same prose written again changed what was shown",
    7: "a gap of more than one blank row after a resize",
    8: "the view moved while the reader was scrolled up",
    9: "a status flickered (shown less than its minimum time)",
}
"""Each rule's number and what a reader sees when it breaks."""


class RecordedFrame(Protocol):
    """What the check reads of a recorded frame (`frames.Frame` has it)."""

    index: int
    phase: str
    marks: tuple[str, ...]
    texts: dict[str, str | None]
    screen: tuple[str, ...]


@dataclass(frozen=True)
class Sheet:
    """One painted frame of the view, as the rules read it.

    Attributes:
        index: the frame's number (for messages).
        rows: the view's rows as painted, top to bottom, one string each (the view's width, or
            trailing spaces stripped: both are read the same).
        time: when it was painted, in seconds (any clock; only rule 9 reads it).
        marks: labels set since the frame before (events, keys).
        phase: the latest label (for messages).
        flags: anything the predicates need (idle, scrolled, ...).
    """

    index: int
    rows: tuple[str, ...]
    time: float | None = None
    marks: tuple[str, ...] = ()
    phase: str = ""
    flags: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Violation:
    """One frame that broke one rule."""

    rule: int
    index: int
    phase: str
    detail: str

    def __str__(self) -> str:
        where = f"frame {self.index} (after {self.phase or 'the start'!r})"
        return f"rule {self.rule} ({RULES[self.rule]}): {where}: {self.detail}"


Predicate = Callable[[Sheet], bool]
PairPredicate = Callable[[Sheet, Sheet], bool]


def _never(*_: Sheet) -> bool:
    return False


def calm_violations(
    sheets: Sequence[Sheet],
    *,
    statuses: Iterable[str] = (),
    ignore: Iterable[str] = (),
    idle: Predicate | None = None,
    reset: PairPredicate = _never,
    same: Predicate = _never,
    scrolled: Predicate = _never,
    resized: Predicate = _never,
    min_status: float = 0.25,
    slack: float = 0.05,
) -> list[Violation]:
    """Every frame that breaks one of the rules (see the module docstring), in order.

    Args:
        sheets: the frames, from before the first key press to well after things settle.
        statuses: how each status row starts (rule 9; not text for the other rules).
        ignore: how rows that are not story text start (a docked hint): not text for any rule.
        idle: frames in which nothing is being written (rules 5, 7); default: the last frame.
        reset: pairs across which the text was replaced on purpose (rules 1-4 skip them).
        same: frames in which the prose shown is being written again with the same words (rule 6).
        scrolled: frames in which the reader is scrolled away from the newest text (rule 8).
        resized: the frame a resize was made in (rule 7 holds from there, once idle).
        min_status: seconds a status must stay shown (rule 9).
        slack: seconds of timing tolerance for rule 9 (a frame is painted a little late).
    """
    status_starts = tuple(statuses)
    volatile = status_starts + tuple(ignore)
    if idle is None:
        last = sheets[-1].index if sheets else -1
        idle = lambda sheet: sheet.index == last  # noqa: E731
    texts = [_text_rows(sheet.rows, volatile) for sheet in sheets]
    found: list[Violation] = []

    def add(rule: int, sheet: Sheet, detail: str) -> None:
        found.append(Violation(rule, sheet.index, sheet.phase, detail))

    resized_at = None
    for k, sheet in enumerate(sheets):
        if resized(sheet):
            resized_at = k
        if k and not reset(sheets[k - 1], sheet):
            _pair(sheets[k - 1], sheet, texts[k - 1], texts[k], add, same, scrolled)
        if idle(sheet):
            rows = texts[k]
            shown = [y for y, row in enumerate(sheet.rows) if row.strip() and not row.strip().startswith(tuple(ignore))]
            if shown and _full(rows):
                under = len(rows) - 1 - shown[-1]
                if under > 1:
                    add(5, sheet, f"{under} blank rows under the newest text")
            if resized_at is not None:  # a status row is not a gap: rule 5's rows, not the text rows
                gap = _widest_gap([row if y in shown else "" for y, row in enumerate(sheet.rows)])
                if gap > 1:
                    add(7, sheet, f"a gap of {gap} blank rows after the resize")
    found += _flicker(sheets, status_starts, min_status - slack)
    found.sort(key=lambda v: (v.index, v.rule))
    return found


def _text_rows(rows: Sequence[str], volatile: tuple[str, ...]) -> list[str]:
    """The rows as text: blank, and status or ignored rows, are ""."""
    out = []
    for row in rows:
        text = row.rstrip()
        out.append("" if not text.strip() or (volatile and text.strip().startswith(volatile)) else text)
    return out


def _full(rows: Sequence[str]) -> bool:
    """Whether the view is filled with the story (text in its top rows): else blank rows below are empty space."""
    return any(rows[:3])


def _widest_gap(rows: Sequence[str]) -> int:
    """The longest run of blank rows between two rows that show something."""
    shown = [y for y, row in enumerate(rows) if row]
    return max((b - a - 1 for a, b in itertools.pairwise(shown)), default=0)


def _shift(before: Sequence[str], after: Sequence[str]) -> int | None:
    """How many rows the view moved up from `before` to `after` (negative: down), or None when no
    row of text lines up (the text was replaced). Rows line up when the later one starts with the
    earlier; the shift that lines up the most rows wins, and no move at all on a tie."""
    where: dict[str, list[int]] = defaultdict(list)
    for y, row in enumerate(after):
        if row:
            where[row].append(y)
    votes: Counter[int] = Counter()
    for y, row in enumerate(before):
        if not row:
            continue
        exact = where.get(row)
        if exact:
            votes.update(y - j for j in exact)
            continue
        votes.update(y - j for j, other in enumerate(after) if other and other.startswith(row))
    if not votes:
        return None
    best = max(votes.values())
    return min((d for d, n in votes.items() if n == best), key=lambda d: (abs(d), d))


def _pair(
    before: Sheet,
    after: Sheet,
    a: list[str],
    b: list[str],
    add: Callable[[int, Sheet, str], None],
    same: Predicate,
    scrolled: Predicate,
) -> None:
    """Rules 1-4, 6 and 8 on one pair of consecutive frames."""
    if a == b:
        return
    still = [rule for rule, holds in ((6, same), (8, scrolled)) if holds(before) and holds(after)]
    if not any(a):
        return
    d = _shift(a, b)
    if d is None:
        add(3, after, f"every row of text was replaced ({sum(map(bool, a))} rows)")
        for rule in still:
            add(rule, after, "the text in view was replaced")
        return
    if d < 0:
        add(1, after, f"the text moved down {-d} rows")
    last_a = max(y for y, row in enumerate(a) if row)
    last_b = max((y for y, row in enumerate(b) if row), default=-1)
    if d > 0 and last_b < last_a:
        add(2, after, f"the view rose {d} rows while {d - (last_a - last_b)} rows of text arrived")
    gone, changed = _followed_rows(a, b, d)
    _report_rows(after, add, gone, changed)
    for rule in still:
        if d or gone or changed or any(b[y - d] != row for y, row in enumerate(a) if row and 0 <= y - d < len(b)):
            add(rule, after, f"the text in view moved {d} rows or changed")
        elif any(row and not (0 <= y + d < len(a) and a[y + d]) for y, row in enumerate(b)):
            add(rule, after, "text was added in view")


def _followed_rows(a: list[str], b: list[str], d: int) -> tuple[list[str], list[tuple[str, str]]]:
    """Each row of text in `a` where it is in `b` after a shift of `d`: the rows gone blank, and the
    rows that are not their old text still (with what they became)."""
    gone: list[str] = []
    changed: list[tuple[str, str]] = []
    for y, row in enumerate(a):
        j = y - d
        if not row or not 0 <= j < len(b):
            continue
        if not b[j]:
            gone.append(row)
        elif not b[j].startswith(row):
            changed.append((row, b[j]))
    return gone, changed


def _report_rows(
    after: Sheet, add: Callable[[int, Sheet, str], None], gone: list[str], changed: list[tuple[str, str]]
) -> None:
    """Rules 3 and 4: no row of text goes blank, none loses a half word or re-wraps."""
    if gone:
        add(3, after, f"{len(gone)} row(s) of text went blank, e.g. {gone[0].strip()[:40]!r}")
    hops = [(old, new) for old, new in changed if old.startswith(new)]
    if hops:  # the row lost its end: a word painted before it was whole moved to the next row
        old, new = hops[0]
        add(4, after, f"{len(hops)} row(s) lost a half word to the next row: {old.strip()[-30:]!r} -> {new.strip()!r}")
    if len(hops) < len(changed):
        old, new = next(pair for pair in changed if pair not in hops)
        count = len(changed) - len(hops)
        add(4, after, f"{count} row(s) re-wrapped: {old.strip()[-30:]!r} -> {new.strip()[-30:]!r}")


def _flicker(sheets: Sequence[Sheet], starts: tuple[str, ...], shortest: float) -> list[Violation]:
    """Rule 9: each status text (a row starting with one of `starts`) stays shown at least `shortest` s."""
    if not starts:
        return []
    found: list[Violation] = []
    shown: dict[str, int] = {}
    for k, sheet in enumerate(sheets):
        now = {row.strip() for row in sheet.rows if row.strip().startswith(starts)}
        for text in [t for t in shown if t not in now]:
            first = sheets[shown.pop(text)]
            if first.time is not None and sheet.time is not None and sheet.time - first.time < shortest:
                found.append(
                    Violation(9, sheet.index, sheet.phase, f"{text!r} shown {1000 * (sheet.time - first.time):.0f} ms")
                )
        for text in now:
            shown.setdefault(text, k)
    return found


def sheets_of(
    frames: Sequence[RecordedFrame],
    view: Callable[[RecordedFrame], Sequence[str]],
    *,
    clock: str | None = None,
    flags: Iterable[str] = (),
) -> list[Sheet]:
    """Recorded frames as sheets: `view(frame)` gives the view's rows (e.g. the transcript's region
    of `frame.screen`), `clock` names a recorded text holding the paint time, `flags` recorded texts
    the predicates read from `sheet.flags`."""
    names = tuple(flags)
    return [
        Sheet(
            frame.index,
            tuple(view(frame)),
            float(frame.texts[clock] or 0) if clock else None,
            tuple(frame.marks),
            frame.phase,
            {name: frame.texts.get(name) for name in names},
        )
        for frame in frames
    ]


def assert_calm(sheets: Sequence[Sheet], **rules: Any) -> None:
    """Assert that no frame breaks a rule (`calm_violations`, same arguments).

    Raises:
        AssertionError: how many frames broke each rule, and the first few of each.
    """
    found = calm_violations(sheets, **rules)
    if not found:
        return
    by_rule: dict[int, list[Violation]] = defaultdict(list)
    for violation in found:
        by_rule[violation.rule].append(violation)
    lines = [f"{len(found)} frame(s) broke the calm-reading rules:"]
    for rule in sorted(by_rule):
        lines.append(f"  rule {rule}, {RULES[rule]}: {len(by_rule[rule])} frame(s)")
        lines += [f"    {v}" for v in by_rule[rule][:4]]
    raise AssertionError("\n".join(lines))


def count_by_rule(violations: Iterable[Violation]) -> dict[int, int]:
    """Violations per rule (every rule listed, 0 when none)."""
    counts = Counter(v.rule for v in violations)
    return {rule: counts.get(rule, 0) for rule in RULES}
