"""The stories that ship with storyloom, readable without loading the engine.

`storyloom` paints a built-in story's title and intro before the engine (its
pydantic models) has loaded; the pack is checked in full when `load_pack` reads it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

STORIES = Path(__file__).with_name("stories")
"""Where the built-in packs are (package data, installed beside this module)."""


def builtin_pack_ids() -> list[str]:
    """The ids of the packs that ship with storyloom."""
    return sorted(p.stem for p in STORIES.glob("*.toml"))


def builtin_pack_text(pack_id: str) -> str:
    """The TOML text of a built-in pack."""
    return (STORIES / f"{pack_id}.toml").read_text(encoding="utf-8")


def builtin_opening(pack_id: str) -> tuple[str, str]:
    """A built-in pack's title and intro, to show while the rest loads (the built-in packs are tested whole)."""
    data = tomllib.loads(builtin_pack_text(pack_id))
    intro = str(data["intro"])
    if data.get("intro_room"):  # as `StoryPack` tells it; the built-in packs' start rooms have no other opening
        room = data["rooms"][data["start"]]
        intro = f"{intro.rstrip()}\n\n{room['name']}\n\n{room['description']}"
    return str(data["title"]), intro
