"""The offline narrator's prose reads right: every built-in story walked with faults, every verb and
direction tried in every room it passes, and every sentence a player could see checked for the
mistakes found by reading a few hundred of them ("Nothing gives, in: that way is shut.", "There
is no gloves within reach", "There is nothing to look through about the key")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from storyloom.engine.builtin import builtin_pack_ids
from storyloom.engine.events import ProseDelta, ProseReplaced, StoryEnded, TurnCommitted, TurnFailed
from storyloom.engine.lifecycle import Session
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.narrators.offline.parse import ARTICLES
from storyloom.engine.packs import DIRECTIONS, StoryPack, load_pack

WALKS = Path(__file__).parent / "walkthroughs"

MISTAKES = {
    "a direction set off by a comma and a colon": re.compile(rf", ({'|'.join(DIRECTIONS)}):"),
    "a word twice": re.compile(r"\b(\w+) \1\b", re.IGNORECASE),
    "two articles": re.compile(
        rf"\b({'|'.join(ARTICLES - {'to', 'at', 'towards', 'toward', 'that', 'some'})}) (a|an|the)\b", re.IGNORECASE
    ),
    "an empty name": re.compile(r"\b(the|a|an|no) ?[.,;:!?]|\(\s*\)|: \.|\s{3,}|[ \t]\n"),
    "a space before punctuation": re.compile(r" [.,;:!?]"),
    "a sentence starting in lower case": re.compile(r"[.!?] [a-z]"),
    "'there is no' before a plural": re.compile(
        r"\bThere is no \w+s\b(?! within)|\bThere is no \w+(?<!s)s within", re.IGNORECASE
    ),
    "'nothing to VERB about'": re.compile(r"\bnothing to [\w ]+ about\b"),
}


def _commands_for_a_room(pack: StoryPack) -> list[str]:
    """Every kind of command, on every thing and every verb of the story, and some nonsense."""
    lines = ["look", "help", "inventory", "wait", "take all", "drop all", "take", "drop", "go", "use", "open"]
    lines += ["examine", "examine me", "dance", "examine unicorn", "take the unicorn", "close"]
    for direction in DIRECTIONS:
        lines += [direction, f"look {direction}"]
    lines += [f"go to {room.name}" for room in pack.rooms.values()]
    verbs = {"examine", "take", "drop", "use", "open", "close", "read"}
    verbs |= {verb for action in pack.actions.values() for verb in action.verbs}
    for item in pack.items.values():
        word = item.aliases[0] if item.aliases else item.name
        lines += [f"{verb} {word}" for verb in sorted(verbs)]
    return lines


async def _walk(story: str, seed: int) -> tuple[list[tuple[str, str]], bool]:
    """(command, prose shown) for every turn of a walk to the ending, and whether the story ended.

    In each new room every command of `_commands_for_a_room` is tried and then taken back, so the
    walkthrough still reaches its ending. Streamed prose of rejected attempts counts too: it was
    on screen."""
    pack = load_pack(story)
    session = Session(pack, OfflineNarrator(pack, seed=seed, faults=0.3))
    walk = [ln.strip() for ln in (WALKS / f"{story}.txt").read_text().splitlines() if ln.strip()]
    shown: list[tuple[str, str]] = []
    seen_rooms: set[str] = set()

    for line in (ln for ln in walk if not ln.startswith("#")):
        if session.state["location"] not in seen_rooms:
            seen_rooms.add(session.state["location"])
            for extra in _commands_for_a_room(pack):
                committed, _ = await _run(session, extra, shown)
                if committed:
                    session.undo()
        _, ended = await _run(session, line, shown)
        if ended:
            return shown, True
    return shown, False


async def _run(session: Session, line: str, shown: list[tuple[str, str]]) -> tuple[bool, bool]:
    """Play one command (and retry it once if it failed); (committed, ended)."""
    committed = ended = failed = False
    for attempt in (session.play(line), None):
        if attempt is None:
            if not failed:
                break
            attempt = session.retry()
        streamed: list[str] = []
        async for event in attempt:
            if isinstance(event, ProseDelta):
                streamed.append(event.text)
                continue
            committed, ended = committed or isinstance(event, TurnCommitted), ended or isinstance(event, StoryEnded)
            failed = failed or isinstance(event, TurnFailed)
            if isinstance(event, ProseReplaced | StoryEnded):
                shown.append((line, event.text))
            elif isinstance(event, TurnCommitted):
                shown.append((line, event.narrative))
        shown.append((line, "".join(streamed)))
    return committed, ended


@pytest.mark.slow
@pytest.mark.parametrize("story", builtin_pack_ids())
async def test_a_walk_of_every_story_with_faults_reads_right(story):
    shown, ended = await _walk(story, seed=2)
    assert ended, "the walkthrough no longer reaches the ending"
    assert len(shown) > 500
    found = []
    for line, text in shown:
        for what, pattern in MISTAKES.items():
            match = pattern.search(text)
            if match:
                found.append(f"{what}: > {line}: ...{text[max(0, match.start() - 40) : match.end() + 40]!r}")
    assert not found, "\n".join(sorted(set(found))[:30])


@pytest.mark.parametrize(
    "bad",
    [
        "Nothing gives, in: that way is shut.",
        "There is no gloves within reach.",
        "You take the the key.",
        "You see a the lamp.",
        "There is nothing to pour about the rope.",
        "You take .",
        "Exits: .",
    ],
)
def test_the_checks_catch_what_was_found(bad):
    assert any(pattern.search(bad) for pattern in MISTAKES.values())
