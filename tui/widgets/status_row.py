"""The one-line status inside a turn message: what the engine is doing with this turn, in words."""

from __future__ import annotations

import math
import time

from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import Static

from storyloom.tui._textual_internals import no_layout_virtual_size
from storyloom.tui.failures import BUDGET_SPENT

HOLD = 0.25
"""Seconds a status stays painted at least, so it can be read; and how long a turn may take to
show its first words before "writing…" is painted."""


class StatusRow(Static):
    """A status line of fixed height: updating it never changes the size of its message.

    The text says the status in words (colour only repeats it), and each update
    is made without a layout pass because the row is always exactly one line.

    It never flickers: "writing…" is painted only when no words came within `HOLD` seconds,
    and a status once painted stays at least `HOLD` seconds (a later one waits, and one that
    follows within that time replaces it). `kind` and `plain_text` say the status at once.
    """

    virtual_size = no_layout_virtual_size()

    DEFAULT_CSS = """
    StatusRow {
        height: 1;
        width: 1fr;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        color: $text-muted;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("", markup=False, id=id, classes=classes)
        self.kind = ""
        """What the row says now: "", "writing", "correcting", "retrying", "failed", "cancelled", "undone",
        "versions" (which version of the latest turn shows) or "fixed" (the version that counts)."""
        self.plain_text = ""
        """The row's text without styling (for tests and the frame harness)."""
        self._wanted = Content("")
        """What the row is to show once it may (see `HOLD`)."""
        self._not_before = 0.0
        """When `_wanted` may be painted (a monotonic time)."""
        self._painted = ""
        self._painted_at = 0.0
        self._timer: Timer | None = None
        self._fresh = False

    @property
    def showing(self) -> bool:
        """Whether words are painted in the row now (they stay at least `HOLD` seconds)."""
        return bool(self._painted)

    def _set(self, kind: str, content: Content, *, wait: float = 0.0) -> None:
        self.kind = kind
        self.plain_text = content.plain
        self._wanted = content
        now = time.monotonic()
        self._not_before = now + wait
        if self._painted:
            self._not_before = max(self._not_before, self._painted_at + HOLD)
        if self.is_mounted:
            self._schedule()

    def on_mount(self) -> None:
        if self._not_before:  # set before it was mounted: the wait starts now
            self._not_before = max(self._not_before, time.monotonic() + (HOLD if self.kind == "writing" else 0))
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self._wanted.plain == self._painted:
            return
        delay = self._not_before - time.monotonic()
        if delay > 0:
            self._timer = self.set_timer(delay, self._paint)
        else:
            self._paint()

    def _paint(self) -> None:
        self._timer = None
        held = self._painted_at + HOLD - time.monotonic() if self._painted else 0
        if held > 0:  # the status shown was drawn later than it was set: it stays its whole time
            self._timer = self.set_timer(held, self._paint)
            return
        self._painted = self._wanted.plain
        self._painted_at = time.monotonic()
        self._fresh = True
        self.update(self._wanted, layout=False)

    def render_lines(self, crop: Region) -> list[Strip]:
        if self._fresh:  # the hold counts from when the status is drawn, which may be a frame after `_paint`
            self._fresh = False
            self._painted_at = time.monotonic()
        return super().render_lines(crop)

    @property
    def painted(self) -> bool:
        """Whether the row shows what it says (`plain_text`), not a status it still holds or waits to show."""
        return self._painted == self.plain_text

    def clear(self) -> None:
        """Nothing to say: the turn is streaming or committed."""
        self._set("", Content(""))

    def writing(self, version: int = 1) -> None:
        """The turn (or another version of it) has started and no prose has arrived yet: a sign of life, in words."""
        text = "writing…" if version <= 1 else f"writing version {version}…"
        self._set("writing", Content.styled(text, "dim italic"), wait=HOLD)

    def versions(self, chosen: int, count: int, note: str = "") -> None:
        """Which committed version of the latest turn shows, while the player may still change it.

        One version and nothing to say: the row stays empty, as for any committed turn.
        """
        if count <= 1 and not note:
            self.clear()
            return
        parts: list[str | tuple[str, str]] = []
        if count > 1:
            parts.append((f"‹ {chosen}/{count} ›", "bold"))
        if note:
            parts += [" · " if parts else "", (note, "italic")]
        self._set("versions", Content.assemble(*parts))

    def fixed(self, chosen: int, count: int, note: str = "") -> None:
        """The next command was played: the version that shows is the one that counts, for good."""
        if count <= 1 and not note:
            self.clear()
            return
        words = " · ".join(part for part in (fixed_versions(chosen, count) if count > 1 else "", note) if part)
        self._set("fixed", Content.styled(words, "dim"))

    def correcting(self, correction: int, budget: int) -> None:
        """The engine is asking the narrator to correct this turn."""
        self._set("correcting", Content.styled(f"correcting ({correction}/{budget})…", "dim italic"))

    def retrying(self, delay: float) -> None:
        """The narrator had a transient fault; the same request goes again after `delay`."""
        seconds = max(1, math.ceil(delay))
        self._set("retrying", Content.styled(f"narrator busy, retrying in {seconds} s", "dim italic"))

    def failed(self, *, can_retry: bool, words: str = BUDGET_SPENT.status) -> None:
        """The turn failed (`words` say how: `storyloom.tui.failures`): nothing was committed."""
        parts: list[str | tuple[str, str]] = [(words, "bold $text-warning")]
        if can_retry:
            parts += [" · ", ("^r", "bold"), " retry"]
        parts += [" · ", ("^d", "bold"), " details"]
        self._set("failed", Content.assemble(*parts))

    def cancelled(self, *, can_retry: bool) -> None:
        """The player cancelled this turn: nothing was committed."""
        parts: list[str | tuple[str, str]] = [("cancelled", "bold")]
        if can_retry:
            parts += [" · ", ("^r", "bold"), " retry"]
        self._set("cancelled", Content.assemble(*parts))

    def undone(self) -> None:
        """The player undid this committed turn."""
        self._set("undone", Content.styled("undone · this turn no longer counts", "dim italic"))


def fixed_versions(chosen: int, count: int) -> str:
    """A turn's versions once the next command fixed it, as its status row says it (and a folded turn)."""
    return f"version {chosen} of {count}"
