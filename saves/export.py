"""Exporting a save: a readable Markdown transcript, or JSON with every committed turn.

Both follow the chosen path: a turn with other versions shows the one that counted (the one
chosen when the next command was played, or at the end of the save); the JSON lists the
others beside it.

Both are built from a save that passed the rebuild (every commit re-judged) in the same one
reading of it that gathers its commits (`read_story`), and
every piece of model or player text goes through `storyloom.engine.safety.safe_text`, so
an exported file never carries escape sequences or invisible characters.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from storyloom.engine.events import AlternativeChosen, Event, TurnCommitted
from storyloom.engine.ledger import STORY_KINDS, LedgerTurn, StoryLedger, Version
from storyloom.engine.lifecycle import StoryEnding
from storyloom.engine.packs import StoryPack
from storyloom.engine.safety import safe_text
from storyloom.engine.state import WorldState, state_hash
from storyloom.engine.words import plural, were
from storyloom.saves.errors import NoSuchBranch
from storyloom.saves.format import FORMAT, Record, SaveHeader
from storyloom.saves.rebuild import Rebuilt, rebuild_records


@dataclass(frozen=True)
class CommittedTurn:
    """A commit as recorded, with whether a later undo took it back, and which version of its turn
    it is (1 the first; `chosen` when it is the version that counts)."""

    turn: int
    player_input: str
    narrative: str
    state_patch: tuple[dict[str, Any], ...]
    suggestions: tuple[str, ...]
    state_hash: str
    time: str
    undone: bool = False
    alternative: int = 1
    chosen: bool = True


class _Commits:
    """The story ledger of a save, folded as its records go by (`watch`), read as every commit in
    the order it was made: undone ones marked, of a turn's versions only the chosen one `chosen`."""

    def __init__(self) -> None:
        self.ledger = StoryLedger()
        self.last_time = ""

    def watch(self, records: Iterable[Record]) -> Iterator[Record]:
        for record in records:
            self.last_time = record.time
            if record.kind in STORY_KINDS and (event := record.event) is not None:
                self.ledger = self.ledger.apply(event, record.time)
            yield record

    def turns(self, branch: int | None = None) -> list[CommittedTurn]:
        """The commits of `branch`'s path (default: the branch played last), its undone ones marked."""
        ledger = self.ledger
        undone = [(t, True) for t in ledger.undone_turns(branch)]
        ordered = heapq.merge(undone, [(t, False) for t in ledger.path(branch)], key=lambda pair: pair[0].turn)
        return [_committed(turn, version, gone) for turn, gone in ordered for version in turn.versions]


def _committed(turn: LedgerTurn, version: Version, undone: bool) -> CommittedTurn:
    return CommittedTurn(
        turn.turn,
        turn.player_input,
        version.narrative,
        tuple(version.state_patch),
        version.suggestions,
        version.state_hash,
        version.at,
        undone=undone,
        alternative=version.alternative,
        chosen=version.alternative == turn.chosen,
    )


@dataclass(frozen=True)
class SavedStory:
    """What an export shows of a save, gathered in one reading of it (`read_story`)."""

    header: SaveHeader
    pack: StoryPack
    turns: tuple[CommittedTurn, ...]
    """Every commit in the order it was made (see `CommittedTurn`)."""
    built: Rebuilt
    last_time: str
    branch: int = 1
    """The branch whose path this is (the one played last unless asked)."""
    branches: int = 1

    @property
    def ending(self) -> StoryEnding | None:
        return self.built.end_of(self.branch)[1]

    @property
    def state(self) -> WorldState:
        return self.built.end_of(self.branch)[0]


def read_story(
    path: Path,
    header: SaveHeader,
    records: Iterable[Record],
    pack: StoryPack,
    *,
    header_time: str = "",
    branch: int | None = None,
) -> SavedStory:
    """Rebuild a save's story (every commit re-judged) and gather its commits, in one pass over its
    records: a save read a record at a time is exported in the memory its commits' text takes.

    Args:
        branch: whose path (default: the branch played last).

    Raises:
        InvalidCommit: as `rebuild`.
        NoSuchBranch: the save has no branch `branch`.
    """
    commits = _Commits()
    built = rebuild_records(path, commits.watch(records), pack, rules=header.rules)
    count = commits.ledger.branch_count
    if branch is None:
        branch = commits.ledger.branch
    elif not 1 <= branch <= count:
        raise NoSuchBranch(path, f"the save has no branch {branch} (it has {_branches(count)})")
    turns = tuple(commits.turns(branch))
    return SavedStory(header, pack, turns, built, commits.last_time or header_time, branch, count)


