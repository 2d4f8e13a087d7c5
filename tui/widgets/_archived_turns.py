"""Older turns folded into one widget, so a long story costs no more per streamed word than a short one."""

from __future__ import annotations

from dataclasses import dataclass, replace

from textual.content import Content
from textual.widgets import Static

from engine.safety import safe_text
from tui.widgets._prose import no_layout_virtual_size


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

    def __init__(self, records: list[TurnRecord]) -> None:
        super().__init__("", markup=False)
        self.records = list(records)
        """The turns in this block, oldest first."""
        self.update(self._render_records())

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
        for record in self.records:
            muted = record.outcome in ("failed", "cancelled", "undone")
            parts.append(Content.styled(safe_text(f"› {record.player_input}"), "bold $text-muted"))
            paragraphs = [p.strip("\n") for p in record.prose.split("\n\n") if p.strip()]
            prose = safe_text("\n\n".join(paragraphs))
            if prose:
                parts.append(Content.styled(prose, "$text-muted") if muted else Content(prose))
            parts.append(Content.styled(safe_text(record.status), "$text-muted"))
        return Content("\n").join(parts)
