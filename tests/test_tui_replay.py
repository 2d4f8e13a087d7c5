"""The interactive replay (`storyloom replay SAVE`): a save made by a headless offline session with
corrections, played back through the game screen's widgets, with pause, step and divergence.

The save comes from the real command line (`storyloom play --headless --faults 0.5 --seed 5`,
the seed docs/playing.md names for corrections: turn 2 keeps its prose, turn 3 is rewritten
twice). Corrections are held at a gate where a test needs to look at one, so nothing depends on timing.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from storyloom.engine.narration import Chunk, NarrationRequest
from storyloom.saves.reader import load_save
from storyloom.saves.replay import Replayer, replay_plan
from storyloom.tui import cli
from storyloom.tui.app import ReplayApp
from storyloom.tui.testing.pilot import until
from storyloom.tui.widgets.command_input import CommandInput
from tests.test_saves_kit import played_save_async, rewrite_records
from tests.test_tui_snapshots import snapshot  # noqa: F401  (the fixture that keeps SVGs in snapshots/)

SIZE = (100, 30)
SPEED = 1000.0
COMMANDS = "look\ntake rope\nnorth\n"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A save with corrections, made as a player would: a headless offline session with faults."""
    folder = tmp_path_factory.mktemp("replay")
    commands = folder / "walk.txt"
    commands.write_text(COMMANDS, encoding="utf-8")
    path = folder / "seed5.jsonl"
    with pytest.MonkeyPatch.context() as patch:  # closing the session leaves a resume record: not in the real cache
        patch.setenv("XDG_CACHE_HOME", str(folder / "cache"))
        code = cli.main(
            [
                "play",
                "--headless",
                "--commands",
                str(commands),
                "--faults",
                "0.5",
                "--seed",
                "5",
                "--pace",
                "0.002",
                "--save",
                str(path),
            ]
        )
    assert code == 0
    return path


@pytest.fixture
def save(recorded: Path, tmp_path: Path) -> Path:
    """A private copy of the recorded save (a test may tamper with it)."""
    return Path(shutil.copy(recorded, tmp_path / "seed5.jsonl"))


class _HeldCorrections:
    """The replay narrator, but each correction waits for a gate (as a slow model would think)."""

    def __init__(self, inner: Any, gate: asyncio.Event, turns: set[int]):
        self.inner, self.gate, self.turns = inner, gate, turns
        self.name, self.model, self.speed = inner.name, inner.model, inner.speed

    async def narrate(self, request: NarrationRequest) -> AsyncIterator[Chunk]:
        if request.is_correction and request.turn in self.turns:
            await self.gate.wait()
        async for chunk in self.inner.narrate(request):
            yield chunk


def _app(
    path: Path, *, gate: asyncio.Event | None = None, held: set[int] = frozenset({2, 3}), start_paused: bool = False
) -> ReplayApp:
    """The replay app on a save; with a gate, the corrections of the `held` turns wait for it."""
    plan = replay_plan(load_save(path), speed=SPEED)
    if gate is not None:
        plan.narrator = _HeldCorrections(plan.narrator, gate, set(held))  # type: ignore[assignment]
    return ReplayApp(Replayer(plan), blink=False, start_paused=start_paused)


