"""Branches in the app: ctrl+b on a focused committed turn continues from it on a new branch (the
transcript shows the path up to it, the side panel the world after it), ctrl+t opens the story tree,
and choosing a branch there plays it where it was left. Printable keys still type into the input."""

from __future__ import annotations

from typing import Any

from storyloom.tui.screens.new_branch import NewBranchScreen
from storyloom.tui.screens.story_tree import StoryTreeScreen
from storyloom.tui.testing.narrators import GatedReply, turn_text
from storyloom.tui.testing.pilot import until
from tests.test_tui_snapshots import scene, send, settled, snapshot  # noqa: F401 - the fixture redirects SVGs

TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
GO_NORTH = [{"op": "replace", "path": "/location", "value": "path"}]
TAKE_KEY = [{"op": "replace", "path": "/items/key", "value": "player"}]
STEPS = [
    ("take lamp", "You lift the brass lamp from the rocks.", TAKE_LAMP),
    ("north", "You go north, up the Cliff Path.", GO_NORTH),
    ("take key", "You take the iron key, cold in your hand.", TAKE_KEY),
]
STAY = ("wait", "You wait on the shore; the waves go on.", [])


def _app() -> Any:
    return scene(*[GatedReply(turn_text(prose, patch)) for _, prose, patch in [*STEPS, STAY]])


async def _played_and_branched(pilot: Any) -> None:
    app = pilot.app
    for command, _, _ in STEPS:
        await send(pilot, command)
        await settled(pilot)
    app.game.message(1).focus(scroll_visible=False)
    await pilot.press("ctrl+b")
    await until(pilot, lambda: app.game.play.story.ledger.branch == 2)
    await send(pilot, STAY[0])
    await settled(pilot)


async def test_ctrl_b_continues_from_a_focused_turn_and_the_tree_switches_back() -> None:
    app = _app()
    async with app.run_test(size=(100, 30)) as pilot:
        for command, _, _ in STEPS:
            await send(pilot, command)
            await settled(pilot)
        session = app.game.play.story
        after_three = session.state
        app.game.message(1).focus(scroll_visible=False)
        await pilot.press("ctrl+b")
        await until(pilot, lambda: session.ledger.branch == 2)
        await pilot.pause()
        assert session.state["location"] == "shore" and session.state["items"]["lamp"] == "player"
        assert [i for i, _ in app.game.committed_exchanges()] == ["take lamp"]  # the path up to the fork
        assert "Rocky Shore" in app.game.side_panel.render().plain  # the world after turn 1
        await pilot.press(*"wai")  # printable keys type into the input line
        assert app.game.command_input.value == "wai"
        await pilot.press("t", "enter")
        await settled(pilot)
        assert [i for i, _ in app.game.committed_exchanges()] == ["take lamp", "wait"]

        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(app.screen, StoryTreeScreen))
        await pilot.press("up", "enter")
        await until(pilot, lambda: session.ledger.branch == 1 and not isinstance(app.screen, StoryTreeScreen))
        await pilot.pause()
        assert session.state == after_three
        assert [i for i, _ in app.game.committed_exchanges()] == ["take lamp", "north", "take key"]
        assert session.ledger.branch_count == 2  # nothing deleted


async def test_ctrl_b_without_a_focused_committed_turn_says_how() -> None:
    app = _app()
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await settled(pilot)
        await pilot.press("ctrl+b")
        await pilot.pause()
        assert app.game.play.story.ledger.branch_count == 1
        assert any("ctrl+b continues from it" in str(n.message) for n in app._notifications)


def test_story_tree_80x24(snap_compare):
    """The tree of a story with two branches: each one's fork (turn and command), turns, and the one
    being played; the footer offers ctrl+t once there is a second branch."""

    async def run_before(pilot: Any) -> None:
        await _played_and_branched(pilot)
        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(pilot.app.screen, StoryTreeScreen))
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=(80, 24), run_before=run_before)


async def test_the_replay_screen_follows_a_branched_save_to_the_branch_played_last(tmp_path) -> None:
    from storyloom.saves.reader import load_save
    from storyloom.saves.replay import Replayer, replay_plan
    from storyloom.tui.app import ReplayApp
    from tests.test_saves_kit import played_save_async

    walk = ["look", "take rope", "north", "/branch 1", "north", "/switch 1"]
    path, live, _ = await played_save_async(tmp_path / "s.jsonl", walk, faults=0.0)
    app = ReplayApp(Replayer(replay_plan(load_save(path), speed=1000.0)), blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.replay.finished or bool(app.replay.problem), limit=2000)
        assert app.replay.problem == ""
        assert [i for i, _ in app.replay.committed_exchanges()] == ["look", "take rope", "north"]
        assert app.replay.play.story.state == live.state
        await pilot.press("q")
    assert app.replay.exit_code == 0


