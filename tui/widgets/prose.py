"""The prose of one turn: streamed append-only, swapped whole only when a correction changed it."""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.content import Content
from textual.geometry import Region, Size
from textual.selection import Selection
from textual.strip import Strip
from textual.visual import Visual
from textual.widget import Widget
from textual.widgets import Static

from storyloom.engine.safety import safe_text
from storyloom.tui import _textual_internals
from storyloom.tui._textual_internals import no_layout_virtual_size, request_layout, scroll_to_new_rows

PARAGRAPH_BREAK = "\n\n"
WORD_END = (".", ",", ";", ":", "!", "?", "\u2026", "\u201d", ")", "]")
"""A streamed word that ends with one of these is shown before the space after it arrives (the
last word of the prose usually does, and nothing may come after it for a while). Not quotes or
apostrophes: they also open a word or sit inside one ("keeper's")."""
AHEAD = 8
"""Rows a streaming prose is laid out with below its text, never shown (`Prose.hidden`): the lines
that fill them cost a scroll step each, not a layout."""


def rows_ahead() -> int:
    """`AHEAD`, or none on a Textual outside the tested releases: there the view follows a filled row
    only with a layout, which can come a frame after the row is painted (each line is a layout)."""
    return AHEAD if _textual_internals.TESTED else 0


def shown_part(text: str, start: int) -> int:
    """How much of streamed `text` may be painted: up to its last whole word, never less than `start`.

    A word painted before it is whole can hop to the next row when its last letters arrive
    and no longer fit; so a streamed word shows once a space (or a newline) follows it, or
    when it ends with punctuation. Whitespace before the held word is held with it, so a
    paragraph break shows with the paragraph's first word.
    """
    if text.endswith(WORD_END):
        return len(text)
    cut = max(text.rfind(" ", start), text.rfind("\n", start), text.rfind("\t", start))
    while cut > start and text[cut - 1].isspace():
        cut -= 1
    return max(start, cut)


def plain(text: str) -> Content:
    """Untrusted text as inert content: no markup, no `@click` actions, no escape sequences.

    `Content(...)` never parses markup, and `safe_text` strips control characters,
    bidi overrides and zero-width characters before anything reaches the terminal.
    """
    return Content(safe_text(text))


def _renumbered(strips: list[Strip], first_line: int, first_column: int = 0) -> list[Strip]:
    """Strips whose selection offsets (the `offset` meta Textual puts on each segment) start at
    (`first_column`, `first_line`).

    Cheaper than wrapping the text in front of them again: plain prose has one segment per line.
    """
    out = []
    for strip in strips:
        segments = []
        for segment in strip:
            style = segment.style
            offset = style.meta.get("offset") if style is not None else None
            if style is not None and offset is not None:
                x, y = offset
                moved = (x + first_column, y + first_line) if y == 0 else (x, y + first_line)
                style = style + RichStyle.from_meta({"offset": moved})
            segments.append(Segment(segment.text, style, segment.control))
        out.append(Strip(segments, strip.cell_length))
    return out


def _line_start(strip: Strip) -> tuple[int, int] | None:
    """Where a wrapped line starts in its text: (column, source line), from Textual's `offset` meta."""
    for segment in strip:
        style = segment.style
        if style is not None and (offset := style.meta.get("offset")) is not None:
            column, line = offset
            return column, line
    return None


class Paragraph(Static):
    """Plain prose text (no markup) that does not ask for a second layout when resized."""

    virtual_size = no_layout_virtual_size()

    def __init__(self, *, classes: str | None = None) -> None:
        super().__init__("", markup=False, classes=classes)


