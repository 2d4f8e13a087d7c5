"""The prose of one turn: streamed append-only, swapped whole only when a correction changed it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Static

from engine.safety import safe_text

PARAGRAPH_BREAK = "\n\n"


def plain(text: str) -> Content:
    """Untrusted text as inert content: no markup, no `@click` actions, no escape sequences.

    `Content(...)` never parses markup, and `safe_text` strips control characters,
    bidi overrides and zero-width characters before anything reaches the terminal.
    """
    return Content(safe_text(text))


def no_layout_virtual_size() -> Reactive[Size]:
    """`Widget.virtual_size` without its layout flag (one descriptor per class that uses it).

    Textual declares `virtual_size` with `layout=True`, so a size change found by a
    layout asks for a second full layout. That second pass changes nothing for the
    transcript's widgets; they use this instead, so a streamed line costs one layout,
    not two (relies on Textual 8.2.8 internals; the frame tests cover it).
    """
    return Reactive(Size(0, 0), layout=False, repaint=False)


class Paragraph(Static):
    """Plain prose text (no markup) that does not ask for a second layout when resized."""

    virtual_size = no_layout_virtual_size()

    def __init__(self, *, classes: str | None = None) -> None:
        super().__init__("", markup=False, classes=classes)


class Prose(Vertical):
    """The narrative of a turn, split into a frozen part and one live paragraph.

    Streaming only ever touches the live paragraph, and without a layout pass
    while its wrapped height is unchanged, so the cost of a chunk does not grow
    with the length of the prose or of the story. Finished paragraphs move to
    the frozen part once, when the next paragraph starts.
    """

    virtual_size = no_layout_virtual_size()

    DEFAULT_CSS = """
    Prose {
        height: auto;
        & > Static { height: auto; }
        & > .-frozen { margin-bottom: 1; }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._text = ""
        self._frozen_len = 0
        self._frozen = Paragraph(classes="-frozen")
        self._frozen.display = False
        self._live = Paragraph(classes="-live")
        self._live.display = False
        self._live_height = -1
        self._live_width = -1

    @property
    def text(self) -> str:
        """The prose as streamed or swapped in so far (before sanitising)."""
        return self._text

    def compose(self) -> ComposeResult:
        yield self._frozen
        yield self._live

    def append(self, chunk: str) -> None:
        """Add streamed prose at the end, touching only the live paragraph."""
        if not chunk:
            return
        self._text += chunk
        cut = self._text.rfind(PARAGRAPH_BREAK)
        if cut > self._frozen_len:
            self._show(self._frozen, self._text[:cut])
            self._frozen_len = cut
            self._show(self._live, self._text[cut + len(PARAGRAPH_BREAK):])
            return
        start = self._frozen_len + len(PARAGRAPH_BREAK) if self._frozen_len else 0
        self._update_live(self._text[start:])

    def set_text(self, text: str) -> None:
        """Show different prose in one step (a correction changed it, or a retry starts afresh)."""
        self._text = text
        cut = text.rfind(PARAGRAPH_BREAK)
        self._frozen_len = max(cut, 0)
        self._show(self._frozen, text[:cut] if cut > 0 else "")
        self._show(self._live, text[cut + len(PARAGRAPH_BREAK):] if cut > 0 else text)

    def _show(self, part: Static, text: str) -> None:
        part.update(plain(text.strip("\n")))
        part.display = bool(text.strip())
        if part is self._live:
            self._live_height = -1

    def _update_live(self, text: str) -> None:
        """Update the live paragraph; lay out only when its wrapped height changes.

        The height is predicted with the measurement the layout itself uses, at the
        width the paragraph was last laid out with, and compared with the height last
        asked for (not the current size, which lags while a layout is pending).
        """
        content = plain(text)
        live = self._live
        width = live.content_region.width
        height = content.get_height(live.styles, width) if width > 0 else -1
        same_height = live.display and width > 0 and height == self._live_height and width == self._live_width
        self._live_height, self._live_width = height, width
        live.update(content, layout=not same_height)
        if not live.display:
            live.display = True
