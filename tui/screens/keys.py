"""The game's keys, as the palette's "Keys" shows them (not the input line's editing keys)."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

TAKEN_BY_BROWSERS = frozenset({"ctrl+q", "ctrl+t"})
"""The game's keys a browser keeps for itself (ctrl+t opens a tab in every browser; Firefox quits on
ctrl+q). Served to a browser, each has a twin whose action ends in `_in_browser` (f10, f2)."""


def for_here(bindings: Iterable[Binding], *, browser: bool) -> list[Binding]:
    """The bindings whose keys reach the game: in a browser, the twins instead of the keys it keeps."""
    if browser:
        return [b for b in bindings if b.key not in TAKEN_BY_BROWSERS]
    return [b for b in bindings if not b.action.endswith("_in_browser")]


def key_lines(groups: Iterable[tuple[str, Iterable[BindingType]]], *, browser: bool = False) -> list[tuple[str, str]]:
    """(heading, "") then (keys, what they do) for each group of bindings that has a description.

    Read from the bindings themselves, so the list cannot drift from what the keys do; `browser`:
    served to a browser tab, which keys there are (`for_here`)."""
    lines: list[tuple[str, str]] = []
    for heading, declared in groups:
        bindings = for_here([b if isinstance(b, Binding) else Binding(*b) for b in declared], browser=browser)
        found = [
            (", ".join(_key(k) for k in b.key.split(",")), b.description) for b in bindings if b.description.strip()
        ]
        if found:
            lines += [(heading, ""), *found]
    return lines


_NAMES = {
    "left": "←",
    "right": "→",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "pageup": "page up",
    "pagedown": "page down",
}


def _key(key: str) -> str:
    return _NAMES.get(key.strip(), key.strip())


class KeysScreen(ModalScreen[None]):
    """A modal listing the keys of the game, grouped by where they act."""

    DEFAULT_CSS = """
    KeysScreen {
        align: center middle;
        & > Vertical {
            width: auto;
            max-width: 90%;
            height: auto;
            max-height: 90%;
            border: round $accent;
            border-title-align: left;
            border-subtitle-align: right;
            background: $surface;
            padding: 0 1;
        }
        & VerticalScroll { height: auto; width: auto; }
        & Static { width: auto; }
    }
    """

    BINDINGS = [Binding("escape,q", "dismiss", "Close")]

    def __init__(self, lines: list[tuple[str, str]]) -> None:
        super().__init__()
        self._lines = lines

    def compose(self) -> ComposeResult:
        box = Vertical()
        box.border_title = "Keys"
        box.border_subtitle = "esc close"
        width = max((len(keys) for keys, what in self._lines if what), default=0)
        text = [
            Content.styled(keys, "bold $text-accent") if not what else Content(f"{keys.rjust(width)}  {what}")
            for keys, what in self._lines
        ]
        with box, VerticalScroll():
            yield Static(Content("\n").join(text), markup=False)
