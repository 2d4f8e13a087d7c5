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
    """Story title, room, inventory, stats and flags of the committed state only: those the story
    marks visible (`StoryPack.visible`: room, carried items and stats unless it says otherwise).

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
        visible = set(pack.visible)
        if "room" in visible:
            room = pack.rooms.get(state.get("location", ""))
            lines.append(Content.styled("Where", "bold $text-accent"))
            lines.append(Content(safe_text(room.name if room else str(state.get("location", "?")))))
            lines.append(Content(""))
        if "items" in visible:
            carried = [
                pack.items[i].name for i, at in state.get("items", {}).items() if at == PLAYER and i in pack.items
            ]
            lines.append(Content.styled("Carrying", "bold $text-accent"))
            lines += [Content(f"• {safe_text(name)}") for name in carried] or [Content.styled("nothing", "dim")]
        stats, flags = world_lines(pack, state, shown=True)
        for heading, found in (("Stats", stats), ("Flags", flags)):
            if found:
                lines += [Content(""), Content.styled(heading, "bold $text-accent"), *map(Content, found)]
        return Content("\n").join(lines)


def world_lines(pack: StoryPack, state: dict[str, Any], *, shown: bool) -> tuple[list[str], list[str]]:
    """The stats and flags the story marks visible (`shown`), or the rest of them, one line each.

    The side panel shows the first; the rest, which could give the plot away, only the details screen.
    """
    visible = set(pack.visible)
    stats = [
        f"{safe_text(stat.label or _words(stat_id))} {state.get('stats', {}).get(stat_id, stat.initial)}/{stat.max}"
        for stat_id, stat in pack.stats.items()
        if ("stats" in visible or stat_id in visible) == shown
    ]
    flags = [
        f"{_words(flag_id)}: {'yes' if state.get('flags', {}).get(flag_id, False) else 'no'}"
        for flag_id in pack.flags
        if ("flags" in visible or flag_id in visible) == shown
    ]
    return stats, flags
