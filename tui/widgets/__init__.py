"""The widgets of storyloom's terminal UI (one per module)."""

from tui.widgets._archived_turns import ArchivedTurns, TurnRecord
from tui.widgets._command_input import CommandInput
from tui.widgets._prose import Prose, plain
from tui.widgets._side_panel import SidePanel
from tui.widgets._status_row import StatusRow
from tui.widgets._story_text import StoryText
from tui.widgets._transcript import FollowHint, Transcript
from tui.widgets._turn_message import TurnMessage

__all__ = ["ArchivedTurns", "CommandInput", "FollowHint", "Prose", "SidePanel", "StatusRow", "StoryText", "Transcript",
           "TurnMessage", "TurnRecord", "plain"]
