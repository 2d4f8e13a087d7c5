"""Asked before another version of an earlier turn: it continues the story from that turn on a new branch."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static


class NewBranchScreen(ModalScreen[bool]):
    """Another version of a turn the next command fixed takes the story back to that turn: the turns
    after it belonged to the version shown. Nothing is lost (they stay on the branch being played),
    but the transcript then shows another path, so an arrow key or ctrl+g pressed on an old turn
    asks first. Enter continues on a new branch, Esc goes back.

    Args:
        turn: the turn that gets another version.
        version: the version chosen (a browse), or 0 for a new one written by the narrator.
        later: the numbers of the standing turns after it.
        branch: the branch being played.
    """

    DEFAULT_CSS = """
    NewBranchScreen {
        align: center middle;
        & > Vertical {
            width: 80%;
            max-width: 72;
            height: auto;
            border: round $accent;
            border-title-align: left;
            border-subtitle-align: right;
            background: $surface;
            padding: 0 1;
        }
        & Static { height: auto; }
    }
    """

    BINDINGS = [
        Binding("enter", "dismiss(True)", "Continue on a new branch"),
        Binding("escape", "dismiss(False)", "Back"),
    ]

    def __init__(self, turn: int, version: int, later: list[int], branch: int) -> None:
        super().__init__()
        self._turn, self._version, self._later, self._branch = turn, version, later, branch

    def compose(self) -> ComposeResult:
        box = Vertical()
        wanted = f"Version {self._version}" if self._version else "Another version"
        box.border_title = f"{wanted} of turn {self._turn}"
        box.border_subtitle = "enter continue on a new branch · esc back"
        with box:
            yield Static(Content(self.question()))

    def question(self) -> str:
        """What happens, in the player's words."""
        later = self._later
        if not later:
            after = "The next command was played after this version"
        elif len(later) == 1:
            after = f"Turn {later[0]} was played after this version"
        else:
            joined = "and" if len(later) == 2 else "to"
            after = f"Turns {later[0]} {joined} {later[-1]} were played after this version"
        wanted = f"show version {self._version}" if self._version else "write another one"
        tree = "f2" if self.app.is_web else "ctrl+t"  # a browser keeps ctrl+t (a new tab)
        return (
            f"{after}. To {wanted}, the story goes on from turn {self._turn} on a new branch. "
            f"Branch {self._branch} stays whole, as it is now: {tree} shows every branch."
        )
