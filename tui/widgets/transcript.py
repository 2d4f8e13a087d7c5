"""The scrolling transcript of the story, which follows new text unless the player scrolled up."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.message import Message
from textual.scrollbar import ScrollBar
from textual.widgets import Static

from storyloom.tui._textual_internals import no_layout_virtual_size, vertical_scrollbar


class FollowHint(Static):
    """A one-line affordance shown when the player scrolled away from the newest text."""

    DEFAULT_CSS = """
    FollowHint {
        dock: bottom;
        height: 1;
        width: 1fr;
        text-align: right;
        padding: 0 2;
        background: $panel;
        color: $text-accent;
        display: none;
    }
    """

    class Pressed(Message):
        """The player asked to follow the newest text again."""

    def __init__(self) -> None:
        super().__init__("↓ newer text below · click or press end to follow", markup=False)

    def on_click(self) -> None:
        self.post_message(self.Pressed())


class Transcript(VerticalScroll, can_focus=False):
    """Turn messages, oldest first, anchored to the bottom with Textual's `anchor()`.

    While the player is at the bottom new prose stays in view without a
    `scroll_end()` per chunk; a player who scrolls up is left where they are and
    sees the follow hint instead.
    """

    virtual_size = no_layout_virtual_size()

    DEFAULT_CSS = """
    Transcript {
        height: 1fr;
        scrollbar-size-vertical: 1;
        scrollbar-gutter: stable;
    }
    """

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """Textual's scroll bar, restyling only the rows that changed (`RowDiffScrollBar`)."""
        return vertical_scrollbar(self)

    @property
    def container_size(self) -> Size:
        """Its size, counting as part of the view the rows laid out ahead of streaming text (`hidden_rows`).

        Textual's anchor and `max_scroll_y` measure from it, so those rows stay below the view:
        the view ends one row under the newest text while it streams, as it would with no rows
        ahead, and the player cannot scroll to them either.
        """
        size = super().container_size
        hidden = self.hidden_rows()
        return Size(size.width, size.height + hidden) if hidden else size

    def hidden_rows(self) -> int:
        """Blank rows at the foot of the content that were never shown: those its last child says it
        was laid out with below its text (a streaming `TurnMessage`'s `hidden_rows`)."""
        for child in reversed(self.children):
            if not child.styles.is_docked:  # the follow hint is docked, out of the flow
                return getattr(child, "hidden_rows", 0)
        return 0

    def compose(self) -> ComposeResult:
        yield FollowHint()

    def on_mount(self) -> None:
        self.anchor()

    @property
    def following(self) -> bool:
        """True while the newest text is in view (the anchor holds)."""
        # An anchored transcript shorter than its view sits at the bottom (scroll_y < 0).
        return self.max_scroll_y <= 0 or self.scroll_y >= self.max_scroll_y - 1

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._update_hint()

    def _update_hint(self) -> None:
        hint = self.query_one(FollowHint)
        show = not self.following
        if hint.display != show:
            hint.display = show
            self.refresh_bindings()

    def follow(self) -> None:
        """Scroll to the newest text and follow it again, repainting every row of the view.

        The repaint is needed: after a page up, a failed turn and ctrl+r, the scroll to the bottom
        was painted only where Textual saw widgets move, and the rest of the view kept the rows of
        the page above until the turn ended (the frame tests compare the painted screen with a fresh
        render).
        """
        self.scroll_end(animate=False, immediate=True)
        self.anchor()
        self._update_hint()
        self.refresh()

    def page(self, direction: int) -> None:
        """Scroll a page up (-1) or down (1), so that paging shows every line exactly once.

        Away from the newest text the follow hint covers the view's last row, so a page is
        one row less than the view: the row under the hint shows at the top of the next page down,
        and the top row of a page up is the one the hint covered.
        """
        step = max(1, self.scrollable_content_region.height - 1)
        self.scroll_to(y=max(0, self.scroll_y + direction * step), animate=False, immediate=True)
        if direction > 0 and self.scroll_y >= self.max_scroll_y:
            self.follow()

    def on_follow_hint_pressed(self, event: FollowHint.Pressed) -> None:
        event.stop()
        self.follow()
