"""What every benchmark shares: the result shape, timing helpers and a long session generator.

Absolute times drift on a shared machine; a figure is only worth reading beside
its baseline measured in the same run, so every row carries both and their ratio.
"""

from __future__ import annotations

import asyncio
import math
import os
import statistics
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

COMMAND_CYCLE: tuple[str, ...] = (
    "take rope",
    "north",
    "drop rope",
    "take rope",
    "south",
    "drop rope",
    "look",
    "wait",
    "inventory",
    "examine the boat",
)
"""Ten lighthouse commands that move the player and an item and end where they began,
so a session can run for any number of turns without reaching an ending."""


@dataclass(frozen=True)
class Row:
    """One measured quantity: storyloom's value, the baseline's, and how they compare.

    Attributes:
        metric: what is measured, in words, with its unit.
        storyloom: storyloom's value (None when only the baseline applies).
        baseline: the naive baseline's value in the same run (None when there is none).
        target: the target in words ("< 0.6", "ratio <= 1.3"), or "" when there is none.
        met: whether the target is met (None when there is no target).
        better: "lower" or "higher": which way is better, to read the ratio.
    """

    metric: str
    storyloom: float | None
    baseline: float | None = None
    target: str = ""
    met: bool | None = None
    better: str = "lower"

    @property
    def ratio(self) -> float | None:
        """storyloom / baseline (below 1 is cheaper when lower is better)."""
        if self.storyloom is None or self.baseline is None or self.baseline == 0:
            return None
        return self.storyloom / self.baseline

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


@dataclass
class Figure:
    """One benchmark's outcome: its rows, what the baseline was, and notes for the reader."""

    number: int
    name: str
    baseline: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    """Wall time the benchmark took."""

    def add(self, *rows: Row) -> None:
        self.rows.extend(rows)

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "name": self.name,
            "baseline": self.baseline,
            "rows": [r.to_json() for r in self.rows],
            "notes": self.notes,
            "seconds": self.seconds,
        }


FRAME = 1 / 60
"""One frame of Textual's screen updates, in seconds."""


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0..100), nearest-rank, of some samples."""
    data = sorted(values)
    if not data:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(data)))
    return data[min(rank, len(data)) - 1]


def median(values: Iterable[float]) -> float:
    data = list(values)
    return statistics.median(data) if data else math.nan


def rss_mb() -> float:
    """This process's resident memory in MB (from /proc; Linux only)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return math.nan


def scratch_dir(prefix: str) -> Path:
    """A fresh folder on the real disk (fsync must reach a device, not tmpfs)."""
    return Path(tempfile.mkdtemp(prefix=f"storyloom-bench-{prefix}-"))


def fmt(value: float | None) -> str:
    """A number as the table shows it: three significant figures, no exponent for everyday sizes."""
    if value is None:
        return "–"
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.01:
        return f"{value:.3g}"
    return f"{value:.2e}"


@dataclass
class PlayedSession:
    """A session played with the offline narrator, and its save."""

    session: Any
    save_path: Path | None
    commit_seconds: list[float]
    """Wall time of each `Journal.record` of a `turn_committed` event (the durable commit), in order."""
    events: list[Any]
    """Every event but prose deltas, when kept."""
    story: list[tuple[str, str]]
    """(command, prose) of every committed turn, when kept (the session's history holds the latest only)."""


def play_session(
    turns: int,
    *,
    save_path: Path | None = None,
    seed: int = 7,
    faults: float = 0.0,
    keep_events: bool = False,
    fsync: bool = True,
    on_turn: Callable[[int], None] | None = None,
    keep_story: bool = False,
) -> PlayedSession:
    """Play `turns` turns of the lighthouse story on the offline narrator, journalled if `save_path` is given.

    Args:
        fsync: False replaces `os.fsync` with a no-op while playing, to build large saves
            fast when their commit timing is not what is measured (restored afterwards).
    """
    return asyncio.run(_play(turns, save_path, seed, faults, keep_events, fsync, on_turn, keep_story))


async def _play(
    turns: int,
    save_path: Path | None,
    seed: int,
    faults: float,
    keep_events: bool,
    fsync: bool,
    on_turn: Callable[[int], None] | None,
    keep_story: bool = False,
) -> PlayedSession:
    import time

    from storyloom.engine.events import ProseDelta
    from storyloom.engine.lifecycle import Session
    from storyloom.engine.narrators.offline import OfflineNarrator
    from storyloom.engine.packs import load_pack
    from storyloom.saves.format import SaveHeader
    from storyloom.saves.writer import Journal

    pack = load_pack("lighthouse")
    narrator = OfflineNarrator(pack, seed=seed, faults=faults)
    session = Session(pack, narrator)
    journal = None
    if save_path is not None:
        journal = Journal.create(save_path, SaveHeader.for_session(pack, narrator, seed=seed, faults=faults))
    real_fsync = os.fsync
    if not fsync:
        os.fsync = lambda fd: None  # type: ignore[assignment]
    commits: list[float] = []
    kept: list[Any] = []
    story: list[tuple[str, str]] = []
    try:
        for index in range(turns):
            async for event in session.play(COMMAND_CYCLE[index % len(COMMAND_CYCLE)]):
                if keep_events and not isinstance(event, ProseDelta):
                    kept.append(event)
                if keep_story and event.event == "turn_committed":
                    story.append((COMMAND_CYCLE[index % len(COMMAND_CYCLE)], event.narrative))
                if journal is not None:
                    if event.event == "turn_committed":
                        started = time.perf_counter()
                        journal.record(event)
                        commits.append(time.perf_counter() - started)
                    else:
                        journal.record(event)
            if on_turn is not None:
                on_turn(index)
    finally:
        os.fsync = real_fsync
        if journal is not None:
            journal.close()
    return PlayedSession(session, save_path, commits, kept, story)


def storyloom_app(session: Any) -> Any:
    """`StoryloomApp` as `storyloom play` builds it (garbage-collector tuning on, where the app has it)."""
    import inspect

    from storyloom.tui.app import StoryloomApp

    options: dict[str, Any] = {"blink": False}
    if "tune_gc" in inspect.signature(StoryloomApp.__init__).parameters:
        options["tune_gc"] = True
    return StoryloomApp(session, **options)


async def fill_transcript(
    app: Any, turns: Iterable[tuple[int, str, str]], state: dict[str, Any], every: int = 10
) -> None:
    """Show finished turns (number, command, prose) through the game screen's own event path.

    Each turn is delivered as the engine would send it (started, its prose, committed),
    and old turns are folded away as the screen does after each turn (`archive_old_turns`,
    every `every` turns here to save time), so the transcript ends as playing them leaves it.
    Every `every` turns the app gets one frame's time: Textual keeps each widget it must repaint
    (folded turns too) until its next screen update, so turns fed back to back with no frame at
    all held every one of them (363 MB at 5,000 turns), which no player can do.
    """
    from storyloom.engine.events import ProseDelta, TurnCommitted, TurnStarted

    screen = app.game
    archive = getattr(screen, "archive_old_turns", None)
    for count, (turn, command, prose) in enumerate(turns, 1):
        await screen.render_event(TurnStarted(turn=turn, attempt=1, player_input=command, retry=0))
        await screen.render_event(ProseDelta(turn=turn, text=prose))
        await screen.render_event(
            TurnCommitted(turn=turn, state_hash="", narrative=prose, state_patch=(), suggestions=(), state=state)
        )
        if archive is not None and count % every == 0:
            await archive()
        if count % every == 0:
            await asyncio.sleep(FRAME)  # a frame, as a player always leaves between turns (see below)
    if archive is not None:
        await archive()
