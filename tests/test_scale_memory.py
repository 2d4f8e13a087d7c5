"""A story of any length in bounded memory (issue 17, scale): the model's history, the undo stack,
a resume's reading and the screen of a resumed story each hold the latest turns, never the whole
story; the save holds the rest. How much memory that is at 200 MB is a benchmark figure
(`benchmarks/scale.py`); these tests hold the behaviour a player sees."""

from __future__ import annotations

import json
from pathlib import Path

from storyloom.engine.lifecycle import Session
from storyloom.engine.limits import HISTORY_TURNS, UNDO_TURNS
from storyloom.engine.narration import NarrationRequest
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.engine.state import state_hash
from storyloom.saves.choices import SessionChoices
from storyloom.saves.reader import load_save
from storyloom.saves.resume import Resumed, resume_with
from storyloom.saves.verify import verify_save
from storyloom.tui.app import StoryloomApp
from storyloom.tui.widgets.story_text import EarlierTurns
from tests.conftest import collect
from tests.test_saves_kit import played_save, played_save_async
from tests.test_tui_app import painted

CYCLE = ["take rope", "north", "drop rope", "take rope", "south", "drop rope", "look", "wait", "inventory"]


def _commands(turns: int) -> list[str]:
    return [CYCLE[i % len(CYCLE)] for i in range(turns)]


