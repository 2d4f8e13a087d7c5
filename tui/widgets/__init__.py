"""The widgets of storyloom's terminal UI (one per module).

Loaded on first use (PEP 562), like `engine`: the opening screen imports a few
light widgets without loading the ones that need the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from storyloom.engine.lazy import lazy_names

_EXPORTS = {
    "ArchivedTurns": "_archived_turns",
    "TurnRecord": "_archived_turns",
    "CommandInput": "_command_input",
    "Prose": "_prose",
    "plain": "_prose",
    "SidePanel": "_side_panel",
    "StatusRow": "_status_row",
    "StoryText": "_story_text",
    "StoryView": "_story_view",
    "FollowHint": "_transcript",
    "Transcript": "_transcript",
    "TurnMessage": "_turn_message",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from storyloom.tui.widgets._archived_turns import ArchivedTurns, TurnRecord
    from storyloom.tui.widgets._command_input import CommandInput
    from storyloom.tui.widgets._prose import Prose, plain
    from storyloom.tui.widgets._side_panel import SidePanel
    from storyloom.tui.widgets._status_row import StatusRow
    from storyloom.tui.widgets._story_text import StoryText
    from storyloom.tui.widgets._story_view import StoryView
    from storyloom.tui.widgets._transcript import FollowHint, Transcript
    from storyloom.tui.widgets._turn_message import TurnMessage

__getattr__ = lazy_names(__name__, {name: f"storyloom.tui.widgets.{module}" for name, module in _EXPORTS.items()})
