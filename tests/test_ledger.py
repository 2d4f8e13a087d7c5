"""The story ledger is the one fold of a save's events: on any sequence of commands, corrections,
other versions, choices, undos, failures and cancels, it says what a plain list of turns says, it
never changes a ledger already made, and every reader of a save (export, preview, resume, verify,
the listing) tells the same story it does."""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storyloom.engine.events import (
    AlternativeChosen,
    AlternativeStarted,
    CorrectionStarted,
    Event,
    TurnCancelled,
    TurnCommitted,
    TurnFailed,
    TurnStarted,
    TurnUndone,
)
from storyloom.engine.ledger import StoryLedger
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.saves.export import read_story
from storyloom.saves.format import Tally
from storyloom.saves.preview import newest_turns
from storyloom.saves.reader import load_save
from storyloom.saves.resume import resume
from storyloom.saves.summary import summarize_save
from storyloom.saves.verify import open_pack
from tests.test_replay_properties import ACTIONS, _play_safely
from tests.test_saves_kit import played_save, rewrite_records

STEPS = st.lists(
    st.sampled_from(["command", "correct", "commit", "version", "choose", "undo", "fail", "cancel"]), max_size=40
)


@dataclass
class _Plain:
    """The story as a plain list, changed in place: the specification the ledger is held to."""

    standing: list[list[object]] = field(default_factory=list)  # [turn, input, [narratives], chosen]
    undone: list[list[object]] = field(default_factory=list)
    flight: tuple[int, str, int] | None = None  # (turn, input, version asked for: 0 for a new turn)
    pending: int | None = None
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(["fail", "cancel", "correct"], 0))


def _events(steps: list[str], choices: list[int]) -> tuple[list[Event], _Plain]:
    """Events as a session could record them for `steps`, and the plain story they tell."""
    plain, events, turn = _Plain(), [], 0
    for number, step in enumerate(steps):
        latest = plain.standing[-1] if plain.standing else None
        if step == "command":
            turn += 1
            plain.flight = (turn, f"cmd {turn}", 0)
            events.append(TurnStarted(turn=turn, attempt=1, player_input=f"cmd {turn}"))
        elif step == "version" and latest is not None and plain.flight is None:
            plain.flight = (int(latest[0]), str(latest[1]), len(latest[2]) + 1)  # type: ignore[arg-type]
            events.append(AlternativeStarted(turn=plain.flight[0], alternative=plain.flight[2]))
        elif step == "commit" and plain.flight is not None:
            at, said, version = plain.flight
            text = f"turn {at} version {version or 1}"
            if version and latest is not None:
                latest[2].append(text)  # type: ignore[attr-defined]
                latest[3] = version
            else:
                plain.standing.append([at, said, [text], 1])
                plain.pending = None
            plain.flight = None
            events.append(TurnCommitted(turn=at, state_hash=f"h{number}", narrative=text))
        elif step in ("fail", "cancel") and plain.flight is not None:
            at, _, version = plain.flight
            if not version:
                plain.pending = at
            plain.counts[step] += 1
            plain.flight = None
            events.append(TurnFailed(turn=at, issues=()) if step == "fail" else TurnCancelled(turn=at))
        elif step == "correct" and plain.flight is not None:
            plain.counts["correct"] += 1
            events.append(CorrectionStarted(turn=plain.flight[0], attempt=2, budget=2))
        elif step == "choose" and latest is not None and plain.flight is None:
            chosen = choices[number % len(choices)] % len(latest[2]) + 1  # type: ignore[arg-type]
            latest[3] = chosen
            events.append(AlternativeChosen(turn=int(latest[0]), alternative=chosen, alternatives=0, state_hash=""))  # type: ignore[arg-type]
        elif step == "undo" and latest is not None and plain.flight is None:
            plain.undone.append(plain.standing.pop())
            plain.pending = None
            events.append(TurnUndone(turn=int(latest[0]), state_hash=""))  # type: ignore[arg-type]
    return events, plain


def _told(turns) -> list[tuple[int, str, str, int]]:
    return [(t.turn, t.player_input, t.shown.narrative, len(t.versions)) for t in turns]


