"""The no-jump rules, checked on every pair of consecutive frames."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence

from pytest_frame_geometry.lines import Line, as_line
from pytest_frame_geometry.recorder import Frame


def assert_no_shift(
    frames: Sequence[Frame],
    lines: Iterable[str | Line],
    *,
    content: str | None = None,
    settled: Callable[[Frame], bool] | None = None,
    swap: str | None = None,
    fixed: Iterable[str] = (),
) -> None:
    """Assert on every pair of consecutive frames that nothing already painted jumped.

    The rules, checked on the rows of the named `lines`:

    1. no line moves down;
    2. lines move up only together, all by the same rows, and (with `content`) by exactly as many
       rows as the scrolled content grew in that frame: text was added below them;
    3. from the first frame where `settled(frame)` holds to the end, no line moves at all, except in
       a frame where the text named `swap` changed and rule 2 holds (a swap to a longer text);
    4. the regions named in `fixed` never change.

    A line (see `Line`; a string is `Line.containing`) is followed in the frames that show it on
    exactly one row. It fails, rather than passing having checked nothing, when a line that is not
    optional is never followed, when none of the lines is ever followed, and when the frames lack
    what a rule needs (rows recorded with `screen=True`, the `content`, `swap` or `fixed` names).

    Args:
        frames: the frames, from before the key press to well after things settle.
        lines: the lines to follow (e.g. the start of a paragraph, a command echo).
        content: name of a recorded text holding the height of the scrolled content (an int).
        settled: from the first frame this holds for, nothing may move (e.g. a status is shown).
        swap: name of a recorded text whose change in a frame allows that frame's move up after `settled`.
        fixed: names of recorded regions that must stay the same in every frame.

    Raises:
        AssertionError: listing each frame that broke a rule: its index, phase, and what moved where.
    """
    followed = [as_line(line) for line in lines]
    fixed = list(fixed)
    _check_recording(frames, followed, content, swap, fixed)
    problems = _fixed_problems(frames, fixed)
    settled_at = next((f.index for f in frames if settled is not None and settled(f)), None)
    rows = [{line: line.find(frame) for line in followed} for frame in frames]
    for (before, rows_before), (after, rows_after) in itertools.pairwise(zip(frames, rows, strict=True)):
        moves: dict[Line, tuple[int, int]] = {}
        for line in followed:
            a, b = rows_before[line][0], rows_after[line][0]
            if a is not None and b is not None and a != b:
                moves[line] = (a, b)
        if moves and (problem := _move_problem(before, after, moves, content, settled_at, swap)):
            problems.append(problem)
    problems += _unseen_problems(followed, rows)
    if problems:
        raise AssertionError(f"{len(problems)} frame(s) broke the no-shift rules:\n  " + "\n  ".join(problems))


def _fixed_problems(frames: Sequence[Frame], fixed: list[str]) -> list[str]:
    """Rule 4: the regions named `fixed` never change."""
    problems: list[str] = []
    for name in fixed:
        seen = {frame.regions.get(name) for frame in frames}
        if len(seen) > 1:
            problems.append(f"region {name!r} changed: {sorted(map(repr, seen))}")
    return problems


def _move_problem(
    before: Frame,
    after: Frame,
    moves: dict[Line, tuple[int, int]],
    content: str | None,
    settled_at: int | None,
    swap: str | None,
) -> str | None:
    """Rules 1 to 3 on one pair of frames where some line moved: what broke, or None."""
    where = f"frame {after.index} (after {after.phase or 'the start'!r})"
    shown = ", ".join(f"{line.value!r} {a}->{b}" for line, (a, b) in moves.items())
    if any(b > a for a, b in moves.values()):
        return f"{where}: moved down: {shown}"
    shifts = {b - a for a, b in moves.values()}
    if len(shifts) > 1:
        return f"{where}: lines moved up by different amounts: {shown}"
    up = -shifts.pop()
    if content is not None:
        grown = int(after.texts[content] or 0) - int(before.texts[content] or 0)
        if grown != up:
            return f"{where}: moved up {up} rows while the content grew {grown}: {shown}"
    if settled_at is not None and after.index >= settled_at:
        if swap is None or after.texts.get(swap) == before.texts.get(swap):
            return f"{where}: moved after things settled (frame {settled_at}): {shown}"
    return None


def _unseen_problems(followed: list[Line], rows: list[dict[Line, tuple[int | None, int]]]) -> list[str]:
    """A line that is not optional must be followed somewhere, and some line must be."""
    problems: list[str] = []
    never = [line for line in followed if all(found[line][0] is None for found in rows)]
    for line in never:
        if not line.optional:
            most = max(found[line][1] for found in rows)
            why = f" (it matched {most} rows at once: name it more exactly)" if most > 1 else ""
            problems.append(f"line {line} was never seen on screen{why}")
    if followed and len(never) == len(followed) and all(line.optional for line in followed):
        problems.append(f"none of the {len(followed)} lines was ever seen: nothing was followed")
    return problems


def _check_recording(
    frames: Sequence[Frame], lines: list[Line], content: str | None, swap: str | None, fixed: list[str]
) -> None:
    """Fail when the frames cannot show what the rules check (a check that sees nothing passes nothing)."""
    if not frames:
        raise AssertionError("no frames to check: was anything painted while recording?")
    missing: list[str] = []
    if any(line.needs_screen() for line in lines) and not frames[0].painted:
        missing.append("the screen's rows (record with screen=True)")
    for line in lines:
        if line.within is not None and line.within not in frames[0].regions:
            missing.append(f"the region {line.within!r} that {line} is in (name it in regions=)")
    for name, what in ((content, "content"), (swap, "swap")):
        if name is not None and name not in frames[0].texts:
            missing.append(f"the text {name!r} given as {what}= (name it in texts=)")
    missing += [
        f"the region {name!r} given as fixed= (name it in regions=)" for name in fixed if name not in frames[0].regions
    ]
    if missing:
        raise AssertionError("the recording lacks what the check needs: " + "; ".join(dict.fromkeys(missing)))
