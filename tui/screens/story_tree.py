"""The story tree: every branch of the story, where it forks, how far it goes, which one is played."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from storyloom.engine.ledger import BranchView
from storyloom.engine.lifecycle import StoryEnding
from storyloom.engine.safety import safe_text


class StoryTreeScreen(ModalScreen[int | None]):
    """Every branch, one line each; Enter plays the chosen one (the one being played just closes),
    Esc goes back. Nothing is deleted here: a branch left stays in the save as it stands.

    Args:
        branches: the story's branches (`StoryLedger.branches`).
        endings: the ending each branch stands at, by number.
    """

    DEFAULT_CSS = """
    StoryTreeScreen {
        align: center middle;
        & > Vertical {
            width: 80%;
            max-width: 100;
            height: auto;
            max-height: 80%;
            border: round $accent;
            background: $surface;
            padding: 0 1;
        }
        & OptionList { height: auto; max-height: 20; }
        & Static { height: auto; color: $text-muted; }
    }
    """

    BINDINGS = [Binding("escape", "dismiss(None)", "Back")]

    def __init__(self, branches: list[BranchView], endings: dict[int, StoryEnding]) -> None:
        super().__init__()
        self._branches = branches
        self._endings = endings

    def compose(self) -> ComposeResult:
        box = Vertical()
        box.border_title = "Story tree"
        box.border_subtitle = "enter play this branch · esc back"
        current = next((b for b in self._branches if b.current), None)
        with box:
            yield OptionList(
                *[Option(self._label(branch), id=str(branch.number)) for branch in self._branches],
            )
            yield Static(
                Content(
                    "Each branch keeps its own world, versions, undo and ending; "
                    f"branch {current.number if current else 1} is being played."
                )
            )

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = next((i for i, b in enumerate(self._branches) if b.current), 0)

    def _label(self, branch: BranchView) -> Content:
        if branch.parent:
            command = f" (> {safe_text(' '.join(branch.command.split()))})" if branch.command else ""
            fork = f"from turn {branch.fork} of branch {branch.parent}{command}"
        else:
            fork = "the story as first played"
        ending = self._endings.get(branch.number)
        turns = f"{branch.standing} turn{'' if branch.standing == 1 else 's'}"
        return Content.assemble(
            (f"Branch {branch.number}", "bold"),
            f"  {fork} · {turns}",
            (f" · ended: {safe_text(ending.title)}" if ending is not None else "", "italic"),
            (" · being played" if branch.current else "", "bold $text-accent"),
        )

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(int(event.option.id or 0))
