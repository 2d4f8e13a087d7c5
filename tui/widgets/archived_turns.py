"""Older turns folded into one widget, so a long story costs no more per streamed word than a short one."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field, replace
from typing import Any

from textual import events
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from storyloom.engine.safety import safe_text
from storyloom.tui._textual_internals import no_layout_virtual_size


@dataclass(frozen=True)
class TurnRecord:
    """A finished turn as the transcript shows it."""

    turn: int
    player_input: str
    prose: str
    outcome: str
    """"committed", "failed", "cancelled" or "undone"."""
    status: str
    """The status row's text ("" for a committed turn)."""
    details: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    """The engine events of a turn that had issues, for its details screen (none for a clean turn)."""
    apart: bool = False
    """Whether a blank row stands above its command (the turn above ends with a status in words)."""


class ArchivedTurns(Static):
    """A block of finished turns drawn as one widget, looking the same as their turn messages did.

    Every layout visits every mounted widget, so a story of a thousand turns made
    of live messages would make each streamed line slower. Finished turns far above
    the newest are folded into blocks like this one: one widget per block, whose
    wrapped height is computed once per width.
    """

    virtual_size = no_layout_virtual_size()

    DEFAULT_CSS = """
    ArchivedTurns {
        height: auto;
        padding: 0 1 0 1;
        border-left: tall $background;
    }
    """

    class DetailsRequested(Message):
        """The player clicked a folded turn that had issues: show its details."""

        def __init__(self, record: TurnRecord) -> None:
            super().__init__()
            self.record = record

    def __init__(self, records: list[TurnRecord]) -> None:
        super().__init__("", markup=False)
        self.records = list(records)
        """The turns in this block, oldest first."""
        self._first_lines: list[int] = []
        """The text line each record starts on (the `offset` Textual puts on each drawn segment)."""
        self.update(self._render_records())

    def record_at(self, line: int) -> TurnRecord | None:
        """The turn drawn from this line of the block's text."""
        index = bisect_right(self._first_lines, line) - 1
        return self.records[index] if 0 <= index < len(self.records) else None

    def on_click(self, event: events.Click) -> None:
        offset = event.style.meta.get("offset") if event.style else None
        record = self.record_at(offset[1]) if offset is not None else None
        if record is not None and record.details:
            event.stop()
            self.post_message(self.DetailsRequested(record))

    @property
    def turns(self) -> list[int]:
        return [record.turn for record in self.records]

    def extend(self, records: list[TurnRecord]) -> None:
        """Fold more (newer) turns into this block."""
        self.records += records
        self.update(self._render_records())

    def set_outcome(self, turn: int, outcome: str, status: str) -> None:
        """Change how one of the block's turns is shown (an undo reaching far back)."""
        self.records = [replace(r, outcome=outcome, status=status) if r.turn == turn else r for r in self.records]
        self.update(self._render_records())

    def _render_records(self) -> Content:
        parts: list[Content] = []
        self._first_lines = []
        line = 0
        for record in self.records:
            self._first_lines.append(line)
            muted = record.outcome in ("failed", "cancelled", "undone")
            command, status = safe_text(f"› {record.player_input}"), safe_text(record.status)
            paragraphs = [p.strip("\n") for p in record.prose.split("\n\n") if p.strip()]
            prose = safe_text("\n\n".join(paragraphs))
            if record.apart:
                parts.append(Content(""))
                line += 1
            parts.append(Content.styled(command, "bold $text-muted"))
            if prose:
                parts.append(Content.styled(prose, "$text-muted") if muted else Content(prose))
            parts.append(Content.styled(status, "$text-muted"))
            drawn = (command, prose, status) if prose else (command, status)
            line += sum(text.count("\n") + 1 for text in drawn)
        return Content("\n").join(parts)


class Archive(Vertical):
    """Every block of folded turns, in one container above the live messages.

    Each new line of a streaming turn lays the transcript out again, visiting each of its
    children; Textual keeps a container's arrangement until one of its own children changes,
    so with the blocks in here a streamed line visits one widget for all of them, however long
    the story is.
    """

    DEFAULT_CSS = """
    Archive {
        height: auto;
    }
    """