class Prose(Widget):
    """The narrative of a turn, drawn line by line from wrapped lines it keeps.

    Streaming must cost the same at turn 1,000 as at turn 1 and as little as
    possible per chunk, so this one widget (not a container of paragraphs):

    - keeps the finished paragraphs wrapped once, and re-wraps only the live
      paragraph (once per chunk: the layout never wraps it a second time);
    - repaints only the lines that changed (usually the last one), not the widget;
    - the transcript rises by exactly the rows of text that arrive (a reader follows the text;
      blank rows below it would lift it more). While it streams it is laid out `AHEAD` rows taller
      than its text, and the transcript keeps those rows below the view (`hidden`, see
      `Transcript.container_size`): a new line fills one and the view scrolls by it, with no layout
      until they are used up. Settled, its height is its rows of text;
    - a streamed word is painted once it is whole (`shown_part`), so no half word hops rows;
    - another version of the same prose (`rewrite`) changes nothing on screen while it
      repeats the shown words, and swaps in one step where it differs.

    Its height never shrinks while its turn is being written: the transcript is anchored to
    the bottom, so a shorter prose would move every line above it down. The rows a shorter
    swapped prose leaves stay blank at its foot until `release()`: once the turn settles (the
    view then follows the foot in that one step), or when the transcript shows something
    next, which takes them in the same frame.

    It draws exactly what a `Static` of the same text would (same wrapping and
    style, `Visual.to_strips`), with one blank line between the finished part
    and the live paragraph.
    """

    virtual_size = no_layout_virtual_size()

    DEFAULT_CSS = """
    Prose {
        height: auto;
    }
    """

    def __init__(self, *, reserve: int = 0, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._kept = reserve
        """Rows this prose holds whatever its text: the most it was laid out at, until `release()`."""
        self._kept_width = 0
        """The width `_kept` was measured at: a new width wraps anew and keeps nothing."""
        self._room = 0
        """Rows asked for while the text streams: its rows and `AHEAD` more (0 once it settles)."""
        self.hidden = 0
        """Rows at its foot, as last laid out or filled, that were never shown: the transcript keeps them
        below the view."""
        self.ahead = rows_ahead()
        """Rows to lay out ahead the next time the text outgrows its rows (0 while the row under the prose
        must stay in view: a status in words is painted there)."""
        self._text = ""
        self._frozen_len = 0
        self._frozen_text = ""
        self._live_text = ""
        self._frozen: list[Strip] = []
        """The finished part's lines, with the blank line that separates it from the live paragraph."""
        self._live: list[Strip] = []
        self._frozen_source: tuple[object, str] = (None, "")
        """(width, style) and the sanitised finished part that `_frozen` was wrapped for."""
        self._live_source: tuple[object, str] = (None, "")
        """(width, style, first line) and the sanitised live paragraph that `_live` was wrapped for."""
        self._wrapped_for: tuple[int, object] = (-1, None)
        """(width, style) the lines were wrapped for."""
        self._frozen_stale = False
        self._live_stale = False
        self._pending = False
        self._shown = 0
        """How much of `_text` is painted (a streamed word waits until it is whole: `shown_part`)."""
        self._open = False
        """True while the text is streaming (the last word may still grow)."""
        self._shadow: str | None = None
        """Another version being streamed while it repeats the shown prose word for word (see `rewrite`)."""
        self.swaps = 0
        """How many times the prose shown was replaced by a different one (the frame tests read it)."""
        self.closed = 0
        """How many times the blank rows under a settled, shorter prose were given back (`TurnMessage.close_gap`)."""
        self._tail = 0
        """Cells on the live paragraph's last line, counting chunks not wrapped yet."""
        self._unpainted_row = -1
        """The row a fitting chunk asked to repaint, until `render_lines` paints it."""
        self.layouts_requested = 0
        """Layouts this widget asked for (the speed tests count them)."""

    @property
    def text(self) -> str:
        """The prose as streamed or swapped in so far (before sanitising)."""
        return self._text

    @property
    def wrapped_lines(self) -> tuple[Strip, ...]:
        """The lines drawn now: the same objects until the prose or the width changes."""
        return (*self._frozen, *self._live)

    @property
    def line_count(self) -> int:
        """Lines of text drawn now (without the streaming reserve)."""
        return len(self._frozen) + len(self._live)

    def append(self, chunk: str) -> None:
        """Add streamed prose at the end.

        A chunk that surely fits on the live paragraph's last line (no new line, no
        layout) is only noted, and that one row marked for repainting (once a frame): the
        paragraph is wrapped once by `render_lines` however many chunks arrived in the frame. Any
        other chunk is wrapped now, and a layout asked for if the height must grow.
        """
        if not chunk:
            return
        if self._shadow is not None:
            self._shadow += chunk
            if self._text.startswith(self._shadow):
                return  # the same words again: nothing changes on screen
            shadow, self._shadow = self._shadow, None
            if shadow.startswith(self._text):
                chunk = shadow[len(self._text) :]  # it goes on past the shown prose (which was cut short)
            else:
                chunk = shadow
                self.set_text("")  # a different version: it streams from the top, in place of the one shown
        self._text += chunk
        self._open = True
        start = self._shown
        self._shown = shown_part(self._text, start)
        if self._shown == start:
            return  # the chunk finishes no word yet
        chunk = self._text[start : self._shown]
        self._pending = True
        width = self.size.width
        if not self.is_mounted:
            return
        if width <= 0:
            self._request_layout()  # not laid out yet: the layout measures it
            return
        if self._live and "\n" not in chunk and "\t" not in chunk:
            tail = self._tail + cell_len(chunk)
            if tail <= width:
                self._tail = tail
                row = self.line_count - 1
                if self._unpainted_row != row:  # a second refresh of a row not painted yet adds nothing
                    self._unpainted_row = row
                    self.refresh(Region(0, row, width, 1))
                return
        self._flush()

    def _take_pending(self) -> None:
        """Split the text streamed so far into the finished part and the live paragraph."""
        self._pending = False
        text = self._text[: self._shown]
        cut = text.rfind(PARAGRAPH_BREAK)
        if cut > self._frozen_len:
            self._frozen_len = cut
            self._frozen_text = text[:cut].strip("\n")
            self._frozen_stale = True
        start = self._frozen_len + len(PARAGRAPH_BREAK) if self._frozen_len else 0
        self._live_text = text[start:]
        self._live_stale = True

    def rewrite(self) -> None:
        """Another version of this prose starts (ctrl+g, or a retry): keep showing the prose while the
        new one repeats it word for word; the first chunk that differs swaps it in (`append`)."""
        self.settle()
        self._shadow = "" if self._text else None

    def set_text(self, text: str) -> None:
        """Show different prose in one step (a correction changed it, or a retry starts afresh)."""
        if self._text and text != self._text:
            self.swaps += 1
        self._shadow = None
        self._open = False
        self._text = text
        self._shown = len(text)
        cut = text.rfind(PARAGRAPH_BREAK)
        self._frozen_len = max(cut, 0)
        self._frozen_text = text[:cut].strip("\n") if cut > 0 else ""
        self._live_text = (text[cut + len(PARAGRAPH_BREAK) :] if cut > 0 else text).strip("\n")
        self._frozen_stale = self._live_stale = True
        self._pending = False
        self._flush(full=True)

    def settle(self) -> None:
        """The stream ended: paint what is pending, the last word too. A new version that repeated
        only the start of the prose shown is shown now (it is shorter)."""
        if self._shadow is not None:
            shadow, self._shadow = self._shadow, None
            if shadow and shadow != self._text:
                self.set_text(shadow)
            return
        self._open = False
        if self._shown < len(self._text):
            self._shown = len(self._text)
            self._pending = True
        if self._pending:
            self._flush()
        elif self._room:
            self._room = 0
            if self.hidden:  # laid out again without the rows below the view: nothing shown moves
                self._request_layout()

    def release(self) -> int:
        """Give back the blank rows below the text; returns how many. Its rows of text stay kept.

        For the moment something new is shown below this prose, which takes the rows in the
        same frame (`TurnMessage(reserve=...)`), so nothing above moves; or for the step that
        shows the settled prose of its turn (`TurnMessage.close_gap`).
        """
        same_width = self._kept_width == self.size.width
        spare = max(0, self._kept - self.line_count) if same_width else 0
        self._kept = self.line_count if same_width else 0
        if spare:
            self._request_layout()
        return spare

    def on_mount(self) -> None:
        if self._pending:
            self._flush()

    def _request_layout(self) -> None:
        """Ask for a layout that surely measures this widget again (see `request_layout`), and count it."""
        self.layouts_requested += 1
        request_layout(self)

    def _flush(self, full: bool = False) -> None:
        """Wrap what changed and repaint only the lines that differ (a layout only if the height must grow)."""
        if self._pending:
            self._take_pending()
        width = self.size.width
        if width <= 0 or self._wrapped_for != (width, self.visual_style):
            self._request_layout()  # not laid out yet, or restyled: wrapped when measured
            return
        old = self._frozen + self._live
        self._rewrap(width)
        new = self._frozen + self._live
        if self._height(width) != self.size.height:
            self._request_layout()
            return
        if full:
            self.refresh()
        else:
            first = next(
                (y for y, (a, b) in enumerate(zip(old, new, strict=False)) if a is not b and a.text != b.text),
                min(len(old), len(new)),
            )
            last = max(len(old), len(new))
            if last > first:
                self.refresh(Region(0, first, width, last - first))
        hidden = max(0, self.size.height - self._kept)
        if hidden != self.hidden:  # text took rows laid out below the view: the view scrolls to them
            self.hidden = hidden
            scroll_to_new_rows(self)

    def _rewrap(self, width: int) -> None:
        if self._frozen_stale:
            self._frozen = self._wrap_frozen(width)
            self._frozen_stale = False
        if self._live_stale:
            # numbered as the lines of the whole prose, so a mouse selection maps to the right text
            first_line = self._frozen_text.count("\n") + 2 if self._frozen else 0
            source = safe_text(self._live_text)
            self._live = self._wrap_live(source, width, first_line)
            self._live_source = ((width, self.visual_style, first_line), source)
            self._live_stale = False
            self._tail = self._live[-1].cell_length if self._live else 0

    def _wrap_frozen(self, width: int) -> list[Strip]:
        """The finished part's lines, and the blank line below them.

        The paragraphs finished before keep their lines, and one that has just finished
        keeps the lines it streamed in (`_wrap_grown`), so a paragraph break wraps at
        most the live paragraph's last line, not the whole story so far.
        """
        source = safe_text(self._frozen_text)
        key = (width, self.visual_style)
        (old_key, old), (live_key, live) = self._frozen_source, self._live_source
        self._frozen_source = (key, source)
        head = old + PARAGRAPH_BREAK if old else ""
        if old_key == key and (self._frozen or not old) and source.startswith(head) and source[len(head) :].strip():
            first_line = head.count("\n")
            streamed = live_key == (*key, first_line)
            lines = self._wrap_grown(
                self._live if streamed else [], live if streamed else "", source[len(head) :], width, first_line
            )
            return [*self._frozen, *lines, self._paragraph_break()]
        lines = self._wrap(self._frozen_text, width)
        return [*lines, self._paragraph_break()] if lines else lines

    def _wrap_live(self, source: str, width: int, first_line: int) -> list[Strip]:
        """The live paragraph's lines (its lines so far kept, when it just grew)."""
        wrapped_for, old = self._live_source
        streamed = wrapped_for == (width, self.visual_style, first_line)
        return self._wrap_grown(self._live if streamed else [], old if streamed else "", source, width, first_line)

    def _wrap_grown(self, lines: list[Strip], old: str, source: str, width: int, first_line: int) -> list[Strip]:
        """The lines of `source`, given the `lines` wrapped for `old`: only the last one wrapped again if it grew.

        Greedy word wrapping never moves an earlier break when text is added at the end
        (the first word of the last line only grows, so it still does not fit above), so
        the lines above are kept: a chunk costs the same late in a long paragraph as early.
        Most chunks still fit on the last line, which then only gets longer.
        Anything else (a last line that starts inside a word folded across lines, a new
        source line, a tab, a selection, text that did not just grow) wraps it all again.
        """
        if lines and self.text_selection is None and source.startswith(old) and "\t" not in source:
            start = _line_start(lines[-1])
            if start is not None:
                column, line = start
                at = old.rfind("\n") + 1 + column
                grown = source[at:]
                word_start = old[at : at + 1].strip() and (at == 0 or old[at - 1].isspace())
                if word_start and line - first_line == old.count("\n") and "\n" not in grown:
                    last = lines[-1]
                    if len(last) == 1 and (cells := cell_len(grown)) <= width and last.text == old[at:]:
                        # it still fits on one line: the same segment, longer (what wrapping it would give)
                        (segment,) = last
                        return [*lines[:-1], Strip([Segment(grown, segment.style)], cells)]
                    strips = Visual.to_strips(self, Content(grown), width, None, self.visual_style)
                    return lines[:-1] + _renumbered(strips, line, column)
        return self._wrap(source, width, first_line)

    def _wrap(self, text: str, width: int, first_line: int = 0) -> list[Strip]:
        """Wrapped lines of `text`, its source lines numbered from `first_line` (selection offsets)."""
        if not text.strip():
            return []
        strips = Visual.to_strips(self, plain(text), width, None, self.visual_style)
        return _renumbered(strips, first_line) if first_line else strips

    def _paragraph_break(self) -> Strip:
        """The empty line between the finished part and the live paragraph.

        Drawn as wrapping the whole text draws it (an empty line that knows its source
        line), so the same prose paints the same cells however its chunks arrived.
        """
        line = safe_text(self._frozen_text).count("\n") + 1
        return Strip([Segment("", self.visual_style.rich_style + RichStyle.from_meta({"offset": (0, line)}))], 0)

    def _blank(self, width: int) -> Strip:
        return Strip.blank(width, self.visual_style.rich_style)

    def _ensure_wrapped(self, width: int) -> None:
        """Wrap everything again for a new width or style (a resize, a theme or an outcome class)."""
        key = (width, self.visual_style)
        if self._wrapped_for != key:
            self._wrapped_for = key
            self._frozen_stale = self._live_stale = True
        if self._frozen_stale or self._live_stale:
            self._rewrap(width)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if width <= 0:
            return 0
        if self._pending:
            self._take_pending()
        self._ensure_wrapped(width)
        height = self._height(width)
        self.hidden = height - self._kept
        return height

    def _height(self, width: int) -> int:
        """Lines of text, never less than it was before at this width, until `release()`; while it
        streams, `AHEAD` more rows each time the text outgrows the rows it has."""
        height = self.line_count
        if self._kept_width != width:
            if self._kept_width:  # a resize: wrap anew, keep nothing of the old width
                self._kept = self._room = 0
            self._kept_width = width
        if not self._open:
            self._room = 0
        elif height > max(self._kept, self._room):  # the text outgrew the rows it has
            self._room = height + self.ahead
        self._kept = max(self._kept, height)
        return max(self._kept, self._room)

    def render_lines(self, crop: Region) -> list[Strip]:
        self._unpainted_row = -1
        width = self.size.width
        self._ensure_wrapped(width)
        if self._pending and width > 0:
            self._take_pending()  # chunks that fit on the last line (see `append`)
            self._rewrap(width)
            if self._height(width) != self.size.height:  # not expected: lay out after this frame
                self.call_later(self._request_layout)
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        frozen = self._frozen
        if y < len(frozen):
            return frozen[y]
        y -= len(frozen)
        if 0 <= y < len(self._live):
            return self._live[y]
        return self._blank(self.size.width)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        text = safe_text(self._live_text)
        if self._frozen:
            text = safe_text(self._frozen_text) + PARAGRAPH_BREAK + text
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self._wrapped_for = (-1, None)  # the selection is drawn into the wrapped lines
        self.refresh()
