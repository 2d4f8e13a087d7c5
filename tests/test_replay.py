"""Replay: a save played back through a fresh engine reaches the same events and the same state,
and any divergence from the record is reported, never smoothed over."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import pytest

from storyloom.engine.events import Event
from storyloom.engine.lifecycle import Session
from storyloom.engine.narration import Finish, NarrationRequest, StructuredDelta
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.narrators.replay import RecordedAnswer, ReplayNarrator
from storyloom.engine.packs import load_pack
from storyloom.engine.state import state_hash
from storyloom.saves.errors import InvalidCommit
from storyloom.saves.format import SaveHeader
from storyloom.saves.reader import load_save
from storyloom.saves.replay import Replayer, replay_plan
from storyloom.saves.writer import Journal
from storyloom.tui.cli import save_commands as commands
from tests.conftest import Reply, ScriptedNarrator, structured, turn_json
from tests.test_saves_kit import LIGHTHOUSE_WALK, play, played_save, played_save_async, rewrite_records


def _timeless(events: list[Event]) -> list[dict[str, Any]]:
    """Events as a player would see them, without the recorded milliseconds."""
    out = []
    for event in events:
        data = event.to_json()
        if "deltas" in data:
            data["deltas"] = [[kind, text] for _, kind, text in data["deltas"]]
        out.append(json.loads(json.dumps(data)))
    return out


async def _replay(path: Path, **options: Any):
    plan = replay_plan(load_save(path), **options)
    return await Replayer(plan).run()


async def test_replaying_a_session_with_corrections_gives_the_same_events_and_final_state(tmp_path: Path) -> None:
    path, live, events = await played_save_async(
        tmp_path / "s.jsonl", [*LIGHTHOUSE_WALK, "/undo", "look"], faults=0.7, stubborn=0.0
    )
    assert any(e.event == "correction_started" for e in events), "the session should have had corrections"
    result = await _replay(path)
    assert result.divergence is None
    assert _timeless(result.events) == _timeless(events)
    assert result.final_hash == state_hash(live.state) == result.expected_final_hash


async def test_a_replay_keeps_the_recorded_timing_of_every_delta(tmp_path: Path) -> None:
    path, _, events = await played_save_async(tmp_path / "s.jsonl", ["look", "take rope"], faults=0.0)
    recorded = [d for e in events if e.event == "attempt_finished" for d in e.deltas]
    result = await _replay(path)
    replayed = [d for e in result.events if e.event == "attempt_finished" for d in e.deltas]
    assert replayed == recorded


async def test_the_replay_narrator_waits_the_recorded_gaps_scaled_by_speed() -> None:
    waits: list[float] = []
    now = [100.0]

    async def fake_sleep(seconds: float) -> None:
        waits.append(round(seconds, 9))
        now[0] += seconds

    answer = RecordedAnswer(1, 1, ((0, "s", '{"narr'), (400, "s", 'ative": "x"'), (1000, "s", "}")))
    narrator = ReplayNarrator([answer], speed=2.0, sleep=fake_sleep, clock=lambda: now[0])
    request = NarrationRequest(load_pack("lighthouse"), {}, (), "look", 1)
    chunks = [c async for c in narrator.narrate(request)]
    assert waits == [0.2, 0.3]
    assert [getattr(c, "at_ms", None) for c in chunks[:3]] == [0, 400, 1000]


async def test_a_slow_consumer_does_not_add_its_time_to_the_recorded_gaps() -> None:
    """A UI that takes 150 ms to paint each chunk of an answer recorded over one second: the answer
    takes as long as the slower of the two, not their sum (delays that add up made a UI replay at
    ×20 take four times as long as the same replay headless)."""
    now = [0.0]

    async def fake_sleep(seconds: float) -> None:
        now[0] += seconds

    deltas = tuple((at, "s", "x") for at in range(0, 1001, 100))
    narrator = ReplayNarrator([RecordedAnswer(1, 1, deltas)], speed=1.0, sleep=fake_sleep, clock=lambda: now[0])
    request = NarrationRequest(load_pack("lighthouse"), {}, (), "look", 1)
    async for _ in narrator.narrate(request):
        now[0] += 0.15  # painting the chunk
    assert now[0] == pytest.approx(12 * 0.15)  # 11 deltas and the finish, each painted: no waiting at all
    now[0] = 0.0
    narrator = ReplayNarrator([RecordedAnswer(1, 1, deltas)], speed=1.0, sleep=fake_sleep, clock=lambda: now[0])
    async for _ in narrator.narrate(request):
        now[0] += 0.01
    assert now[0] == pytest.approx(1.0 + 0.01 * 2)  # the recording was the slower: its own pace


async def test_at_max_speed_the_replay_narrator_never_waits() -> None:
    async def no_sleep(seconds: float) -> None:
        raise AssertionError("slept at max speed")

    answer = RecordedAnswer(1, 1, ((0, "s", "{"), (900, "s", "}")))
    narrator = ReplayNarrator([answer], speed=math.inf, sleep=no_sleep)
    request = NarrationRequest(load_pack("lighthouse"), {}, (), "look", 1)
    assert len([c async for c in narrator.narrate(request)]) == 3


class _RecordedSlowly:
    """One turn whose chunks the narrator reports 300 ms apart (its own clock; nothing waits while recording)."""

    name, model = "slow", "slow-1"

    async def narrate(self, request: NarrationRequest):
        text = turn_json("You look around the black rocks.", [])
        third = len(text) // 3
        for index, at in enumerate((0, 300, 600)):
            yield StructuredDelta(text[index * third : (index + 1) * third if index < 2 else None], at_ms=at)
        yield Finish("end")


async def test_a_replay_slower_than_recorded_gives_an_attempt_time_in_proportion(
    tmp_path: Path, pack, monkeypatch
) -> None:
    from storyloom.saves import replay

    monkeypatch.setattr(replay, "ATTEMPT_MAX_SECONDS", 1.0)  # an attempt recorded in 0.6 s fits
    narrator = _RecordedSlowly()
    path = tmp_path / "slow.jsonl"
    with Journal.create(path, SaveHeader.for_session(pack, narrator)) as journal:
        await play(Session(pack, narrator), journal, ["look"])
    result = await _replay(path, pack=pack, speed=0.5)  # 1.2 s at half speed: over 1 s, within 2 s
    assert result.divergence is None
    assert [e.event for e in result.events if e.event == "turn_committed"] == ["turn_committed"]


async def test_a_cancelled_turn_and_its_retry_replay_as_they_happened(tmp_path: Path, pack) -> None:
    long = "You walk north along the rocks while the tide comes in, slowly, slowly."
    narrator = ScriptedNarrator(
        [
            structured(long, [{"op": "replace", "path": "/location", "value": "path"}]),
            structured("You walk north to the Cliff Path.", [{"op": "replace", "path": "/location", "value": "path"}]),
        ],
        chunk=6,
    )
    session = Session(pack, narrator)
    path = tmp_path / "s.jsonl"
    with Journal.create(path, SaveHeader.for_session(pack, narrator)) as journal:
        events = await play(session, journal, ["/cancel north", "/retry"], cancel_after_deltas=3)
    assert [e.event for e in events].count("turn_cancelled") == 1
    result = await _replay(path, pack=pack)
    assert result.divergence is None
    shown = lambda evs: [e.text for e in evs if e.event == "prose_delta"]  # noqa: E731
    assert shown(result.events) == shown(events)
    assert [e.event for e in result.events if e.event != "prose_delta"] == [
        e.event for e in events if e.event != "prose_delta"
    ]


async def test_a_failed_turn_replays_as_failed(tmp_path: Path, pack) -> None:
    narrator = ScriptedNarrator(
        [
            structured("You fly to the tower.", [{"op": "replace", "path": "/location", "value": "tower"}]),
            structured("You fly to the tower.", [{"op": "replace", "path": "/location", "value": "tower"}]),
            Reply(text="I would rather not."),
            structured("You look around."),
        ]
    )
    session = Session(pack, narrator, budget=2)
    path = tmp_path / "s.jsonl"
    with Journal.create(path, SaveHeader.for_session(pack, narrator)) as journal:
        events = await play(session, journal, ["fly", "look"])
    assert "turn_failed" in [e.event for e in events]
    result = await _replay(path, pack=pack)
    assert result.divergence is None and _timeless(result.events) == _timeless(events)


async def test_a_rewritten_model_output_is_reported_as_a_divergence(tmp_path: Path) -> None:
    path, _, _ = await played_save_async(tmp_path / "s.jsonl", ["look", "take rope", "north"], faults=0.0)

    def swap_output(records):
        for record in records:
            if record["kind"] == "attempt_finished" and record["data"]["turn"] == 2:
                raw = json.loads("".join(d[2] for d in record["data"]["deltas"] if d[1] == "s"))
                raw["state_patch"] = [{"op": "replace", "path": "/items/boat", "value": "player"}]
                record["data"]["deltas"] = [[0, "s", json.dumps(raw)]]
        return records

    rewrite_records(path, swap_output)
    with pytest.raises(InvalidCommit, match="the commit of turn 2 is not what the model's answer recorded for it"):
        await _replay(path)  # refused as verify refuses it, before anything is replayed


async def test_an_answer_judged_otherwise_than_recorded_is_reported_as_a_divergence(tmp_path: Path) -> None:
    path, _, _ = await played_save_async(tmp_path / "s.jsonl", ["look", "take rope", "north"], faults=0.0)

    def add_issue(records):
        for record in records:
            if record["kind"] == "attempt_finished" and record["data"]["turn"] == 2:
                record["data"]["issues"] = [{"path": "", "rule": "made.up", "message": "not found by the rules"}]
        return records

    rewrite_records(path, add_issue)  # every commit still holds: only a replay can see it
    result = await _replay(path)
    assert result.divergence is not None and result.divergence.turn == 2
    assert "the record has" in str(result.divergence) and "replay gave" in str(result.divergence)


def test_replay_headless_prints_the_story_and_exits_0_when_faithful(tmp_path: Path, capsys) -> None:
    path, live, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope"], faults=0.0)
    code = commands.replay(argparse.Namespace(save=str(path), speed=math.inf, headless=True))
    captured = capsys.readouterr()
    assert code == 0
    assert "> look" in captured.out and "> take rope" in captured.out
    assert live.history[-1].turn.narrative.split("\n")[0] in captured.out
    assert "matches the record" in captured.err


def test_replay_headless_exits_1_and_says_where_it_diverged(tmp_path: Path, capsys) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope"], faults=0.0)

    def other_hash(records):
        for record in records:
            if record["kind"] == "attempt_finished" and record["data"]["turn"] == 1:
                record["data"]["issues"] = [{"path": "", "rule": "made.up", "message": "not found by the rules"}]
        return records

    rewrite_records(path, other_hash)
    code = commands.replay(argparse.Namespace(save=str(path), speed=math.inf, headless=True))
    assert code == 1
    assert "DIVERGED" in capsys.readouterr().err


async def test_a_save_that_stops_mid_turn_replays_up_to_where_it_stops(tmp_path: Path) -> None:
    path, _, _ = await played_save_async(tmp_path / "s.jsonl", ["take rope", "north"], faults=0.0)
    lines = path.read_bytes().splitlines(keepends=True)
    cut = max(i for i, line in enumerate(lines) if b'"attempt_finished"' in line)
    path.write_bytes(b"".join(lines[: cut + 1]))
    result = await _replay(path)
    assert result.divergence is None and result.interrupted == 2
    assert result.final_hash == result.expected_final_hash  # turn 2 was never committed, nor is it now


def test_a_replay_plan_gives_the_pack_the_inputs_and_the_replay_narrator(tmp_path: Path) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look", "take rope", "/undo"], faults=0.0)
    pack, inputs, narrator = replay_plan(load_save(path))
    assert pack.id == "lighthouse" and inputs == ["look", "take rope"]
    assert narrator.name == "replay" and narrator.model == "offline-1"
    assert [s.action for s in replay_plan(load_save(path)).steps] == ["play", "play", "undo"]


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_replay_is_faithful_for_sessions_full_of_faults(tmp_path: Path, seed: int) -> None:
    path, live, events = await played_save_async(tmp_path / "s.jsonl", LIGHTHOUSE_WALK, faults=0.9, seed=seed)
    result = await _replay(path)
    assert result.divergence is None, str(result.divergence)
    assert _timeless(result.events) == _timeless(events)
    assert result.final_hash == state_hash(live.state)


def test_the_offline_narrator_is_not_needed_to_replay(tmp_path: Path, monkeypatch) -> None:
    path, _, _ = played_save(tmp_path / "s.jsonl", ["look"], faults=0.0)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a replay asked the live narrator")

    monkeypatch.setattr(OfflineNarrator, "narrate", refuse)
    import asyncio

    assert asyncio.run(_replay(path)).faithful


async def test_narrator_faults_replay_as_recorded(tmp_path: Path, pack) -> None:
    from storyloom.engine.narration import NarratorError, TransientNarratorError

    narrator = ScriptedNarrator(
        [
            Reply(structured='{"narrative": "You', raise_after=TransientNarratorError("overloaded", retry_after=0.5)),
            structured("You look around."),
            Reply(structured='{"narrative": "You see', raise_after=NarratorError("the server said no")),
            structured("You look again."),
        ]
    )

    async def no_sleep(_: float) -> None:
        return None

    session = Session(pack, narrator, sleep=no_sleep)
    path = tmp_path / "s.jsonl"
    with Journal.create(path, SaveHeader.for_session(pack, narrator)) as journal:
        events = await play(session, journal, ["look", "look", "/retry"])
    names = [e.event for e in events]
    assert "narrator_retrying" in names and "turn_failed" in names and names[-1] == "turn_committed"
    result = await _replay(path, pack=pack)
    assert result.divergence is None
    assert _timeless(result.events) == _timeless(events)


def test_the_text_replay_streams_at_a_pace_and_flushes_only_when_full_at_speed_inf():
    """At a replay speed someone watches, each event's text is flushed as it comes; at `--speed inf`
    there is no pace to show, and a flush per streamed chunk was a tenth of a 5,000-turn replay."""
    import io

    from storyloom.engine.events import ProseDelta, TurnStarted
    from storyloom.tui.cli.printer import EventPrinter

    class Counted(io.StringIO):
        flushes = 0

        def flush(self) -> None:
            self.flushes += 1
            super().flush()

    events = [TurnStarted(turn=1, attempt=1, player_input="look"), *(ProseDelta(turn=1, text=w) for w in "ab")]
    for streaming, flushed in ((True, len(events)), (False, 0)):
        out = Counted()
        printer = EventPrinter(out, io.StringIO(), live=True, streaming=streaming, drafts=True)
        for event in events:
            printer(event)
        assert out.flushes == flushed
        printer.end()
        assert out.flushes == flushed + 1 and "look" in out.getvalue() and "ab" in out.getvalue()
