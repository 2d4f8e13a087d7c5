"""A resumed story is on screen at once: its newest turns are read from the save's end and painted
while the save is read and checked, and its older turns are folded in behind the first frame."""

from __future__ import annotations

import threading
from pathlib import Path

from storyloom.engine.lifecycle import Session
from storyloom.engine.packs import load_pack, parse_pack
from storyloom.saves import preview
from storyloom.saves.preview import newest_turns, story_source
from storyloom.tui.app import Opening, StoryloomApp
from storyloom.tui.screens.game import GameScreen
from storyloom.tui.screens.opening import OpeningScreen
from storyloom.tui.testing.narrators import GatedNarrator
from storyloom.tui.testing.pilot import until
from storyloom.tui.widgets.archived_turns import ArchivedTurns
from tests.conftest import SHORE_PACK
from tests.test_saves_kit import played_save, played_save_async

WALK = ["take rope", "north", "look", "south", "drop rope", "look"]


def _shown(session: Session, count: int) -> list[tuple[str, str]]:
    return [(x.player_input, x.turn.narrative) for x in session.history][-count:]


def test_a_save_s_newest_turns_and_story_are_read_from_its_ends(tmp_path: Path) -> None:
    path, session, _ = played_save(tmp_path / "s.jsonl", WALK, faults=0.5)
    assert newest_turns(path, 3) == _shown(session, 3)
    assert newest_turns(path, 100) == _shown(session, 100)  # fewer than asked: all of them
    assert story_source(path) == "lighthouse"


def test_an_undone_turn_is_not_among_the_newest(tmp_path: Path) -> None:
    path, session, _ = played_save(tmp_path / "s.jsonl", [*WALK, "/undo"], faults=0.0)
    assert newest_turns(path, 2) == _shown(session, 2)
    assert session.history[-1].player_input == "drop rope"


def test_only_the_end_of_a_large_save_is_read(tmp_path: Path, monkeypatch) -> None:
    path, session, _ = played_save(tmp_path / "s.jsonl", WALK, faults=0.0)
    monkeypatch.setattr(preview, "TAIL_MAX", 64 * 1024)
    big = tmp_path / "big.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    # a first line the size of a huge story, then the records: the tail alone answers
    big.write_bytes(lines[0] + b'{"kind": "note", "data": "' + b"x" * (1 << 20) + b'"}\n' + b"".join(lines[1:]))
    assert newest_turns(big, 2) == _shown(session, 2)
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"not json\n" * 200_000)
    assert newest_turns(garbage, 2) == [] and story_source(garbage) is None


INTRO = "Grey water, black rocks."


async def test_a_resumed_save_shows_its_newest_turns_while_it_is_read_and_checked():
    loaded = threading.Event()

    def load() -> Session:
        loaded.wait(10)
        return Session(parse_pack(SHORE_PACK, "shore.toml"), GatedNarrator([]))

    newest = (("look", "The tide is out and the lamp is dark."), ("north", "A path climbs the cliff."))
    app = StoryloomApp(Opening("The Shore", INTRO, load, newest), blink=False)
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, OpeningScreen) and app.session is None
        painted = str(app.screen.query_one(ArchivedTurns).render())
        assert "› north" in painted and "A path climbs the cliff." in painted
        assert painted.index("lamp is dark") < painted.index("climbs the cliff")  # oldest first, as the game shows
        loaded.set()
        await until(pilot, lambda: isinstance(app.screen, GameScreen))


async def test_a_long_resumed_story_shows_its_newest_turns_first_and_folds_in_every_older_one(tmp_path: Path):
    _, session, _ = await played_save_async(tmp_path / "s.jsonl", WALK * 25, faults=0.0)
    total = len(session.history)
    app = StoryloomApp(session, blink=False)
    async with app.run_test(size=(110, 30)) as pilot:
        await pilot.pause()
        game = app.game
        blocks = list(game.transcript.query(ArchivedTurns))
        newest, before = session.history[-1], session.history[-2]
        latest = game.latest_message()  # the newest turn is live: its versions can still change
        assert latest is not None and latest.prose.text == newest.turn.narrative
        assert before.turn.narrative.split("\n")[0][:30] in str(blocks[-1].render())
        assert len(game.committed_exchanges()) == total  # an export has the whole story at once
        folded = total - 1
        await until(pilot, lambda: sum(len(b.records) for b in game.transcript.query(ArchivedTurns)) == folded)
        blocks = list(game.transcript.query(ArchivedTurns))
        shown = [r.player_input for b in blocks for r in b.records]
        assert shown == [x.player_input for x in session.history[:-1]]  # in story order, none twice
        assert game.transcript.children[0].id == "intro"  # the intro stays on top


