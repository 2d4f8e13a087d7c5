"""Story text that is not a turn: the intro shown first, and an ending."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from storyloom.tui.widgets.prose import plain


class StoryText(Vertical):
    """A titled block of story prose (the pack's intro, or the ending reached)."""

    DEFAULT_CSS = """
    StoryText {
        height: auto;
        padding: 0 1 1 1;
        border-left: tall $background;
        & > .-title { text-style: bold; color: $text-accent; }
        & > Static { height: auto; }
    }
    """

    def __init__(self, title: str, text: str, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._title = title
        self._text = text

    def compose(self) -> ComposeResult:
        yield Static(plain(self._title), markup=False, classes="-title")
        yield Static(plain(self._text), markup=False, classes="-text")
