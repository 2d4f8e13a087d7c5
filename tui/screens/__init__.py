"""The screens of storyloom's terminal UI."""

from tui.screens._game import GameScreen
from tui.screens._issue_details import IssueDetailsScreen, attempts_of, diff_lines
from tui.screens._open_save import OpenSaveScreen

__all__ = ["GameScreen", "IssueDetailsScreen", "OpenSaveScreen", "attempts_of", "diff_lines"]