def saved_story(path: Path, branch: int | None = None) -> tuple[SavedStory, tuple[str, ...]]:
    """Read and judge a save whole for an export (`read_story`), and the save's warnings: how
    `storyloom export` and the app's export read the same save, so both write the same text.

    Raises:
        SaveError: the save cannot be read, fails its checks, or has no branch `branch`.
    """
    from storyloom.saves.reader import read_through
    from storyloom.saves.verify import open_pack

    return read_through(
        path,
        lambda header, records, time: read_story(
            path, header, records, open_pack(header, path), header_time=time, branch=branch
        ),
    )


def saved_markdown(path: Path) -> str:
    """The Markdown transcript of a save as `storyloom export` prints it (the branch played last)."""
    story, _ = saved_story(path)
    return export_markdown(story)


OFF_PATH = frozenset({"turn_undone", "branch_started", "branch_switched"})
"""Events a replay of one path leaves out: they move between paths, never along one."""


def path_turns(path: Path, records: Iterable[Record], branch: int | None) -> tuple[int, int, frozenset[int]]:
    """The branch asked for (default: the one played last), how many the save has, and the turn
    numbers on that branch's path: what a replay of one path shows (records are not judged here).

    Raises:
        NoSuchBranch: the save has no branch `branch`.
    """
    ledger = StoryLedger().fold(_bare(e) for r in records if r.kind in STORY_KINDS and (e := r.event) is not None)
    count = ledger.branch_count
    if branch is None:
        branch = ledger.branch
    elif not 1 <= branch <= count:
        raise NoSuchBranch(path, f"the save has no branch {branch} (it has {_branches(count)})")
    return branch, count, frozenset(t.turn for t in ledger.path(branch))


def _bare(event: Event) -> Event:
    """An event as the path's turn numbers need it: where its turn stands, not its prose or world
    (a fold of a long story's every turn, `path_turns` holds no story text)."""
    if isinstance(event, TurnCommitted):
        return replace(event, narrative="", state_patch=(), suggestions=(), state={})
    if isinstance(event, AlternativeChosen):
        return replace(event, narrative="", suggestions=(), state={})
    return event


def _branches(count: int) -> str:
    return "one branch, 1" if count == 1 else f"branches 1 to {count}"


def export_markdown(story: SavedStory) -> str:
    """A transcript to read: the intro, then each standing turn's input and narrative."""
    header, pack, turns, ending = story.header, story.pack, story.turns, story.ending
    model = f" ({markdown_text(header.model, inline=True)})" if header.model else ""
    byline = (
        f"*Story `{header.story_id}`, narrated by {markdown_text(header.narrator, inline=True)}{model}; "
        f"last played {story.last_time}.*"
    )
    if story.branches > 1:
        byline += f" *Branch {story.branch} of {story.branches}.*"
    return markdown_transcript(
        pack.title,
        pack.intro,
        [(t.player_input, t.narrative) for t in turns if not t.undone and t.chosen],
        byline=byline,
        ending=(ending.title, ending.text) if ending is not None else None,
        undone=sum(t.undone and t.chosen for t in turns),
    )


def markdown_transcript(
    title: str,
    intro: str,
    exchanges: Iterable[tuple[str, str]],
    *,
    byline: str = "",
    ending: tuple[str, str] | None = None,
    undone: int = 0,
) -> str:
    """The story as Markdown: title, intro, then each (player input, prose) exchange, and the ending.

    The one Markdown transcript, for `storyloom export` and the app's export command alike.
    Every piece of text is untrusted (the model writes the prose, a pack the title and intro) and
    goes through `markdown_text`; `byline` is Markdown the caller built that way.
    """
    lines = [f"# {markdown_text(title, inline=True)}", ""]
    if byline:
        lines += [byline, ""]
    lines += [markdown_text(intro), ""]
    for player_input, prose in exchanges:
        lines += ["---", "", f"**> {markdown_text(player_input, inline=True)}**", "", markdown_text(prose), ""]
    if ending is not None:
        lines += ["---", "", f"## {markdown_text(ending[0], inline=True)}", "", markdown_text(ending[1]), ""]
    if undone:
        lines += ["---", "", f"*{plural(undone, 'turn')} {were(undone)} undone during play and not shown.*", ""]
    return "\n".join(lines)


