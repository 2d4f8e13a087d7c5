"""`storyloom diff`: two paths of a story side by side, as text at the terminal's width or as JSON.

`storyloom.saves.diff` finds where the paths part and how their worlds differ; this lays it out.
Everything a save holds is untrusted (a model wrote the prose): every piece goes through
`safe_text` before it reaches the terminal or the JSON. Exit codes follow diff(1): 0 the paths are
the same, 1 they differ, 2 a save cannot be read (or the arguments are wrong).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from itertools import zip_longest
from typing import Any

from rich.cells import set_cell_size

from storyloom.engine.packs import StoryPack
from storyloom.engine.safety import safe_text
from storyloom.engine.state import describe_place
from storyloom.saves.diff import PathDiff, Side, WorldDifference, compare, read_side
from storyloom.saves.errors import SaveError
from storyloom.saves.export import CommittedTurn
from storyloom.saves.locations import resolve_save
from storyloom.tui.cli.exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from storyloom.tui.words import plural

SEPARATOR = " │ "
MIN_WIDTH = 40


def run_diff(args: argparse.Namespace) -> int:
    """`storyloom diff A B` or `storyloom diff SAVE --branch 1 --branch 2`."""
    saves, branches = list(args.saves), list(args.branch or [])
    if len(saves) == 1 and len(branches) != 2:
        print("storyloom: diff of one save compares two of its branches: --branch 1 --branch 2", file=sys.stderr)
        return EXIT_USAGE
    if len(saves) == 2 and len(branches) not in (0, 2):
        print(
            "storyloom: diff of two saves takes a --branch for each, or none (each: the branch played last)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        paths = [resolve_save(ref) for ref in saves]
        if len(paths) == 1:
            paths.append(paths[0])
        chosen: list[int | None] = branches or [None, None]
        diff = compare(read_side(paths[0], chosen[0]), read_side(paths[1], chosen[1]))
    except SaveError as exc:  # 1 says the paths differ: a save that cannot be read or trusted is 2, as in diff(1)
        print(f"storyloom: {safe_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "format", "text") == "json":
        sys.stdout.write(json.dumps(diff_json(diff), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write("\n".join(diff_text(diff, _width())) + "\n")
    return EXIT_OK if diff.identical else EXIT_FAILURE


def _width() -> int:
    return max(MIN_WIDTH, shutil.get_terminal_size((80, 24)).columns)


def diff_text(diff: PathDiff, width: int) -> list[str]:
    """The diff as lines of at most `width` cells: the two paths, where they fork, the turns after
    the fork side by side, and what differs of the worlds at the ends."""
    lines = [_named("A", diff.a), _named("B", diff.b)]
    if diff.identical:
        return [*lines, f"The paths are the same: {plural(diff.common, 'turn')}, the same commands, prose and world."]
    fork = diff.fork
    if fork is None:
        lines.append("They share no turn: they part at the first.")
    else:
        lines.append(f"They share {plural(diff.common, 'turn')} and fork after turn {fork.turn} (> {_command(fork)}).")
    lines += [
        f"After the fork, A plays: {_commands(diff.a_after)}",
        f"                B plays: {_commands(diff.b_after)}",
    ]
    if diff.a_after or diff.b_after:
        lines += ["", *_side_by_side(diff, width)]
    lines += ["", *_world_lines(diff, width)]
    return lines


def _named(letter: str, side: Side) -> str:
    branch = f", branch {side.branch} of {side.branches}" if side.branches > 1 else ""
    ended = f", ended: {safe_text(side.ending)}" if side.ending else ""
    return f"{letter}  {safe_text(str(side.path))}{branch}: {plural(len(side.turns), 'turn')}{ended}"


def _command(turn: CommittedTurn) -> str:
    return " ".join(safe_text(turn.player_input).split())


def _commands(turns: tuple[CommittedTurn, ...]) -> str:
    return ", ".join(_command(t) for t in turns) if turns else "(nothing more)"


def _side_by_side(diff: PathDiff, width: int) -> list[str]:
    column = (width - len(SEPARATOR)) // 2
    lines = [_row("A", "B", column)]
    for number, (left, right) in enumerate(zip_longest(diff.a_after, diff.b_after)):
        if number:
            lines.append(_row("", "", column))
        left_lines, right_lines = _turn_lines(left, column), _turn_lines(right, column)
        for a, b in zip_longest(left_lines, right_lines, fillvalue=""):
            lines.append(_row(a, b, column))
    return lines


def _row(left: str, right: str, column: int) -> str:
    return (set_cell_size(left, column) + SEPARATOR + set_cell_size(right, column)).rstrip()


def _turn_lines(turn: CommittedTurn | None, column: int) -> list[str]:
    if turn is None:
        return []
    lines = textwrap.wrap(f"turn {turn.turn} > {_command(turn)}", column) or [""]
    for number, paragraph in enumerate(p for p in safe_text(turn.narrative).split("\n") if p.strip()):
        if number:
            lines.append("")
        lines += textwrap.wrap(" ".join(paragraph.split()), column)
    return lines


def _world_lines(diff: PathDiff, width: int) -> list[str]:
    if not diff.world:
        return ["The worlds at the ends are the same."]
    pack = diff.a.pack
    lines = ["The worlds at the ends (A │ B):"]
    for difference in diff.world:
        what, a, b = _said(pack, difference)
        lines.append(set_cell_size(f"  {what}: {a} │ {b}", width).rstrip())
    return lines


def _said(pack: StoryPack, difference: WorldDifference) -> tuple[str, str, str]:
    """A difference as a player would say it: the room's and the places' names, the item's name."""
    section, key, a, b = difference.section, difference.key, difference.a, difference.b
    if section == "room":
        return "room", _room(pack, a), _room(pack, b)
    if section == "items":
        name = pack.items[key].name if key in pack.items else key
        return safe_text(name), _place(pack, a), _place(pack, b)
    word = "flag" if section == "flags" else "stat"
    return f"{word} {safe_text(key)}", _value(a), _value(b)


