"""storyloom's engine: story packs, world state, turns, rules and the turn lifecycle.

The engine never imports Textual; every consumer reads the same events.

The names below load on first use (PEP 562): importing a light module such as
`storyloom.engine.safety` must not build every pydantic model, so the game can paint its
first frame before the engine is loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from storyloom.engine.lazy import lazy_names

_EXPORTS = {
    "Event": "storyloom.engine.events",
    "event_from_json": "storyloom.engine.events",
    "DEFAULT_BUDGET": "storyloom.engine.limits",
    "Session": "storyloom.engine.lifecycle",
    "PackError": "storyloom.engine.packs",
    "StoryPack": "storyloom.engine.packs",
    "builtin_pack_ids": "storyloom.engine.builtin",
    "load_pack": "storyloom.engine.packs",
    "parse_pack": "storyloom.engine.packs",
    "RULES": "storyloom.engine.rules",
    "Verdict": "storyloom.engine.rules",
    "judge": "storyloom.engine.rules",
    "WorldState": "storyloom.engine.state",
    "initial_state": "storyloom.engine.state",
    "state_hash": "storyloom.engine.state",
    "Issue": "storyloom.engine.turns",
    "Turn": "storyloom.engine.turns",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from storyloom.engine.builtin import builtin_pack_ids
    from storyloom.engine.events import Event, event_from_json
    from storyloom.engine.lifecycle import Session
    from storyloom.engine.limits import DEFAULT_BUDGET
    from storyloom.engine.packs import PackError, StoryPack, load_pack, parse_pack
    from storyloom.engine.rules import RULES, Verdict, judge
    from storyloom.engine.state import WorldState, initial_state, state_hash
    from storyloom.engine.turns import Issue, Turn

__getattr__ = lazy_names(__name__, _EXPORTS)
