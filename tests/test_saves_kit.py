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
    for command in commands:
        stream, cancel_at = _stream_of(session, command, cancel_after_deltas or 1)
        if stream is not None:
            await _run(session, journal, events, stream, cancel_at)
            continue
        done = _done_at_once(session, command)
        if done is not None:
            journal.record(done)
            events.append(done)
    return events


def _stream_of(session: Session, command: str, cancel: int) -> tuple[Any, int | None]:
    """The events a command streams, and after how many prose deltas it is cancelled (None: not);
    (None, None) for `/undo`, `/choose N`, `/branch N` and `/switch K`, which happen at once."""
    if command == "/undo" or command.startswith(("/choose ", "/branch ", "/switch ")):
        return None, None
    if command == "/retry":
        return session.retry(), None
    if command == "/regenerate":
        return session.regenerate(), None
    if command == "/cancel /regenerate":
        return session.regenerate(), cancel
    if command.startswith("/cancel "):
        return session.play(command[len("/cancel ") :]), cancel
    return session.play(command), None


def _done_at_once(session: Session, command: str) -> Any:
    """The event of a command that happens at once: `/undo`, `/choose N`, `/branch N`, `/switch K`."""
    if command == "/undo":
        return session.undo()
    number = int(command.split()[1])
    if command.startswith("/branch "):
        return session.branch(number)
    return session.switch(number) if command.startswith("/switch ") else session.choose(number)


async def _run(session: Session, journal: Journal, events: list[Any], stream: Any, cancel_at: int | None) -> None:
    deltas = 0
    async for event in stream:
        journal.record(event)
        events.append(event)
        if event.event == "prose_delta":
            deltas += 1
            if cancel_at is not None and deltas == cancel_at:
                session.cancel()


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
