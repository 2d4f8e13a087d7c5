"""Helpers shared by the save tests (this module holds no tests of its own).

`played_save` plays a short session into a journal; `rewrite_records` edits
a save's records and re-signs the chain, to forge a save that is intact as a
file but says something else.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack, parse_pack
from storyloom.engine.state import canonical_json
from storyloom.saves.format import GENESIS, SaveHeader, record_hash
from storyloom.saves.writer import Journal
from tests.conftest import SHORE_PACK

LIGHTHOUSE_WALK = [
    "look",
    "take rope",
    "north",
    "up",
    "west",
    "take key",
    "take matches",
    "east",
    "east",
    "take oilcan",
    "west",
    "inventory",
]


def shore_pack_file(tmp_path: Path):
    """The test story written to a file, so a save can find it again by its source path."""
    path = tmp_path / "shore.toml"
    path.write_text(SHORE_PACK, encoding="utf-8")
    return parse_pack(SHORE_PACK, str(path)), path


async def play(
    session: Session, journal: Journal, commands: Iterable[str], *, cancel_after_deltas: int | None = None
) -> list[Any]:
    """Play commands the way a player would, journaling every event.

    `/undo` undoes, `/retry` retries the pending turn, `/cancel CMD` plays CMD
    and cancels it after `cancel_after_deltas` prose deltas (default 1);
    `/regenerate` asks for another version of the latest turn (`/cancel /regenerate`
    cancels it the same way) and `/choose N` chooses its version N; `/branch N` continues from
    after turn N on a new branch, `/switch K` plays branch K again.
    """
    events: list[Any] = []

    async def run(stream, cancel_at: int | None = None) -> None:
        deltas = 0
        async for event in stream:
            journal.record(event)
            events.append(event)
            if event.event == "prose_delta":
                deltas += 1
                if cancel_at is not None and deltas == cancel_at:
                    session.cancel()

    for command in commands:
        if command == "/undo":
            undone = session.undo()
            if undone is not None:
                journal.record(undone)
                events.append(undone)
        elif command == "/retry":
            await run(session.retry())
        elif command == "/regenerate":
            await run(session.regenerate())
        elif command.startswith("/choose "):
            chosen = session.choose(int(command.split()[1]))
            if chosen is not None:
                journal.record(chosen)
                events.append(chosen)
        elif command.startswith(("/branch ", "/switch ")):
            number = int(command.split()[1])
            moved = session.branch(number) if command.startswith("/branch ") else session.switch(number)
            journal.record(moved)
            events.append(moved)
        elif command == "/cancel /regenerate":
            await run(session.regenerate(), cancel_after_deltas or 1)
        elif command.startswith("/cancel "):
            await run(session.play(command[len("/cancel ") :]), cancel_after_deltas or 1)
        else:
            await run(session.play(command))
    return events


def played_save(
    path: Path, commands: Iterable[str] = LIGHTHOUSE_WALK, **options: Any
) -> tuple[Path, Session, list[Any]]:
    """`played_save_async`, for tests that are not async themselves."""
    return asyncio.run(played_save_async(path, commands, **options))


async def played_save_async(
    path: Path,
    commands: Iterable[str] = LIGHTHOUSE_WALK,
    *,
    faults: float = 0.5,
    seed: int = 7,
    budget: int = 2,
    **narrator_options: Any,
) -> tuple[Path, Session, list[Any]]:
    """A lighthouse session on the offline narrator, played into a new save at `path`."""
    pack = load_pack("lighthouse")
    narrator = OfflineNarrator(pack, seed=seed, faults=faults, **narrator_options)
    session = Session(pack, narrator, budget=budget)
    header = SaveHeader.for_session(pack, narrator, seed=seed, budget=budget, faults=faults)
    with Journal.create(path, header) as journal:
        events = await play(session, journal, list(commands))
    return path, session, events


def rewrite_records(path: Path, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    """Edit a save's records, then renumber and re-sign the whole chain (a forgery that loads cleanly)."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    records = edit(records)
    previous = GENESIS
    lines = []
    for seq, record in enumerate(records):
        record = {**record, "seq": seq, "prev": previous}
        record.pop("hash", None)
        record["hash"] = record_hash(record)
        previous = record["hash"]
        lines.append(canonical_json(record))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def kinds(path: Path) -> list[str]:
    """The record kinds of a save, in order."""
    return [json.loads(line)["kind"] for line in path.read_text(encoding="utf-8").splitlines()]