_MARKDOWN_SYNTAX = re.compile(r"([\\`*_\[\]<>#|&~])")
"""Characters with a meaning anywhere in a line: emphasis, code, links and images, HTML and autolinks,
headings, tables, entities, strikethrough."""
_LINE_START_SYNTAX = re.compile(r"^([-+=]|\d+(?=[.)]))", re.MULTILINE)
"""What starts a list, a rule or a setext heading at the start of a line (after `_MARKDOWN_SYNTAX`)."""


def markdown_text(text: str, *, inline: bool = False) -> str:
    """Untrusted text as inert Markdown that renders as exactly the text the player saw.

    No control sequences or invisible characters (`safe_text`); no link, image, autolink, HTML, code,
    emphasis, heading, list or rule: a viewer must not fetch `![](file:...)` or offer a `javascript:`
    link, and the screen shows prose as plain text, so the transcript does too. Leading spaces go (they
    would make a code block). `inline` also folds the text onto one line (a command, a title).
    """
    text = safe_text(text).strip()
    if inline:
        text = " ".join(text.split())
    else:
        text = "\n".join(line.lstrip() for line in text.split("\n"))
    text = _MARKDOWN_SYNTAX.sub(r"\\\1", text)
    return _LINE_START_SYNTAX.sub(_escape_line_start, text)


def _escape_line_start(match: re.Match[str]) -> str:
    marker = match.group(1)
    return marker + "\\" if marker[0].isdigit() else "\\" + marker


def _safe(value: Any) -> Any:
    """Every string inside a JSON value made safe (patch values passed the rules, but cost nothing to clean)."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, list):
        return [_safe(v) for v in value]
    if isinstance(value, dict):
        return {safe_text(k): _safe(v) for k, v in value.items()}
    return value


def export_json(story: SavedStory) -> dict[str, Any]:
    """Every committed turn (undone ones marked) with its patch, the ending the story reached (null while
    it goes on: the turn that reached it, the pack's ending id, title and text), and the final state.
    A turn with other versions is the chosen one, with the others under `alternatives`."""
    header, pack, turns, ending, state = story.header, story.pack, story.turns, story.ending, story.state
    others: dict[int, list[CommittedTurn]] = {}  # turn numbers are never reused
    for t in turns:
        if not t.chosen:
            others.setdefault(t.turn, []).append(t)
    return {
        "format": f"{FORMAT}-export",
        "version": 1,
        "story": {"id": header.story_id, "title": safe_text(pack.title), "digest": header.story_digest},
        "narrator": safe_text(header.narrator),
        "model": safe_text(header.model),
        "turns": [
            {
                **_turn_json(t),
                "undone": t.undone,
                **(
                    {"alternative": t.alternative, "alternatives": [_turn_json(o) for o in others[t.turn]]}
                    if t.turn in others
                    else {}
                ),
            }
            for t in turns
            if t.chosen
        ],
        "ending": None
        if ending is None
        else {
            "id": ending.ending,
            "title": safe_text(ending.title),
            "text": safe_text(ending.text),
            "turn": ending.turn,
        },
        "final_state": state,
        "final_state_hash": state_hash(state),
        **({"branch": story.branch, "branches": story.branches} if story.branches > 1 else {}),
    }


def _turn_json(t: CommittedTurn) -> dict[str, Any]:
    return {
        "turn": t.turn,
        "player_input": safe_text(t.player_input),
        "narrative": safe_text(t.narrative),
        "state_patch": _safe(list(t.state_patch)),
        "suggestions": [safe_text(s) for s in t.suggestions],
        "state_hash": t.state_hash,
        "time": t.time,
        **({} if t.chosen else {"alternative": t.alternative}),
    }
