"""Each way a turn can fail has its own words, the same in headless play, in a replay, on the status row and
in the turn's details.

A player who reads "failed after its correction budget" for an unreachable server retries a
command that was never wrong; one who reads it for a refusal waits for a correction that never
comes. The words come from one table (`storyloom.tui.failures`).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import math
from pathlib import Path

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.narration import NarratorError, NarratorRefusal, TransientNarratorError
from storyloom.engine.packs import load_pack
from storyloom.saves.format import SaveHeader
from storyloom.saves.writer import Journal
from storyloom.tui.cli import save_commands
from storyloom.tui.cli.headless import play_commands
from storyloom.tui.session import PlaySession
from tests.conftest import Reply, ScriptedNarrator
from tests.test_saves_kit import play

BUSY = TransientNarratorError("127.0.0.1:8000 is overloaded (HTTP 529)")
KINDS = {
    "budget": (
        [Reply(structured='{"narrative": "You look ar', stop_reason="max_tokens")] * 3,
        "failed after its correction budget",
    ),
    "unavailable": ([Reply(raise_after=BUSY)] * 5, "failed because the narrator was unavailable"),
    "refusal": ([Reply(raise_after=NarratorRefusal("The model declined."))], "failed because the model declined"),
    "error": ([Reply(raise_after=NarratorError("unknown model 'x'"))], "failed because the narrator could not answer"),
}
WORDS = [words for _, words in KINDS.values()]


def _session(kind: str) -> tuple[Session, ScriptedNarrator]:
    pack = load_pack("lighthouse")
    narrator = ScriptedNarrator(list(KINDS[kind][0]))

    async def no_wait(_: float) -> None:
        return None

    return Session(pack, narrator, budget=2, sleep=no_wait), narrator


@pytest.mark.parametrize("kind", KINDS)
async def test_headless_play_says_how_the_turn_failed(kind):
    session, _ = _session(kind)
    out, err = io.StringIO(), io.StringIO()
    assert await play_commands(PlaySession.around(session), ["look"], out=out, err=err) == 3
    said = err.getvalue()
    assert f"turn 1 {KINDS[kind][1]}" in said
    assert [words in said for words in WORDS].count(True) == 1  # no other kind's words


@pytest.mark.parametrize("kind", KINDS)
def test_a_replay_says_how_the_turn_failed(kind, tmp_path: Path, capsys):
    session, narrator = _session(kind)
    path = tmp_path / "s.jsonl"
    header = SaveHeader.for_session(session.pack, narrator, seed=0, budget=2, faults=0.0)
    with Journal.create(path, header) as journal:
        asyncio.run(play(session, journal, ["look"]))
    code = save_commands.replay(argparse.Namespace(save=str(path), speed=math.inf, headless=True))
    printed = capsys.readouterr().out
    assert code == 0
    assert f"[turn 1 {KINDS[kind][1]}" in printed
    assert [words in printed for words in WORDS].count(True) == 1


@pytest.mark.parametrize(
    ("error", "status"),
    [(BUSY, "narrator unavailable"), (NarratorRefusal("The model declined."), "the model declined this turn")],
)
async def test_the_status_row_says_how_the_turn_failed(error, status):
    from storyloom.tui.screens.issue_details import IssueDetailsScreen
    from storyloom.tui.testing.narrators import GatedReply
    from storyloom.tui.testing.pilot import until
    from tests.test_tui_app import make_app, painted, send

    async def no_wait(_: float) -> None:
        return None

    app = make_app(*[GatedReply("", error=error)] * 5, sleep=no_wait)
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await until(pilot, lambda: (m := app.game.latest_message()) is not None and m.outcome == "failed")
        said, *keys = app.game.latest_message().status.plain_text.split(" · ")
        assert said == status and any("retry" in key for key in keys)
        await pilot.press("ctrl+d")  # the details say the same, and that no correction was spent
        await until(pilot, lambda: isinstance(app.screen, IssueDetailsScreen))
        await pilot.pause()
        outcome = f"Outcome: not committed — {status} (no correction spent)."
        assert outcome in painted(app) and "budget was spent" not in painted(app)