class Recording(OfflineNarrator):
    """The offline narrator, noting what each request sends the model as history."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[int, ...]] = []

    def narrate(self, request: NarrationRequest):
        self.sent.append(tuple(exchange.number for exchange in request.history))
        return super().narrate(request)


def _resume(path: Path) -> Resumed:
    return resume_with(
        path, lambda pack, kept: OfflineNarrator(pack, seed=kept.seed, faults=kept.faults), SessionChoices()
    )


async def test_the_model_is_sent_the_latest_turns_and_the_start_of_its_history_holds_for_many_turns():
    pack = load_pack("lighthouse")
    narrator = Recording(pack, seed=3)
    session = Session(pack, narrator)
    for command in _commands(5 * HISTORY_TURNS):
        await collect(session.play(command))
    sizes = [len(sent) for sent in narrator.sent]
    assert max(sizes) <= 2 * HISTORY_TURNS
    assert sizes[: 2 * HISTORY_TURNS + 2] == [*range(2 * HISTORY_TURNS + 1), HISTORY_TURNS]
    assert min(sizes[2 * HISTORY_TURNS :]) >= HISTORY_TURNS
    for number, sent in enumerate(narrator.sent, 1):  # always the turns just before, in order
        assert sent == tuple(range(number - len(sent), number))
    starts = {sent[0] for sent in narrator.sent if sent}
    assert len(starts) <= len(narrator.sent) // HISTORY_TURNS + 1  # the cached start changes once in 50 turns


async def test_undo_takes_back_the_latest_turns_one_by_one_then_says_why_it_stops():
    pack = load_pack("lighthouse")
    session = Session(pack, OfflineNarrator(pack, seed=5))
    states = []
    for command in _commands(UNDO_TURNS + 20):
        states.append(session.state)
        await collect(session.play(command))
    for before in reversed(states[-UNDO_TURNS:]):
        undone = session.undo()
        assert undone is not None and session.state == before
    assert session.undo() is None and not session.can_undo
    assert session.commits == 20
    assert f"only the latest {UNDO_TURNS} turns can be taken back" in session.no_undo
    empty = Session(pack, OfflineNarrator(pack))
    assert "no turn is committed" in empty.no_undo


def test_a_resumed_long_story_is_the_session_it_was_and_undoes_as_far_as_it_could(tmp_path: Path):
    commands = _commands(2 * HISTORY_TURNS + 37)
    commands[60:60] = ["/undo", "/undo", "take rope"]
    path, live, _ = played_save(tmp_path / "long.jsonl", commands, faults=0.3, seed=2)
    resumed = _resume(path)
    with resumed.journal:
        session = resumed.session
        assert session.state == live.state and session.commits == live.commits
        assert [(x.number, x.player_input, x.turn) for x in session.history] == [
            (x.number, x.player_input, x.turn) for x in live.history
        ]
        assert [turn.turn for turn in resumed.past] == [x.number for x in session.history]
        for _ in range(UNDO_TURNS):
            ours, theirs = session.undo(), live.undo()
            assert (ours is None) == (theirs is None)
            if ours is None:
                break
            assert session.state == live.state and session.history == live.history
        assert session.no_undo == live.no_undo


def test_a_resumed_save_whose_file_is_deleted_is_rescued_whole(tmp_path: Path):
    path, live, _ = played_save(tmp_path / "s.jsonl", _commands(40), faults=0.3)
    resumed = _resume(path)
    before = path.read_bytes()
    path.unlink()
    journal = resumed.journal
    assert journal.check() is not None  # noticed before saying "saved"
    rescue = tmp_path / "rescued.jsonl"
    journal.save_as(rescue)
    journal.close()
    assert rescue.read_bytes().startswith(before)  # every line read at the resume, as it was
    report = verify_save(rescue)
    assert report.sound, report.lines
    assert f"final state: {state_hash(live.state)}" in report.lines


def test_a_save_with_a_line_in_another_spelling_midway_is_resumed_from_its_careful_reading(tmp_path: Path):
    """The streamed reading takes only lines as the journal writes them; a sound line spelled another
    way (an older storyloom, a tool) half way in sends the resume back to the careful whole reading."""
    path, live, _ = played_save(tmp_path / "s.jsonl", _commands(30), faults=0.0)
    lines = path.read_bytes().splitlines(keepends=True)
    middle = len(lines) // 2
    lines[middle] = (json.dumps(json.loads(lines[middle]), indent=None, separators=(", ", ": ")) + "\n").encode()
    path.write_bytes(b"".join(lines))
    assert load_save(path).last_seq == len(lines) - 1  # still a sound save
    resumed = _resume(path)
    with resumed.journal:
        assert resumed.session.state == live.state and resumed.session.commits == live.commits
    assert verify_save(path).sound


async def test_a_resumed_long_story_shows_its_latest_turns_and_says_how_many_came_before(tmp_path: Path):
    turns = 2 * HISTORY_TURNS + 30
    path, live, _ = await played_save_async(tmp_path / "s.jsonl", _commands(turns), faults=0.0)
    resumed = _resume(path)
    with resumed.journal:
        session = resumed.session
        shown = len(session.history)
        assert shown < turns
        app = StoryloomApp(session, blink=False, past=lambda: resumed.past)
        async with app.run_test(size=(110, 30)) as pilot:
            await pilot.pause()
            earlier = app.game.transcript.query_one(EarlierTurns)
            assert f"{turns - shown:,} earlier turns" in str(earlier.render())
            assert len(app.game.committed_exchanges()) == shown
            app.game.transcript.scroll_home(animate=False)
            await pilot.pause()
            assert "earlier turns of this story are kept in its save" in painted(app)


def test_headless_undo_past_the_latest_turns_says_why_and_goes_on(tmp_path: Path, capsys, monkeypatch):
    from storyloom.tui.cli import main

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    commands = tmp_path / "commands.txt"
    lines = [*_commands(UNDO_TURNS + 2), *["/undo"] * (UNDO_TURNS + 1), "look"]
    commands.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["play", "--headless", "--commands", str(commands), "--save", str(tmp_path / "s.jsonl")]) == 0
    err = capsys.readouterr().err
    assert err.count(f"nothing more to undo: only the latest {UNDO_TURNS} turns can be taken back") == 1
    assert verify_save(tmp_path / "s.jsonl").sound


def test_export_reads_a_sound_save_a_record_at_a_time_and_a_respelled_one_whole(tmp_path: Path, capsys, monkeypatch):
    """`storyloom export` is what a long story's screen points to for its earlier turns: it must not
    need the whole save in memory. A sound save is never read whole; one with a line spelled
    otherwise is, and exports the same."""
    import argparse

    from storyloom.saves import reader
    from storyloom.tui.cli import save_commands

    path, live, _ = played_save(tmp_path / "s.jsonl", _commands(2 * HISTORY_TURNS + 10), faults=0.2)
    whole = reader.load_save
    read_whole: list[Path] = []

    def counted(at):
        read_whole.append(Path(at))
        return whole(at)

    monkeypatch.setattr(reader, "load_save", counted)
    assert save_commands.export(argparse.Namespace(save=str(path), format="md")) == 0
    streamed = capsys.readouterr().out
    assert read_whole == []
    assert streamed.count("**> ") == live.commits and live.history[-1].turn.narrative.split("\n")[0] in streamed
    lines = path.read_bytes().splitlines(keepends=True)
    lines[len(lines) // 2] = (json.dumps(json.loads(lines[len(lines) // 2]), separators=(", ", ": ")) + "\n").encode()
    path.write_bytes(b"".join(lines))
    assert save_commands.export(argparse.Namespace(save=str(path), format="md")) == 0
    assert read_whole == [path] and capsys.readouterr().out == streamed


def test_replay_headless_reads_a_sound_save_a_record_at_a_time_and_a_respelled_one_whole(
    tmp_path: Path, capsys, monkeypatch
):
    """`storyloom replay --headless` of a save of any size holds one step of it, never the whole save
    (its peak beside verify's is figure 8); one with a line spelled otherwise is read whole, and
    replays the same."""
    import argparse
    import math

    from storyloom.saves import replay
    from storyloom.tui.cli import save_commands

    path, live, _ = played_save(tmp_path / "s.jsonl", [*_commands(60), "/regenerate", "/choose 1", "look", "/undo"])
    commits = sum(record.kind == "turn_committed" for record in load_save(path).records)
    whole = load_save
    read_whole: list[Path] = []

    def counted(at):
        read_whole.append(Path(at))
        return whole(at)

    monkeypatch.setattr(replay, "load_save", counted, raising=False)
    monkeypatch.setattr(save_commands, "load_save", counted)
    headless = argparse.Namespace(save=str(path), speed=math.inf, headless=True)
    assert save_commands.replay(headless) == 0
    streamed = capsys.readouterr()
    assert read_whole == []
    assert f"replayed {commits} commits; every decision and state hash matches" in streamed.err
    assert live.history[-1].turn.narrative.split("\n")[0] in streamed.out
    lines = path.read_bytes().splitlines(keepends=True)
    lines[len(lines) // 2] = (json.dumps(json.loads(lines[len(lines) // 2]), separators=(", ", ": ")) + "\n").encode()
    path.write_bytes(b"".join(lines))
    assert save_commands.replay(headless) == 0
    assert read_whole == [path] and capsys.readouterr() == streamed


def test_replay_headless_of_one_path_reads_no_path_and_a_path_holds_no_prose(tmp_path: Path, capsys, monkeypatch):
    """A replay of a story with one path shows all of it: the story is read twice (judged, replayed) and
    never folded whole to find a path's turns (that fold held every turn's prose: 64 MB at 20,000 turns
    against verify's 47). A story with branches folds its path's turn numbers, without their prose."""
    import argparse
    import math

    from storyloom.saves import export
    from storyloom.tui.cli import save_commands

    path, _, _ = played_save(tmp_path / "s.jsonl", _commands(30))
    folded: list[list[object]] = []
    whole = export.StoryLedger.fold

    def fold(ledger, events):
        events = list(events)
        folded.append(events)
        return whole(ledger, events)

    monkeypatch.setattr(export.StoryLedger, "fold", fold)
    headless = argparse.Namespace(save=str(path), speed=math.inf, headless=True, branch=None)
    assert save_commands.replay(headless) == 0
    assert folded == []  # one path: nothing folded beside the judged reading and the replay
    assert save_commands.replay(argparse.Namespace(**{**vars(headless), "branch": 1})) == 0
    assert folded == []
    branched, _, _ = played_save(tmp_path / "b.jsonl", [*_commands(12), "/branch 4", "look", "wait"])
    capsys.readouterr()
    assert save_commands.replay(argparse.Namespace(**{**vars(headless), "save": str(branched)})) == 0
    assert "replaying branch 2 of 2" in capsys.readouterr().err
    assert folded and all(getattr(event, "narrative", "") == "" for event in folded[-1])
