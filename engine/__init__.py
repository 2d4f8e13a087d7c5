"""storyloom's engine: story packs, world state, turns, rules and the turn lifecycle.

The engine never imports Textual; every consumer reads the same events.
"""

from engine.events import Event, event_from_json
from engine.lifecycle import DEFAULT_BUDGET, Session
from engine.packs import PackError, StoryPack, builtin_pack_ids, load_pack, parse_pack
from engine.rules import RULES, Verdict, judge
from engine.state import WorldState, initial_state, state_hash
from engine.turns import Issue, Turn

__all__ = [
    "DEFAULT_BUDGET", "RULES", "Event", "Issue", "PackError", "Session", "StoryPack", "Turn", "Verdict",
    "WorldState", "builtin_pack_ids", "event_from_json", "initial_state", "judge", "load_pack", "parse_pack",
    "state_hash",
]