CHOSE_THEN_CANCELLED = ["look", "/regenerate", "/choose 1", "/cancel wait"]
"""`look`, ctrl+g, ← (version 1 of 2), then `wait` cancelled at once: the look turn is fixed with two versions."""


def test_a_resumed_turn_keeps_its_versions_after_a_choice_and_a_cancelled_command(tmp_path: Path) -> None:
    from storyloom.engine.narrators.offline import OfflineNarrator
    from storyloom.saves.resume import resume

    path, live, _ = played_save(tmp_path / "s.jsonl", CHOSE_THEN_CANCELLED, faults=0.0)
    assert live.versions is None  # the command played fixed the look turn, as live play shows it
    resumed = resume(path, OfflineNarrator(live.pack, seed=7))
    resumed.journal.close()
    assert [(p.turn, p.versions) for p in resumed.past] == [(1, (1, 2))]
    assert resumed.session.history[-1].turn.narrative == live.history[-1].turn.narrative  # version 1


async def test_the_resumed_screen_shows_the_version_line_of_a_fixed_turn(tmp_path: Path) -> None:
    from storyloom.engine.narrators.offline import OfflineNarrator
    from storyloom.saves.resume import resume

    path, _, _ = await played_save_async(tmp_path / "s.jsonl", CHOSE_THEN_CANCELLED, faults=0.0)
    resumed = resume(path, OfflineNarrator(load_pack("lighthouse"), seed=7))
    resumed.journal.close()
    app = StoryloomApp(resumed.session, blink=False, past=lambda: resumed.past)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        blocks = list(app.game.transcript.query(ArchivedTurns))
        assert "version 1 of 2" in "".join(str(b.render()) for b in blocks)


VERSIONED = [
    ["look", "take rope", "/regenerate", "/choose 2", "north"],
    ["look", "take rope", "/regenerate", "/choose 1", "north", "/regenerate"],
    ["look", "take rope", "/regenerate", "/choose 2", "north", "/regenerate", "/undo"],
    ["look", "take rope", "/regenerate", "/regenerate", "/choose 2", "/undo", "north"],
]
"""Stories whose turns have versions, choices among them and undos (the issue's: take rope, another
version, version 2 chosen; then others)."""


def test_the_newest_turns_are_each_turn_s_chosen_version_and_never_an_undone_one(tmp_path: Path) -> None:
    for number, commands in enumerate(VERSIONED):
        path, session, _ = played_save(tmp_path / f"v{number}.jsonl", commands, faults=0.0)
        assert newest_turns(path, 5) == _shown(session, 5), commands


async def test_the_resume_s_first_screen_shows_the_chosen_version_of_every_turn_and_no_undone_one(
    tmp_path: Path,
) -> None:
    path, session, _ = await played_save_async(tmp_path / "s.jsonl", VERSIONED[2], faults=0.0)
    loaded = threading.Event()

    def load() -> Session:
        loaded.wait(10)
        return session

    first = (session.pack.title, session.pack.intro, load, tuple(newest_turns(path, 5)))
    app = StoryloomApp(Opening(*first), blink=False)
    async with app.run_test(size=(110, 40)) as pilot:
        await pilot.pause()
        painted = str(app.screen.query_one(ArchivedTurns).render())
        for exchange in session.history:  # look, then take rope in its chosen version 2
            assert exchange.turn.narrative.split("\n")[0][:40] in painted
        assert painted.count("›") == len(session.history) == 2  # the undone `north` is not there
        loaded.set()
        await until(pilot, lambda: isinstance(app.screen, GameScreen))
