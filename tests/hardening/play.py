"""Playing a story into a save for the hardening tests, with any narrator."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from storyloom.engine.narration import Narrator
from storyloom.engine.packs import load_pack
from storyloom.saves.choices import SessionChoices
from storyloom.saves.resume import start_new
from storyloom.tui.cli.headless import play_commands
from storyloom.tui.session import PlaySession
from tests.conftest import SHORE_PACK


def shore_file(folder: Path) -> Path:
    """The conftest story as a pack file (exports and verify find a pack by its file)."""
    path = folder / "shore.toml"
    if not path.exists():
        path.write_text(SHORE_PACK, encoding="utf-8")
    return path


async def play_into_save(
    folder: Path,
    narrator_for: Any,
    commands: list[str],
    *,
    save: Path | None = None,
    budget: int = 2,
    **session_options: Any,
) -> tuple[Path, str, str, int]:
    """Play `commands` headless into a new save; returns (save, stdout, stderr, exit code).

    Args:
        narrator_for: given the pack, the narrator to play with.
        budget: corrections per turn (recorded in the save's header).
    """
    pack_path = shore_file(folder)
    pack = load_pack(str(pack_path))
    narrator: Narrator = narrator_for(pack)
    choices = SessionChoices(budget=budget)
    session, journal = start_new(
        pack, narrator, choices, source=str(pack_path), path=save or folder / "game.jsonl", **session_options
    )
    out, err = io.StringIO(), io.StringIO()
    with journal:
        code = await play_commands(PlaySession.around(session, journal, err=err), commands, out=out, err=err)
    return journal.path, out.getvalue(), err.getvalue(), code
