"""The side panel: where the player is and what they carry, as committed."""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.widgets import Static

from storyloom.engine.packs import PLAYER, StoryPack
from storyloom.engine.safety import safe_text


def _words(identifier: str) -> str:
    return safe_text(identifier.replace("_", " ").replace("-", " "))


class SidePanel(Static):
    """Story title, room, inventory, stats and flags of the committed state only.

    A turn in flight, being corrected or failed never shows here: the panel is
    updated from `turn_committed` and `turn_undone` events (and the starting state).
    """

    DEFAULT_CSS = """
    SidePanel {
        width: 28;
        height: 1fr;
        padding: 0 1;
        border-left: vkey $foreground 20%;
        overflow-y: auto;
    }
    """

    def __init__(self, pack: StoryPack, state: dict[str, Any], *, id: str | None = None) -> None:
        super().__init__("", markup=False, id=id)
        self._pack = pack
        self.state = state
        """The committed state shown."""
        self.show_state(state)

    def show_story(self, pack: StoryPack, state: dict[str, Any]) -> None:
        """Show another story (a save of a different story was opened)."""
        self._pack = pack
        self.show_state(state)

    def show_state(self, state: dict[str, Any]) -> None:
        """Show a newly committed state."""
        self.state = state
        self.update(self._render_state(state))

    def _render_state(self, state: dict[str, Any]) -> Content:
        pack = self._pack
        lines: list[Content] = [Content.styled(safe_text(pack.title), "bold"), Content("")]
        room = pack.rooms.get(state.get("location", ""))
        lines.append(Content.styled("Where", "bold $text-accent"))
        lines.append(Content(safe_text(room.name if room else str(state.get("location", "?")))))
        lines.append(Content(""))
        carried = [pack.items[i].name for i, at in state.get("items", {}).items() if at == PLAYER and i in pack.items]
        lines.append(Content.styled("Carrying", "bold $text-accent"))
        lines += [Content(f"• {safe_text(name)}") for name in carried] or [Content.styled("nothing", "dim")]
        if pack.stats:
            lines.append(Content(""))
            lines.append(Content.styled("Stats", "bold $text-accent"))
            for stat_id, stat in pack.stats.items():
                value = state.get("stats", {}).get(stat_id, stat.initial)
                label = safe_text(stat.label or _words(stat_id))
                lines.append(Content(f"{label} {value}/{stat.max}"))
        if pack.flags:
            lines.append(Content(""))
            lines.append(Content.styled("Flags", "bold $text-accent"))
            for flag_id in pack.flags:
                value = state.get("flags", {}).get(flag_id, False)
                lines.append(Content(f"{_words(flag_id)}: {'yes' if value else 'no'}"))
        return Content("\n").join(lines)
