"""Choosing a saved story to continue, from the command palette."""

from __future__ import annotations

import time
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from storyloom.engine.safety import safe_text
from storyloom.saves.errors import SaveError
from storyloom.saves.reader import summarize_save


class OpenSaveScreen(ModalScreen[Path | None]):
    """A list of save files, newest first; Enter continues the chosen one, Esc goes back.

    Args:
        saves: the save files to offer.
    """

    DEFAULT_CSS = """
    OpenSaveScreen {
        align: center middle;
        & > Vertical {
            width: 80%;
            max-width: 90;
            height: auto;
            max-height: 80%;
            border: round $accent;
            background: $surface;
            padding: 0 1;
        }
        & OptionList { height: auto; max-height: 20; }
        & Static { height: auto; }
    }
    """

    BINDINGS = [Binding("escape", "dismiss(None)", "Back")]

    def __init__(self, saves: list[Path]) -> None:
        super().__init__()
        self._saves = list(saves)

    def compose(self) -> ComposeResult:
        box = Vertical()
        box.border_title = "Open save"
        box.border_subtitle = "enter continue · esc back"
        with box:
            if not self._saves:
                yield Static(Content("There are no saves yet: every story you play is saved as you go."), markup=False)
                return
            yield OptionList(*[Option(self._label(path), id=str(index)) for index, path in enumerate(self._saves)])

    @staticmethod
    def _label(path: Path) -> Content:
        try:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))
        except OSError:
            when = "?"
        return Content.assemble((safe_text(path.name), "bold"), ("  " + when + _branches(path), "dim"))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self._saves[int(event.option.id or 0)])


def _branches(path: Path) -> str:
    """How many branches a save's story has, when more than one (read from its last records only)."""
    try:
        tally = summarize_save(path).tally
    except SaveError:
        return ""
    return f"  · {tally.branches} branches" if tally is not None and tally.branches > 1 else ""