async def test_the_issue_walk_in_the_app(tmp_path, capsys) -> None:
    """Six turns, ctrl+b on turn 2, three turns there, back to branch 1 from the tree, quit; the
    resumed game's tree lists both; diff shows the fork at turn 2; verify says sound."""
    from storyloom.engine.lifecycle import Session
    from storyloom.engine.narrators.offline import OfflineNarrator
    from storyloom.engine.packs import load_pack
    from storyloom.saves.format import SaveHeader
    from storyloom.saves.resume import resume
    from storyloom.saves.writer import Journal
    from storyloom.tui.app import StoryloomApp
    from storyloom.tui.cli import main

    pack, path = load_pack("lighthouse"), tmp_path / "walk.jsonl"
    narrator = OfflineNarrator(pack, seed=7, faults=0.0)
    session = Session(pack, narrator)
    journal = Journal.create(path, SaveHeader.for_session(pack, narrator, seed=7))
    app = StoryloomApp(session, on_event=journal.record, blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        for command in ["look", "take rope", "north", "up", "west", "take key"]:
            await send(pilot, command)
            await settled(pilot)
        app.game.message(2).focus(scroll_visible=False)
        await pilot.press("ctrl+b")
        await until(pilot, lambda: session.ledger.branch == 2)
        for command in ["north", "up", "take lamp"]:
            await send(pilot, command)
            await settled(pilot)
        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(app.screen, StoryTreeScreen))
        await pilot.press("up", "enter")
        await until(pilot, lambda: session.ledger.branch == 1 and not isinstance(app.screen, StoryTreeScreen))
        await pilot.pause()
        assert [i for i, _ in app.game.committed_exchanges()][-2:] == ["west", "take key"]
    journal.close()

    resumed = resume(path, OfflineNarrator(pack, seed=7, faults=0.0))
    app = StoryloomApp(resumed.session, on_event=resumed.journal.record, blink=False, past=lambda: resumed.past)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(app.screen, StoryTreeScreen))
        labels = [str(option.prompt) for option in app.screen.query_one("OptionList")._options]
        assert labels == [
            "Branch 1  the story as first played · 6 turns · being played",
            "Branch 2  from turn 2 of branch 1 (> take rope) · 5 turns",
        ]
        await pilot.press("escape")
    resumed.journal.close()
    assert main(["diff", str(path), "--branch", "1", "--branch", "2"]) == 1
    assert "They share 2 turns and fork after turn 2 (> take rope)." in capsys.readouterr().out
    assert main(["verify", str(path)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("sound")


async def test_ctrl_g_on_an_earlier_turn_asks_then_writes_another_version_of_it_on_a_new_branch() -> None:
    """Another version of a turn the next command fixed continues from that turn on a new branch: the
    player is asked first (Esc changes nothing); then the transcript shows the path to the turn with
    its new version, the world is that version's, and the old branch is kept whole."""
    other = "The lamp is wedged fast between the rocks; you leave it where it is."
    app = scene(*[GatedReply(turn_text(prose, patch)) for _, prose, patch in STEPS], GatedReply(turn_text(other, [])))
    async with app.run_test(size=(100, 30)) as pilot:
        for command, _, _ in STEPS:
            await send(pilot, command)
            await settled(pilot)
        session = app.game.play.story
        after_three = session.state
        app.game.message(1).focus(scroll_visible=False)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: isinstance(app.screen, NewBranchScreen))
        assert app.screen.question().startswith("Turns 2 and 3 were played after this version. To write another one")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, NewBranchScreen))
        assert session.ledger.branch_count == 1 and session.state == after_three
        assert [i for i, _ in app.game.committed_exchanges()] == ["take lamp", "north", "take key"]

        app.game.message(1).focus(scroll_visible=False)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: isinstance(app.screen, NewBranchScreen))
        await pilot.press("enter")
        await until(pilot, lambda: session.ledger.branch == 2)
        await settled(pilot)
        assert app.game.committed_exchanges() == [("take lamp", other)]  # the path to the turn, its new version
        message = app.game.latest_message()
        assert message is not None and message.turn == 1 and message.status.plain_text == "‹ 2/2 ›"
        assert session.state["items"]["lamp"] == "shore" and session.state["location"] == "shore"
        assert "brass lamp" not in app.game.side_panel.render().plain.split("Carrying")[-1]
        assert [(t.turn, t.chosen) for t in session.ledger.path(1)] == [(1, 1), (2, 1), (3, 1)]  # kept whole

        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(app.screen, StoryTreeScreen))
        await pilot.press("up", "enter")
        await until(pilot, lambda: session.ledger.branch == 1 and not isinstance(app.screen, StoryTreeScreen))
        await pilot.pause()
        assert session.state == after_three
        assert app.game.committed_exchanges() == [(command, prose) for command, prose, _ in STEPS]


