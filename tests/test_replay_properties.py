"""Property: whatever a player does (commands, undos, retries, cancels, other versions of a turn and
choices among them) on a faulty narrator, the save verifies, resumes into the same session, and
replays to the same events and final state."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.engine.state import state_hash
from storyloom.saves.format import SaveHeader
from storyloom.saves.reader import load_save
from storyloom.saves.replay import Replayer, replay_plan
from storyloom.saves.resume import resume
from storyloom.saves.verify import verify_save
from storyloom.saves.writer import Journal
from tests.test_replay import _timeless
from tests.test_saves_kit import play

WORDS = [
    "look",
    "take rope",
    "north",
    "south",
    "up",
    "down",
    "west",
    "east",
    "take key",
    "take matches",
    "drop rope",
    "inventory",
    "open door",
    "take oilcan",
]
ACTIONS = st.one_of(
    st.sampled_from(WORDS),
    st.just("/undo"),
    st.just("/retry"),
    st.sampled_from(WORDS).map(lambda w: f"/cancel {w}"),
    st.just("/regenerate"),
    st.just("/cancel /regenerate"),
    st.integers(1, 4).map(lambda n: f"/choose {n}"),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    actions=st.lists(ACTIONS, min_size=1, max_size=10),
    seed=st.integers(0, 1000),
    faults=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_any_session_verifies_resumes_and_replays_to_the_same_story(
    actions: list[str], seed: int, faults: float
) -> None:
    asyncio.run(_check(actions, seed, faults))


async def _check(actions: list[str], seed: int, faults: float) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        path, live, events = await _play_safely(path, actions, seed, faults)
        report = verify_save(path)
        assert report.sound, "\n".join(report.lines)

        result = await Replayer(replay_plan(load_save(path))).run()
        assert result.divergence is None, str(result.divergence)
        assert _timeless(result.events) == _timeless(events)
        assert result.final_hash == state_hash(live.state)

        resumed = resume(path, OfflineNarrator(load_pack("lighthouse"), seed=seed, faults=faults))
        with resumed.journal:
            assert resumed.session.state == live.state
            assert resumed.session.history == live.history
            assert resumed.session.next_turn == live.next_turn
            assert (resumed.session.pending is None) == (live.pending is None)
            assert resumed.session.versions == live.versions
            assert resumed.session.showing() == live.showing()


async def _play_safely(path: Path, actions: list[str], seed: int, faults: float):
    """Play, skipping a /retry when there is nothing to retry (the UI only offers it after a failure)
    and a /regenerate when there is no turn that can change (nor does the UI offer it)."""
    pack = load_pack("lighthouse")
    narrator = OfflineNarrator(pack, seed=seed, faults=faults)
    session = Session(pack, narrator)
    events: list = []
    with Journal.create(path, SaveHeader.for_session(pack, narrator, seed=seed, faults=faults)) as journal:
        for action in actions:
            if action == "/retry" and session.pending is None:
                continue
            if action.endswith("/regenerate") and not session.can_regenerate:
                continue
            events += await play(session, journal, [action])
    return path, session, events