def _commits(path: Path) -> dict[int, str]:
    """Turn number -> the prose the save committed for it."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {r["data"]["turn"]: r["data"]["narrative"] for r in records if r["kind"] == "turn_committed"}


def _prose(app: ReplayApp, turn: int) -> str | None:
    message = app.replay.message(turn)
    return None if message is None else message.prose.text


def _status(app: ReplayApp, turn: int) -> str:
    message = app.replay.message(turn)
    return "" if message is None else message.status.plain_text


async def test_a_replay_shows_every_recorded_turn_with_its_committed_prose_and_exits_0(save: Path) -> None:
    before = save.read_bytes()
    commits = _commits(save)
    assert sorted(commits) == [1, 2, 3]
    app = _app(save)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.replay.finished or bool(app.replay.problem), limit=2000)
        screen = app.replay
        assert screen.problem == ""
        for turn, prose in commits.items():
            message = screen.message(turn)
            assert message is not None and message.outcome == "committed"
            assert message.prose.text == prose
        assert [m.player_input for m in (screen.message(t) for t in (1, 2, 3)) if m] == ["look", "take rope", "north"]
        assert screen.query_one("#intro").display  # the story's intro is shown above the turns
        assert not screen.query(CommandInput)  # the status line replaces the input line (there is none)
        assert screen.replay_status.plain_text.startswith("replay finished · 3/3 turns match the record")
        await pilot.press("q")
    assert app.return_value == 0 and app.replay.exit_code == 0
    assert "matches the record" in app.replay.summary()
    assert save.read_bytes() == before  # a replay never writes to the save, nor locks it
    assert sorted(p.name for p in save.parent.iterdir()) == ["seed5.jsonl"]


async def test_a_replayed_correction_shows_the_correcting_status_then_swaps_the_prose(save: Path) -> None:
    gate = asyncio.Event()
    app = _app(save, gate=gate)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: _status(app, 2) == "correcting (1/2)…", limit=2000)
        first_try = _prose(app, 2)
        assert first_try and app.replay.message(2).outcome == "correcting"
        assert "replaying · turn 2/3 · ×1000 · space pause" in app.replay.replay_status.plain_text
        gate.set()
        await until(pilot, lambda: app.replay.finished, limit=2000)
        commits = _commits(save)
        assert _prose(app, 2) == first_try == commits[2]  # turn 2's correction keeps the prose
        assert _prose(app, 3) == commits[3] and _status(app, 3) == "corrected"  # turn 3's is swapped in


async def test_space_pauses_mid_turn_and_n_steps_one_turn(save: Path) -> None:
    gate = asyncio.Event()
    app = _app(save, gate=gate, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(20):
            await pilot.pause()
        assert app.replay.message(1) is None  # paused before the first turn: only the intro
        assert app.replay.replay_status.plain_text.startswith("paused · turn 1/3")

        await pilot.press("n")  # one turn, then paused again
        await until(pilot, lambda: app.replay.paused and app.replay.position == 1, limit=2000)
        assert app.replay.message(1).outcome == "committed"
        for _ in range(20):
            await pilot.pause()
        assert app.replay.message(2) is None
        assert app.replay.replay_status.plain_text.startswith("paused · turn 2/3")

        await pilot.press("n")  # turn 2 stops at its held correction; space pauses it there
        await until(pilot, lambda: _status(app, 2) == "correcting (1/2)…", limit=2000)
        await pilot.press("space")
        prose = _prose(app, 2)
        gate.set()
        for _ in range(40):
            await pilot.pause()
        assert _prose(app, 2) == prose and _status(app, 2) == "correcting (1/2)…"  # nothing moves while paused
        assert app.replay.message(2).outcome == "correcting"

        await pilot.press("space")
        await until(pilot, lambda: app.replay.finished, limit=2000)
        assert app.replay.message(2).outcome == "committed"


async def test_a_tampered_save_shows_the_divergence_and_exits_1(save: Path) -> None:
    def take_the_boat(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for record in records:
            data = record["data"]
            if record["kind"] == "attempt_finished" and data["turn"] == 1:  # the commit still holds
                data["issues"] = [{"path": "/items/boat", "rule": "item.not_portable", "message": "too heavy"}]
        return records

    rewrite_records(save, take_the_boat)
    before = save.read_bytes()
    app = _app(save)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: bool(app.replay.problem), limit=2000)
        await pilot.pause()
        line = app.replay.replay_status
        assert line.plain_text.startswith("DIVERGED at turn 1: the record has")
        assert "judged [no issues]" in line.plain_text and "judged [item.not_portable" in line.plain_text
        assert line.has_class("-diverged")
        assert any(n.title == "Replay diverged" and n.severity == "error" for n in app._notifications)
        assert app.replay.message(2) is None  # the replay stops at the first divergence
        await pilot.press("space", "n")  # nothing left to resume or step
        assert app.replay.message(2) is None
        await pilot.press("q")
    assert app.return_value == 1 and app.replay.exit_code == 1
    assert "DIVERGED" in app.replay.summary()
    assert save.read_bytes() == before


def test_snapshot_of_a_replay_paused_mid_correction(save: Path, snap_compare: Any) -> None:
    async def run_before(pilot: Any) -> None:
        await until(pilot, lambda: _status(pilot.app, 3) == "correcting (1/2)…", limit=2000)
        await pilot.press("space")  # paused there: the status line says so
        await pilot.pause()

    assert snap_compare(_app(save, gate=asyncio.Event(), held={3}), terminal_size=SIZE, run_before=run_before)


async def test_recorded_undos_cancels_and_retries_replay_as_they_happened(tmp_path: Path) -> None:
    path, live, _ = await played_save_async(
        tmp_path / "s.jsonl", ["look", "take rope", "/undo", "/cancel north", "/retry", "look"], faults=0.0
    )
    app = ReplayApp(Replayer(replay_plan(load_save(path), speed=SPEED)), blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.replay.finished or bool(app.replay.problem), limit=2000)
        screen = app.replay
        assert screen.problem == ""
        assert screen.message(2).outcome == "undone"
        assert screen.message(3).outcome == "committed"  # cancelled, then retried to a commit
        assert screen.message(4).prose.text == live.history[-1].turn.narrative
        assert screen.replay_status.plain_text.startswith("replay finished · 6/6 steps match")
        await pilot.press("ctrl+z", "escape")  # a replay takes no undo or cancel of its own
        assert screen.message(4).outcome == "committed"
        await pilot.press("ctrl+q")
    assert app.replay.exit_code == 0


async def test_a_save_that_stops_mid_turn_replays_to_where_it_stops_and_says_so(tmp_path: Path) -> None:
    path, _, _ = await played_save_async(tmp_path / "s.jsonl", ["take rope", "north"], faults=0.0)
    lines = path.read_bytes().splitlines(keepends=True)
    cut = max(i for i, line in enumerate(lines) if b'"attempt_finished"' in line)
    path.write_bytes(b"".join(lines[: cut + 1]))  # a crash after turn 2's answer, before its commit
    app = ReplayApp(Replayer(replay_plan(load_save(path), speed=SPEED)), blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.replay.finished or bool(app.replay.problem), limit=2000)
        assert app.replay.problem == ""
        assert app.replay.message(1).outcome == "committed"
        assert app.replay.message(2).outcome != "committed"  # never committed then, nor now
        assert "the save stops while turn 2 was in flight" in app.replay.replay_status.plain_text
        await pilot.press("q")
    assert app.return_value == 0


async def test_the_footer_offers_one_quit_and_ctrl_q_quits_the_replay_too(save: Path) -> None:
    from textual.widgets import Footer

    app = _app(save, start_paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        footer = app.screen.query_one(Footer)
        shown = [str(key.description) for key in footer.query("FooterKey")]
        assert shown.count("Quit") == 1, shown
        await pilot.press("ctrl+q")
    assert app.return_value == 0


async def test_the_footer_is_rebuilt_only_when_its_keys_change(save: Path) -> None:
    """Textual's footer rebuilds every key on each bindings refresh; a replay asked after every event,
    which was most of the time a UI replay took (19 s against 6 s headless for 29 turns at ×20)."""
    app = _app(save)
    sent: list[tuple[object, ...]] = []
    async with app.run_test(size=SIZE) as pilot:
        screen = app.replay

        def keys(_: object) -> None:
            sent.append(
                tuple((k, b.description, on) for k, (_n, b, on, _t) in screen.active_bindings.items() if b.show)
            )

        screen.bindings_updated_signal.subscribe(screen, keys)
        await until(pilot, lambda: screen.finished or bool(screen.problem), limit=2000)
        await pilot.pause()
        shown = [str(key.description) for key in screen.query("FooterKey")]
    assert screen.problem == ""
    assert all(a != b for a, b in itertools.pairwise(sent)), sent
    assert "Quit" in shown and "Details" in shown
