"""The first frame: the story's intro, painted before the engine has loaded."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Header, Static

from storyloom.engine.safety import safe_text
from storyloom.tui.widgets.archived_turns import ArchivedTurns, TurnRecord
from storyloom.tui.widgets.command_input import CommandInput
from storyloom.tui.widgets.story_text import StoryText
from storyloom.tui.widgets.transcript import Transcript


def game_layout(
    title: str, intro: str, side_panel: Widget, bottom_line: Widget, transcript: Transcript
) -> ComposeResult:
    """The game's layout: header, transcript opening with the intro, the line below it, side panel, footer.

    The opening, game and replay screens all compose it, so when the game takes the
    opening's place nothing the player is reading moves, and a replay looks like the game.
    """
    yield Header(icon="≡")
    with Horizontal(id="body"):
        with Vertical(id="main"):
            with transcript:
                yield StoryText(title, intro, id="intro")
            yield bottom_line
        yield side_panel
    yield Footer()


class OpeningScreen(Screen[None]):
    """What the game screen will show first, drawn from the story's title and intro alone.

    Loading the engine (its pydantic models), the narrator and the save takes longer
    than a player should wait for a first frame, so `storyloom` paints this at once
    and loads them in a worker (`StoryloomApp`); the game screen then takes its
    place, laid out the same, with the side panel filled in. What the player typed
    meanwhile is carried over.
    """

    DEFAULT_CSS = """
    OpeningScreen #side-panel {
        width: 28;
        height: 1fr;
        padding: 0 1;
        border-left: vkey $foreground 20%;
    }
    """
    """The side panel's box (as `SidePanel` draws it), empty until the story is loaded."""

    def __init__(self, title: str, intro: str, *, newest: Sequence[tuple[str, str]] = (), blink: bool = True) -> None:
        super().__init__()
        self._title = title
        self._intro = intro
        self._newest = newest
        self._blink = blink

    def compose(self) -> ComposeResult:
        yield from game_layout(
            self._title,
            self._intro,
            Static("", id="side-panel"),
            CommandInput(blink=self._blink, id="command"),
            Transcript(id="transcript"),
        )

    def on_mount(self) -> None:
        if self._newest:  # a resumed save: its newest turns, folded as the game screen folds the history
            count = len(self._newest)
            records = [
                TurnRecord(i - count, command, prose, "committed", "")
                for i, (command, prose) in enumerate(self._newest)
            ]
            self.query_one(Transcript).mount(ArchivedTurns(records))
        self.title = safe_text(self._title)
        self.sub_title = "loading…"
        self.query_one(CommandInput).focus()

    @property
    def typed(self) -> str:
        """What the player has typed so far (the game screen's input takes it over)."""
        return self.query_one(CommandInput).value