async def test_an_arrow_on_an_earlier_turn_with_versions_continues_from_the_version_browsed_to() -> None:
    """← on a fixed turn with two versions asks, then plays version 1 on a new branch (prose and world);
    a letter pressed on the focused message still types into the input line."""
    kept = "The lamp stays wedged between the rocks; you leave it be."
    app = scene(
        GatedReply(turn_text(STEPS[0][1], TAKE_LAMP)),
        GatedReply(turn_text(kept, [])),
        GatedReply(turn_text(STEPS[1][1], GO_NORTH)),
    )
    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await settled(pilot)
        await pilot.press("ctrl+g")
        await settled(pilot)
        await send(pilot, "north")
        await settled(pilot)
        session = app.game.play.story
        message = app.game.message(1)
        assert message is not None and message.status.plain_text == "version 2 of 2"
        message.focus(scroll_visible=False)
        await pilot.pause()
        await pilot.press("x")  # printable keys type, whatever has focus
        assert app.game.command_input.value == "x" and session.ledger.branch_count == 1
        message.focus(scroll_visible=False)
        await pilot.pause()
        await pilot.press("left")
        await until(pilot, lambda: isinstance(app.screen, NewBranchScreen))
        assert app.screen.question().startswith("Turn 2 was played after this version. To show version 1, the story")
        await pilot.press("enter")
        await until(pilot, lambda: session.ledger.branch == 2)
        await pilot.pause()
        assert app.game.committed_exchanges() == [("take lamp", STEPS[0][1])]
        assert session.state["items"]["lamp"] == "player" and session.state["location"] == "shore"
        latest = app.game.latest_message()
        assert latest is not None and latest.status.plain_text == "‹ 1/2 ›"
        assert [(t.turn, t.chosen) for t in session.ledger.path(1)] == [(1, 2), (2, 1)]
        assert session.ledger.path(1)[0].shown.narrative == kept


def _details_text(app: Any) -> str:
    from textual.widgets import Static

    return "\n".join(str(static.render()) for static in app.screen.query(Static))


async def test_turns_with_issues_keep_their_details_after_a_branch_and_a_switch_draw_the_path_anew() -> None:
    """ctrl+d shows what the corrections did on a turn drawn anew by a branch or a switch, as it did
    before (and as after a resume): the fork turn, latest on the new branch; the old branch's latest;
    and a folded turn's details are offered."""
    from storyloom.tui.screens.issue_details import IssueDetailsScreen

    nope = [{"op": "replace", "path": "/items/nope", "value": 1}]
    app = scene(
        GatedReply(turn_text(STEPS[0][1], nope)),
        GatedReply(turn_text(None, TAKE_LAMP)),
        GatedReply(turn_text(STEPS[1][1], GO_NORTH)),
        GatedReply(turn_text(STEPS[2][1], nope)),
        GatedReply(turn_text(None, TAKE_KEY)),
    )

    async def details_of(pilot: Any, turn: int) -> str:
        await pilot.press("ctrl+d")
        await until(pilot, lambda: isinstance(app.screen, IssueDetailsScreen))
        await pilot.pause()
        text = _details_text(app)
        assert f"Turn {turn} · details" == app.screen.query_one("Vertical").border_title
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, IssueDetailsScreen))
        return text

    async with app.run_test(size=(100, 30)) as pilot:
        for command, _, _ in STEPS:
            await send(pilot, command)
            await settled(pilot)
        session = app.game.play.story
        app.game.message(1).focus(scroll_visible=False)
        await pilot.press("ctrl+b")
        await until(pilot, lambda: session.ledger.branch == 2)
        await pilot.pause()
        text = await details_of(pilot, 1)
        assert "committed after correction" in text and "/items/nope" in text

        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(app.screen, StoryTreeScreen))
        await pilot.press("up", "enter")
        await until(pilot, lambda: session.ledger.branch == 1 and not isinstance(app.screen, StoryTreeScreen))
        await pilot.pause()
        text = await details_of(pilot, 3)
        assert "committed after correction" in text and "/items/nope" in text
        assert [r.turn for r in app.game.folded_with_details()] == [1]  # the folded turn's, in the palette


def test_another_version_of_an_earlier_turn_asks_80x24(snap_compare):
    """ctrl+g on turn 1 after three turns: the question over the transcript, naming the turns played
    after it, the new branch, and that branch 1 stays whole."""

    async def run_before(pilot: Any) -> None:
        for command, _, _ in STEPS:
            await send(pilot, command)
            await settled(pilot)
        pilot.app.game.message(1).focus(scroll_visible=False)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: isinstance(pilot.app.screen, NewBranchScreen))
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=(80, 24), run_before=run_before)