def _room(pack: StoryPack, room: Any) -> str:
    return safe_text(pack.rooms[room].name) if isinstance(room, str) and room in pack.rooms else _value(room)


def _place(pack: StoryPack, place: Any) -> str:
    return safe_text(describe_place(pack, place)) if isinstance(place, str) else _value(place)


def _value(value: Any) -> str:
    if value is None:
        return "(none)"
    return safe_text(json.dumps(value, ensure_ascii=False))


def diff_json(diff: PathDiff) -> dict[str, Any]:
    """The diff for scripts: both paths, where they fork, the turns after it, the world differences."""
    fork = diff.fork
    return {
        "a": _side_json(diff.a),
        "b": _side_json(diff.b),
        "identical": diff.identical,
        "common": diff.common,
        "fork": None if fork is None else {"turn": fork.turn, "player_input": safe_text(fork.player_input)},
        "after_fork": {"a": [_turn_json(t) for t in diff.a_after], "b": [_turn_json(t) for t in diff.b_after]},
        "world": [
            {"section": d.section, "key": safe_text(d.key), "a": _safe(d.a), "b": _safe(d.b)} for d in diff.world
        ],
    }


def _side_json(side: Side) -> dict[str, Any]:
    return {
        "save": safe_text(str(side.path)),
        "branch": side.branch,
        "branches": side.branches,
        "turns": len(side.turns),
        "ending": None if side.ending is None else safe_text(side.ending),
    }


def _turn_json(turn: CommittedTurn) -> dict[str, Any]:
    return {
        "turn": turn.turn,
        "player_input": safe_text(turn.player_input),
        "narrative": safe_text(turn.narrative),
        "state_hash": turn.state_hash,
    }


def _safe(value: Any) -> Any:
    return safe_text(value) if isinstance(value, str) else value
