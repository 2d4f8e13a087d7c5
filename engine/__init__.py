"""storyloom's engine: story packs, world state, turns, rules and the turn lifecycle.

The engine never imports Textual; every consumer reads the same events.

The names below load on first use (PEP 562): importing a light module such as
`engine.safety` must not build every pydantic model, so the game can paint its
first frame before the engine is loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.lazy import lazy_names

_EXPORTS = {
    "Event": "engine.events", "event_from_json": "engine.events",
    "DEFAULT_BUDGET": "engine.limits", "Session": "engine.lifecycle",
    "PackError": "engine.packs", "StoryPack": "engine.packs", "builtin_pack_ids": "engine.builtin",
    "load_pack": "engine.packs", "parse_pack": "engine.packs",
    "RULES": "engine.rules", "Verdict": "engine.rules", "judge": "engine.rules",
    "WorldState": "engine.state", "initial_state": "engine.state", "state_hash": "engine.state",
    "Issue": "engine.turns", "Turn": "engine.turns",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from engine.events import Event, event_from_json
    from engine.builtin import builtin_pack_ids
    from engine.lifecycle import Session
    from engine.limits import DEFAULT_BUDGET
    from engine.packs import PackError, StoryPack, load_pack, parse_pack
    from engine.rules import RULES, Verdict, judge
    from engine.state import WorldState, initial_state, state_hash
    from engine.turns import Issue, Turn

__getattr__ = lazy_names(__name__, _EXPORTS)
