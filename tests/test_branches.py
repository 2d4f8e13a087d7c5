"""A story is a tree: continue from any committed turn on a new branch, keep the old path whole,
switch between them; each branch carries its own world, versions, undo and ending."""

from __future__ import annotations

import pytest

from storyloom.engine.ledger import world_after
from storyloom.engine.lifecycle import BranchRefused, Session
from storyloom.engine.state import initial_state, state_hash
from tests.conftest import collect, structured

TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
GO_NORTH = [{"op": "replace", "path": "/location", "value": "path"}]
TAKE_KEY = [{"op": "replace", "path": "/items/key", "value": "player"}]
OPEN_DOOR = [{"op": "replace", "path": "/flags/door_open", "value": True}]
GO_UP = [{"op": "replace", "path": "/location", "value": "tower"}]
GO_SOUTH = [{"op": "replace", "path": "/location", "value": "shore"}]

FOUR = [
    ("take lamp", structured("You lift the brass lamp.", TAKE_LAMP)),
    ("north", structured("You go north, up the Cliff Path.", GO_NORTH)),
    ("take key", structured("You take the iron key.", TAKE_KEY)),
    ("south", structured("You go south, back to the Rocky Shore.", GO_SOUTH)),
]


async def _play(session: Session, commands: list[str]) -> dict[int, dict]:
    """Play commands; the world each committed turn left, by turn number."""
    after = {}
    for command in commands:
        events = await collect(session.play(command))
        committed = [e for e in events if e.event == "turn_committed"]
        assert committed, [e.event for e in events]
        after[committed[-1].turn] = committed[-1].state
    return after


async def test_a_branch_starts_from_exactly_the_world_after_its_fork_turn(pack, script):
    session, narrator = script(
        pack, *[reply for _, reply in FOUR], structured("You go south, back to the Rocky Shore.", GO_SOUTH)
    )
    after = await _play(session, [command for command, _ in FOUR])
    event = session.branch(2)
    assert (event.event, event.turn, event.branch, event.parent) == ("branch_started", 2, 2, 1)
    assert session.state == after[2] and event.state_hash == state_hash(after[2])
    assert [x.number for x in session.history] == [1, 2]
    await _play(session, ["south"])
    assert narrator.requests[-1].state == after[2]  # the narrator is asked from the fork's world
    assert [t.turn for t in session.ledger.path()] == [1, 2, 5]
    assert [t.turn for t in session.ledger.path(1)] == [1, 2, 3, 4]
    assert session.state["items"]["key"] == "path"  # branch 2 never took the key
    switched = session.switch(1)
    assert (switched.branch, switched.turn) == (1, 4)
    assert session.state == after[4] and [x.number for x in session.history] == [1, 2, 3, 4]
    views = session.ledger.branches()
    assert [(b.number, b.parent, b.fork, b.command, b.standing, b.latest, b.current) for b in views] == [
        (1, 0, 0, "", 4, 4, True),
        (2, 1, 2, "north", 3, 5, False),
    ]


async def test_undo_on_a_branch_never_touches_another(pack, script):
    session, _ = script(pack, *[reply for _, reply in FOUR], structured("You take the iron key.", TAKE_KEY))
    after = await _play(session, [command for command, _ in FOUR])
    session.branch(2)
    await _play(session, ["take key"])
    assert session.undo() is not None and session.undo() is not None
    assert session.state == after[1] and [t.turn for t in session.ledger.path()] == [1]
    session.switch(1)
    assert session.state == after[4] and [t.turn for t in session.ledger.path()] == [1, 2, 3, 4]
    assert session.undo() is not None and session.state == after[3]
    session.switch(2)
    assert session.state == after[1]


async def test_an_ending_on_one_branch_does_not_end_another(pack, script):
    session, _ = script(
        pack,
        structured("You lift the brass lamp.", TAKE_LAMP),
        structured("You go north, up the Cliff Path.", GO_NORTH),
        structured("You push the door open.", OPEN_DOOR),
        structured("You climb up to the Lamp Room.", GO_UP),
        structured("You go south, back to the Rocky Shore.", GO_SOUTH),
    )
    await _play(session, ["take lamp", "north", "open door", "up"])
    assert session.ending is not None and session.ending.turn == 4
    session.branch(3)
    assert session.ending is None
    await _play(session, ["south"])
    assert session.ending is None and session.state["location"] == "shore"
    session.switch(1)
    assert session.ending is not None and session.ending.turn == 4


async def test_versions_of_an_earlier_turn_are_browsed_on_a_branch_and_the_old_path_keeps_its_own(pack, script):
    session, _ = script(
        pack,
        structured("You lift the brass lamp.", TAKE_LAMP),
        structured("You leave the brass lamp where it lies.", []),
        structured("You go north, up the Cliff Path.", GO_NORTH),
        structured("You stay on the shore, watching the waves.", []),
    )
    await collect(session.play("take lamp"))
    await collect(session.regenerate())
    session.choose(1)
    await _play(session, ["north"])
    assert session.versions is not None and session.versions.turn == 2  # turn 1 is fixed on branch 1
    session.branch(1)
    assert session.versions is not None and len(session.versions.alternatives) == 2
    chosen = session.choose(2)
    assert chosen is not None and session.state == initial_state(pack)
    assert session.ledger.latest is not None and session.ledger.latest.chosen == 2
    events = await collect(session.regenerate())
    assert events[-1].event == "turn_committed" and len(session.versions.alternatives) == 3
    session.switch(1)
    first = session.ledger.path()[0]
    assert (first.chosen, len(first.versions)) == (1, 2)
    assert session.state["items"]["lamp"] == "player" and session.state["location"] == "path"


async def test_a_branch_refused_says_why_and_changes_nothing(pack, script):
    session, _ = script(pack, *[reply for _, reply in FOUR[:2]])
    await _play(session, ["take lamp", "north"])
    before = session.state
    with pytest.raises(BranchRefused, match="turn 7 is not on the path of branch 1 \\(its turns: 1, 2\\)"):
        session.branch(7)
    with pytest.raises(BranchRefused, match="there is no branch 3"):
        session.switch(3)
    with pytest.raises(BranchRefused, match="branch 1 is the one being played"):
        session.switch(1)
    assert session.state == before and session.ledger.branch_count == 1
    session.branch(0)
    assert session.state == initial_state(pack) and session.history == () and not session.can_undo


async def test_the_ledger_gives_the_world_after_any_turn_of_any_branch(pack, script):
    session, _ = script(pack, *[reply for _, reply in FOUR], structured("You take the iron key.", TAKE_KEY))
    after = await _play(session, [command for command, _ in FOUR])
    session.branch(2)
    after.update(await _play(session, ["take key"]))
    ledger = session.ledger
    assert ledger.branch == 2 and ledger.branch_count == 2
    start = initial_state(pack)
    for turn in (1, 2, 3, 4):
        assert world_after(start, ledger.path(1), turn) == after[turn]
    assert world_after(start, ledger.path(2)) == after[5] == session.state
    assert world_after(start, ledger.path(2), 2) == after[2]
