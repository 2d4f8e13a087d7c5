"""Figure 7: the time to validate one turn against a large generated world.

storyloom judges a turn with `storyloom.engine.rules.judge`: parse, the pydantic turn
model, the patch applied to a copy, the pack's pydantic state model (built once
per pack and cached) and the world rules. The naive baseline runs the very same
judge but builds the pydantic state model afresh for every turn, as code that
derives its schema from the story on each request would.
"""

from __future__ import annotations

import json
import time
from typing import Any

from benchmarks._common import Figure, Row

ROOMS = 200
ITEMS = 1000


def generated_pack(rooms: int = ROOMS, items: int = ITEMS) -> Any:
    """A pack of `rooms` rooms in a chain (east/west) and `items` items spread over them."""
    from storyloom.engine.packs import StoryPack

    room_table = {}
    for r in range(rooms):
        exits = {}
        if r + 1 < rooms:
            exits["east"] = f"r{r + 1}"
        if r > 0:
            exits["west"] = f"r{r - 1}"
        room_table[f"r{r}"] = {
            "name": f"Hall {r}",
            "description": f"Hall number {r}, much like the others.",
            "exits": exits,
        }
    item_table = {
        f"i{i}": {"name": f"token {i}", "aliases": [f"t{i}"], "at": f"r{i % rooms}", "portable": i % 7 != 0}
        for i in range(items)
    }
    return StoryPack.model_validate(
        {
            "id": "bench-world",
            "title": "Benchmark World",
            "intro": "Many halls.",
            "start": "r0",
            "rooms": room_table,
            "items": item_table,
            "stats": {"health": {"initial": 10, "min": 0, "max": 10}},
            "flags": {"gate_open": False},
        }
    )


def turns(pack: Any) -> list[tuple[dict[str, Any], str, bool]]:
    """A walk of (state before, raw turn, expected ok): look, move, take, drop, and one refused take."""
    from storyloom.engine.state import initial_state

    rooms = len(pack.rooms)
    state = initial_state(pack)
    walk: list[tuple[dict[str, Any], str, bool]] = []

    def add(narrative: str, patch: list[dict[str, Any]], ok: bool = True) -> None:
        nonlocal state
        walk.append(
            (state, json.dumps({"narrative": narrative, "state_patch": patch, "suggestions": ["look", "east"]}), ok)
        )
        if ok:
            import jsonpatch

            state = jsonpatch.apply_patch(state, patch)

    for _ in range(8):
        here = int(state["location"][1:])
        carry = next(i for i in range(here + rooms, len(pack.items), rooms) if i % 7)
        add("You look around the hall. Dust, and quiet.", [])
        add(f"You pick up the token {carry}.", [{"op": "replace", "path": f"/items/i{carry}", "value": "player"}])
        add(f"You walk east into Hall {here + 1}.", [{"op": "replace", "path": "/location", "value": f"r{here + 1}"}])
        add(
            f"You set the token {carry} down.", [{"op": "replace", "path": f"/items/i{carry}", "value": f"r{here + 1}"}]
        )
        far = (here + 50) % rooms
        add(f"You grab token {far}.", [{"op": "replace", "path": f"/items/i{far}", "value": "player"}], ok=False)
    return walk


def _time_per_turn(
    walk: list[tuple[dict[str, Any], str, bool]], pack: Any, *, rebuild_model: bool, rounds: int
) -> float:
    from storyloom.engine import state as state_module
    from storyloom.engine.rules import judge

    started = time.perf_counter()
    count = 0
    for _ in range(rounds):
        for before, raw, ok in walk:
            if rebuild_model:
                state_module._MODELS.clear()
            verdict = judge(raw, before, pack)
            if verdict.ok != ok:
                raise AssertionError(f"turn judged {verdict.ok}, expected {ok}: {verdict.issues}")
            count += 1
    return (time.perf_counter() - started) / count


def run(quick: bool = False) -> Figure:
    """Time `judge` per turn over a 1,000-item, 200-room pack (tiny in quick mode)."""
    rooms, items = (20, 100) if quick else (ROOMS, ITEMS)
    pack = generated_pack(rooms, items)
    walk = turns(pack)
    figure = Figure(7, "validation", "the same judge, building the pydantic state model per turn")
    _time_per_turn(walk[:5], pack, rebuild_model=False, rounds=1)  # warm the model cache and imports
    ours = _time_per_turn(walk, pack, rebuild_model=False, rounds=2 if quick else 25)
    naive = _time_per_turn(walk[:10], pack, rebuild_model=True, rounds=1)  # ~0.25 s a turn at full size
    figure.add(Row(f"ms to validate one turn ({items} items, {rooms} rooms)", ours * 1000, naive * 1000))
    figure.notes.append(
        f"{len(walk)} turns per round (look, take, move, drop, a refused far take), "
        "each judged against the state before it"
    )
    return figure
