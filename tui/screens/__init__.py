"""The screens of storyloom's terminal UI.

Loaded on first use (PEP 562), like `engine`: the opening screen paints before the
game screen (and the engine it needs) is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "GameScreen": "_game", "IssueDetailsScreen": "_issue_details", "attempts_of": "_issue_details",
    "diff_lines": "_issue_details", "OpenSaveScreen": "_open_save", "OpeningScreen": "_opening",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from tui.screens._game import GameScreen
    from tui.screens._issue_details import IssueDetailsScreen, attempts_of, diff_lines
    from tui.screens._open_save import OpenSaveScreen
    from tui.screens._opening import OpeningScreen


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tui.screens' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tui.screens.{module}"), name)
    globals()[name] = value
    return value
