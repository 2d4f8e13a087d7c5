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
        self._text = text.strip("\n")
        """The prose without the blank lines around it: the block's bottom padding is the one blank row under it."""

    def compose(self) -> ComposeResult:
        yield Static(plain(self._title), markup=False, classes="-title")
        yield Static(plain(self._text), markup=False, classes="-text")


class EndingText(StoryText):
    """The ending the story reached: its title and prose, and a line saying in words what now.

    The line says the story is over and what the player can do (the screen chooses the words:
    the game offers undo and the palette, a replay only says it ended). An undo of the turn
    that reached the ending keeps the block where it is and says so on that line; the block never
    gets shorter, so nothing above it moves down.
    """

    DEFAULT_CSS = """
    EndingText {
        & > .-note { color: $text-muted; margin-top: 1; }
        &.-apart { padding: 1 1 1 1; }
        &.-undone > Static { color: $text-muted; }
    }
    """

    def __init__(self, title: str, text: str, note: str) -> None:
        super().__init__(f"The end: {title}", text, classes="-ending")
        self._what_now = note.partition(". ")[2]
        """What the note says the player can do, after its first sentence (it still holds after an undo)."""
        self.note = Static(plain(note), markup=False, classes="-note")
        self.undone = False

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield self.note

    def mark_undone(self) -> None:
        """The turn that reached this ending was undone: the story goes on from the turn before."""
        self.undone = True
        self.styles.min_height = self.outer_size.height  # a shorter note never pulls the story down
        self.add_class("-undone")
        # the note keeps what the player can do, so it stays as long: no blank rows are left under it
        self.note.update(plain(f"undone · the story goes on from the turn before. {self._what_now}".strip()))


class EarlierTurns(Static):
    """Above a resumed long story's turns: how many came before the ones shown, and where to read them.

    A resumed story shows the turns the model still remembers (see `HISTORY_TURNS`), not every turn
    of a save of any size: the screen holds what it shows, and the save holds the rest.
    """

    DEFAULT_CSS = """
    EarlierTurns {
        height: auto;
        padding: 0 1 1 1;
        border-left: tall $background;
        color: $text-muted;
    }
    """

    def __init__(self, count: int) -> None:
        turns = f"{count:,} earlier turn{'' if count == 1 else 's'}"
        super().__init__(
            plain(f"… {turns} of this story are kept in its save: `storyloom export` writes the whole story."),
            markup=False,
        )
