"""The screens of storyloom's terminal UI.

Loaded on first use (PEP 562), like `engine`: the opening screen paints before the
game screen (and the engine it needs) is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from storyloom.engine.lazy import lazy_names

_EXPORTS = {
    "GameScreen": "_game",
    "IssueDetailsScreen": "_issue_details",
    "attempts_of": "_issue_details",
    "diff_lines": "_issue_details",
    "OpenSaveScreen": "_open_save",
    "OpeningScreen": "_opening",
    "StoryScreen": "_story",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from storyloom.tui.screens._game import GameScreen
    from storyloom.tui.screens._issue_details import IssueDetailsScreen, attempts_of, diff_lines
    from storyloom.tui.screens._open_save import OpenSaveScreen
    from storyloom.tui.screens._opening import OpeningScreen
    from storyloom.tui.screens._story import StoryScreen

__getattr__ = lazy_names(__name__, {name: f"storyloom.tui.screens.{module}" for name, module in _EXPORTS.items()})