async def test_a_resumed_story_s_turns_keep_their_details_when_a_branch_draws_them_again(tmp_path) -> None:
    """The details a resumed screen got from the save survive ctrl+b drawing the path anew."""
    from storyloom.engine.narrators.offline import OfflineNarrator
    from storyloom.engine.packs import load_pack
    from storyloom.saves.resume import resume
    from storyloom.tui.app import StoryloomApp
    from tests.test_saves_kit import played_save_async

    walk = ["look", "take rope", "north", "up", "look", "down", "south"]
    path, _, _ = await played_save_async(tmp_path / "s.jsonl", walk, faults=0.5)
    pack = load_pack("lighthouse")
    resumed = resume(path, OfflineNarrator(pack, seed=7, faults=0.0), pack=pack)
    app = StoryloomApp(resumed.session, on_event=resumed.journal.record, blink=False, past=lambda: resumed.past)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        latest = app.game.latest_message()
        folded = sorted(r.turn for r in app.game.folded_with_details())
        assert folded == [4, 5] and latest is not None  # the walk's corrected turns (seed 7), folded
        latest.focus(scroll_visible=False)
        await pilot.press("ctrl+b")
        await until(pilot, lambda: app.game.play.story.ledger.branch == 2)
        await pilot.pause()
        assert sorted(r.turn for r in app.game.folded_with_details()) == folded
    resumed.journal.close()


async def test_each_version_of_the_fork_turn_keeps_its_own_details_on_the_new_branch() -> None:
    """Version 1 of turn 1 was corrected, version 2 was not; after ← on the fixed turn continues from
    version 1 on a new branch, ctrl+d shows version 1's correction, and → to version 2 shows none."""
    from storyloom.tui.screens.issue_details import IssueDetailsScreen

    nope = [{"op": "replace", "path": "/items/nope", "value": 1}]
    kept = "The lamp stays wedged between the rocks; you leave it be."
    app = scene(
        GatedReply(turn_text(STEPS[0][1], nope)),
        GatedReply(turn_text(None, TAKE_LAMP)),
        GatedReply(turn_text(kept, [])),
        GatedReply(turn_text(STEPS[1][1], GO_NORTH)),
    )

    async def details(pilot: Any) -> str:
        await pilot.press("ctrl+d")
        await until(pilot, lambda: isinstance(app.screen, IssueDetailsScreen))
        await pilot.pause()
        text = _details_text(app)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, IssueDetailsScreen))
        return text

    async with app.run_test(size=(100, 30)) as pilot:
        await send(pilot, "take lamp")
        await settled(pilot)
        await pilot.press("ctrl+g")
        await settled(pilot)
        await send(pilot, "north")
        await settled(pilot)
        app.game.message(1).focus(scroll_visible=False)
        await pilot.press("left")
        await until(pilot, lambda: isinstance(app.screen, NewBranchScreen))
        await pilot.press("enter")
        await until(pilot, lambda: app.game.play.story.ledger.branch == 2)
        await pilot.pause()
        assert "committed after correction" in await details(pilot)
        message = app.game.latest_message()
        assert message is not None and message.turn == 1
        message.focus(scroll_visible=False)
        await pilot.press("right")
        await pilot.pause()
        assert message.prose.text == kept
        assert not message.has_details  # version 2 had no issues
        assert "Outcome: committed. No corrections: nothing to show." in await details(pilot)


async def test_replay_branch_k_in_the_ui_shows_that_path_only(tmp_path) -> None:
    """`storyloom replay SAVE --branch 2`: every step is played and compared, only branch 2's turns drawn."""
    from storyloom.saves.reader import load_save
    from storyloom.saves.replay import Replayer, replay_plan
    from storyloom.tui.app import ReplayApp
    from storyloom.tui.cli.save_commands import _path_of
    from tests.test_saves_kit import played_save_async

    walk = ["look", "take rope", "north", "/branch 1", "north", "/switch 1"]
    path, _, _ = await played_save_async(tmp_path / "s.jsonl", walk, faults=0.0)
    only = _path_of(path, 2)
    assert only == {1, 4}
    app = ReplayApp(Replayer(replay_plan(load_save(path), speed=1000.0)), blink=False, only=only)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.replay.finished or bool(app.replay.problem), limit=2000)
        assert app.replay.problem == ""
        assert app.replay.message(1) is not None and app.replay.message(4) is not None
        assert app.replay.message(2) is None and app.replay.message(3) is None
        assert app.replay.message(4).prose.text  # the branch's own "north", drawn
        await pilot.press("q")
    assert app.replay.exit_code == 0
