"""The footer at a narrow width: the keys it shows give way in order, as `storyloom saves` drops columns.

At 80 columns a focused turn with versions and corrections, a failed turn and a second branch asked
for `← → Versions  ^r Retry  ^d Details  ^z Undo  ^g Another version  ^t Story tree  ^q Quit` and
the palette key: Textual's footer cut the last two off mid-word. The keys a turn offers for itself
stay; the ones that work anywhere give way first, each still bound and listed in the palette's Keys.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.cells import cell_len
from textual.app import App
from textual.binding import ActiveBinding

GIVE_WAY = ("story_tree", "regenerate", "undo", "quit")
"""The actions whose keys leave the footer first when it is too narrow, in that order."""

KEY_PADDING = 3
"""Cells a footer key takes beside its key and its words: a space before and after the key, one after
the words (the palette key, docked right: its border, a space between, one at the edge)."""


def fit_footer(bindings: dict[str, ActiveBinding], width: int, app: App[Any]) -> dict[str, ActiveBinding]:
    """`bindings` with the keys that would not fit a footer `width` cells wide no longer shown there."""

    def cells(active: ActiveBinding) -> int:
        binding = active.binding
        return cell_len(app.get_key_display(binding)) + cell_len(binding.description) + KEY_PADDING

    if width <= 0:  # not laid out yet: nothing to fit
        return bindings
    shown = {key: active for key, active in bindings.items() if active.binding.show}
    need = sum(cells(active) for active in _one_per_action(shown).values())
    palette = bindings.get(app.COMMAND_PALETTE_BINDING)  # shown on its own, at the right
    need += 0 if palette is None or palette.binding.show else cells(palette)
    fitted = dict(bindings)
    for action in GIVE_WAY:
        if need <= width:
            break
        for active in _one_per_action(shown).values():
            if active.binding.action == action:
                need -= cells(active)
                for twin, same in shown.items():
                    if same.binding.action == action:
                        fitted[twin] = active._replace(binding=replace(same.binding, show=False))
    return fitted


def _one_per_action(shown: dict[str, ActiveBinding]) -> dict[str, ActiveBinding]:
    """The footer shows an action once, whatever number of keys it has."""
    first: dict[str, tuple[str, ActiveBinding]] = {}
    for key, active in shown.items():
        first.setdefault(active.binding.action, (key, active))
    return dict(first.values())