@given(steps=STEPS, choices=st.lists(st.integers(0, 9), min_size=1, max_size=5), keep=st.integers(1, 6))
def test_the_ledger_tells_the_story_a_plain_list_of_turns_tells(steps, choices, keep) -> None:
    events, plain = _events(steps, choices)
    ledger = StoryLedger().fold(events)
    expected = [(t[0], t[1], t[2][t[3] - 1], len(t[2])) for t in plain.standing]  # type: ignore[index]
    assert _told(ledger.turns()) == expected
    assert [t.turn for t in ledger.undone_turns()] == [t[0] for t in plain.undone]
    assert ledger.standing == len(plain.standing) and ledger.undone == len(plain.undone)
    assert ledger.committed == ledger.standing + ledger.undone
    assert (ledger.failures, ledger.cancels, ledger.corrections) == tuple(plain.counts.values())
    assert (ledger.in_flight is None) == (plain.flight is None)
    assert (ledger.pending.turn if ledger.pending else None) == plain.pending

    bounded = StoryLedger(keep=keep).fold(events)  # a long save's reader holds the newest turns only
    held = _told(bounded.turns())
    assert held == expected[len(expected) - len(held) :]
    counts = ("standing", "committed", "undone", "versions", "choices", "failures", "cancels", "next_turn")
    assert [getattr(bounded, c) for c in counts] == [getattr(ledger, c) for c in counts]


def test_a_ledger_holding_one_turn_counts_a_version_and_a_choice_of_a_turn_it_no_longer_holds() -> None:
    steps = ["command", "commit"] * 3 + ["undo", "version", "commit", "choose"]
    events, plain = _events(steps, [0])
    held, whole = StoryLedger(keep=1).fold(events), StoryLedger().fold(events)
    assert (held.standing, held.committed, held.versions, held.choices) == (2, 3, 1, 1)
    assert (whole.standing, whole.committed, whole.versions, whole.choices) == (2, 3, 1, 1)
    assert whole.turns()[-1].chosen == plain.standing[-1][3]


@given(steps=STEPS, choices=st.lists(st.integers(0, 9), min_size=1, max_size=5), cut=st.integers(0, 40))
def test_applying_an_event_never_changes_a_ledger_already_made(steps, choices, cut) -> None:
    events, _ = _events(steps, choices)
    halfway = StoryLedger().fold(events[:cut])
    before = (_told(halfway.turns()), _told(halfway.undone_turns()), halfway.standing, halfway.in_flight)
    first, second = halfway.fold(events[cut:]), halfway.fold(events[cut:])
    assert (_told(halfway.turns()), _told(halfway.undone_turns()), halfway.standing, halfway.in_flight) == before
    assert first == second


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    actions=st.lists(ACTIONS, min_size=1, max_size=10), seed=st.integers(0, 1000), faults=st.sampled_from([0.0, 0.5])
)
def test_every_reader_of_a_save_tells_the_story_its_ledger_tells(actions, seed, faults) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path, live, events = asyncio.run(_play_safely(Path(folder) / "s.jsonl", actions, seed, faults))
        ledger = StoryLedger().fold(events)
        told = [(t.player_input, t.shown.narrative) for t in ledger.turns()]
        assert told == [(x.player_input, x.turn.narrative) for x in live.history]

        assert newest_turns(path, 100) == told  # the resume's first screen
        save = load_save(path)
        story = read_story(path, save.header, save.records, open_pack(save.header, path, None))
        exported = [(t.player_input, t.narrative) for t in story.turns if t.chosen and not t.undone]
        assert exported == told
        assert sum(t.undone and t.chosen for t in story.turns) == ledger.undone
        built = story.built  # verify's fold of the file, against the ledger of the live events
        counts = ("committed", "undone", "failures", "cancels", "corrections", "versions", "choices", "next_turn")
        assert [getattr(built.ledger, c) for c in counts] == [getattr(ledger, c) for c in counts]
        assert built.pending == live.pending
        tally = summarize_save(path).tally
        assert tally is not None and (tally.committed, tally.undone) == (ledger.committed, ledger.undone)

        resumed = resume(path, OfflineNarrator(live.pack, seed=seed, faults=faults))
        resumed.journal.close()
        versions = {t.turn: (t.chosen, len(t.versions)) for t in ledger.turns() if len(t.versions) > 1}
        assert {p.turn: p.versions for p in resumed.past if p.versions} == versions


def test_a_listing_of_a_save_without_tallies_counts_its_turns_as_the_ledger_does(tmp_path: Path) -> None:
    """A save written before tallies (or whose last outcome lies too far back to look for) is counted
    from its records: another version of a turn is not another turn, and a branch counts."""
    path, _, events = played_save(
        tmp_path / "s.jsonl",
        ["look", "take rope", "/regenerate", "/choose 1", "north", "/undo", "/branch 1", "up", "/regenerate"],
        faults=0.0,
    )
    ledger = StoryLedger().fold(events)
    assert ledger.versions == 2 and ledger.branch_count == 2 and ledger.undone == 1  # what is being counted
    rewrite_records(path, lambda records: [{**r, "data": _untallied(r["data"])} for r in records])
    assert b'"tally"' not in path.read_bytes()
    assert summarize_save(path).tally == Tally.of(ledger)


def _untallied(data: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in data.items() if key != "tally"}
