"""Calm reading over whole interactions: the view moves only by the text that arrives.

Each test plays a new game (the first turn makes the scrollbar appear) through many turns, records
every frame the app paints, and checks the transcript's rows on every frame with
`pytest_frame_geometry.calm.assert_calm`, counting rows of text, not content height: nothing moves
down; the view rises only by the rows of text that arrived; text never disappears (except where
different prose is swapped in, or an undo); a row shown is only appended to (no re-wrap, no half
word hopping); idle, at most one blank row under the newest turn; the same prose written again
changes nothing; after a resize no gap is left; scrolled up, nothing in view moves; no status
flickers. Typing always types, whatever has focus.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from pytest_frame_geometry.calm import Sheet, assert_calm, sheets_of

from storyloom.engine.lifecycle import Session
from storyloom.engine.packs import parse_pack
from storyloom.tui.app import StoryloomApp
from storyloom.tui.testing.frames import Frame, FrameRecorder
from storyloom.tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from storyloom.tui.widgets.turn_message import TurnMessage
from tests.calm_recordings import STATUSES
from tests.conftest import SHORE_PACK
from tests.test_frames import until_true

HINT = ("↓ newer text below",)
WORDS = (
    "The brass lamp and the keeper's logbook lie open on the table, their pages swollen with damp and salt. "
    "Somewhere below, the generator coughs twice and falls silent, and the darkness presses closer. "
    "You notice scratches along the doorframe, deliberate and patient, as if someone counted days."
)
TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
TAKE_BOTH = [*TAKE_LAMP, {"op": "replace", "path": "/items/boulder", "value": "player"}]
SIZES = [
    pytest.param((80, 24), id="80x24"),
    pytest.param((100, 30), id="100x30", marks=pytest.mark.slow),
    pytest.param((120, 40), id="120x40", marks=pytest.mark.slow),
]


def story(paragraphs: int, tag: str) -> str:
    """Prose of long words of varied length, so chunks often end inside a word near a row's end."""
    return "\n\n".join(f"{tag}{k}: " + WORDS[: 90 + 70 * (k % 3)].rsplit(" ", 1)[0] for k in range(1, paragraphs + 1))


@dataclass
class Game:
    """A new game being played and recorded."""

    app: StoryloomApp
    pilot: Any
    recorder: FrameRecorder
    narrator: GatedNarrator
    same: list[tuple[int, int]] = field(default_factory=list)
    """Frame ranges (first, last) in which the same prose was being written again."""

    async def settle(self, seconds: float = 0.6) -> None:
        await until_true(self.pilot, lambda: not self.app.game.running, 20)
        await self.pilot.pause(seconds)

    async def send(self, command: str) -> None:
        self.recorder.mark("key")
        await self.pilot.press(*command, "enter")
        await self.settle()

    async def same_again(self, key: str = "ctrl+g") -> None:
        """ctrl+g whose version has the same prose: the frames until it commits are `same`."""
        first = len(self.recorder.frames)
        self.recorder.mark("same")
        await self.pilot.press(key)
        await self.settle(0)
        self.same.append((first, len(self.recorder.frames)))
        await self.pilot.pause(0.6)

    def sheets(self) -> list[Sheet]:
        frames = self.recorder.frames
        swaps = [(f.texts["swaps"], f.texts["closed"]) for f in frames]
        # a swap to different prose, or the blank rows under a settled shorter prose given back (the
        # view follows the foot then, in the step that shows the settled prose): not compared by rules 1-4
        exempt = {k + j for k, f in enumerate(frames) if k and swaps[k] != swaps[k - 1] for j in (0, 1)}
        exempt |= {k + j for k, f in enumerate(frames) if {"resize", "turn_undone"} & set(f.marks) for j in (0, 1, 2)}
        sheets = sheets_of(frames, view, clock="time", flags=("busy", "following"))
        for k, sheet in enumerate(sheets):
            sheet.flags["exempt"] = k in exempt
            sheet.flags["same"] = any(a <= k < b for a, b in self.same)
            sheet.flags["resized"] = "resize" in frames[k].marks
        return sheets


def view(frame: Frame) -> list[str]:
    """The transcript's rows as painted: under its top padding, right of the messages' border and
    padding, left of the scrollbar's column."""
    region = frame.regions["story"]
    if region is None:
        return []
    x, y, width, height = region
    return [row.ljust(x + width)[x + 2 : x + width - 2].rstrip() for row in frame.screen[y + 1 : y + height]]


def check(game: Game, frames: int | None = None, **rules: Any) -> None:
    """The rules on every frame recorded (or the first `frames`)."""
    sheets = game.sheets()[:frames]
    assert_calm(
        sheets,
        statuses=STATUSES,
        ignore=HINT,
        idle=lambda s: s.flags["busy"] == "False" and s.flags["following"] == "True",
        reset=lambda before, after: after.flags["exempt"],
        same=lambda s: s.flags["same"],
        resized=lambda s: s.flags["resized"],
        **rules,
    )


async def new_game(frame_recorder: Any, pilot: Any, app: StoryloomApp, narrator: GatedNarrator) -> Game:
    recorder = frame_recorder(
        app,
        screen=True,
        regions={"story": "#transcript"},
        texts={
            "time": lambda app: f"{time.monotonic():.4f}",
            "top": lambda app: app.game.transcript.scroll_y,
            "busy": lambda app: app.game.running,
            "following": lambda app: app.game.transcript.following,
            "swaps": lambda app: sum(m.prose.swaps for m in app.game.transcript.live_messages()),
            "closed": lambda app: sum(m.prose.closed for m in app.game.transcript.live_messages()),
        },
    )
    MARKS[id(app)] = recorder
    return Game(app, pilot, recorder, narrator)


MARKS: dict[int, FrameRecorder] = {}
"""The recorder of each app under test (by id), which marks every engine event it renders."""


def make_app(replies: list[GatedReply], budget: int = 2, pack: str = SHORE_PACK) -> tuple[StoryloomApp, GatedNarrator]:
    narrator = GatedNarrator(replies, chunk=7, delay=0.008)
    session = Session(parse_pack(pack, "shore.toml"), narrator, budget=budget)
    app = StoryloomApp(
        session, on_event=lambda event: (r := MARKS.get(id(app))) is not None and r.mark(event.event), blink=False
    )
    return app, narrator


@asynccontextmanager
async def playing(
    frame_recorder: Any, replies: list[GatedReply], size: tuple[int, int], **options: Any
) -> AsyncIterator[Game]:
    """A new game on `replies` (`options` for `make_app`), recorded from its first frame at `size`."""
    app, narrator = make_app(replies, **options)
    async with app.run_test(size=size) as pilot:
        yield await new_game(frame_recorder, pilot, app, narrator)


@pytest.mark.parametrize("size", SIZES)
async def test_a_game_reads_calmly_from_its_first_turn(frame_recorder: Any, size: tuple[int, int]) -> None:
    """A new game: turns of one to eight paragraphs, a correction that keeps the prose and one that
    swaps it, ctrl+g with the same prose and with other prose, and an undo."""
    replies = [
        GatedReply(turn_text(story(3, "a"), [])),  # the first turn: the scrollbar appears
        GatedReply(turn_text(story(1, "b"), TAKE_BOTH)),  # a correction that keeps the prose
        GatedReply(turn_text(None, TAKE_LAMP)),
        GatedReply(turn_text(story(2, "c"), [])),
        GatedReply(turn_text(story(2, "c"), [])),  # ctrl+g: the same prose
        GatedReply(turn_text(story(4, "d"), [])),  # ctrl+g: other prose
        GatedReply(turn_text(story(5, "e"), [])),
        GatedReply(turn_text(story(2, "f"), [{"op": "replace", "path": "/stats/health", "value": 12}])),
        GatedReply(turn_text(story(3, "g"), [])),  # a correction that swaps the prose
        GatedReply(turn_text(story(8, "h"), [])),
    ]
    async with playing(frame_recorder, replies, size) as game:
        app, pilot = game.app, game.pilot
        await game.send("look")
        await game.send("take lamp")
        await game.send("listen")
        await game.same_again()
        game.recorder.mark("other version")
        await pilot.press("ctrl+g")
        await game.settle()
        await game.send("wait")
        await game.send("rest")
        await game.send("go on")
        game.recorder.mark("undo")
        await pilot.press("ctrl+z")
        await pilot.pause(0.6)
        game.recorder.stop()
        messages = app.game.transcript.live_messages()
    assert [m.outcome for m in messages] == ["committed"] * 5 + ["undone"], [
        (m.player_input, m.outcome, m.prose.text[:20], m.status.plain_text) for m in messages
    ]
    assert messages[-1].prose.text == story(8, "h") and messages[2].prose.text == story(4, "d")
    check(game)


@pytest.mark.parametrize("size", SIZES)
async def test_a_resize_in_the_middle_of_a_turn_leaves_no_gap(frame_recorder: Any, size: tuple[int, int]) -> None:
    gate = asyncio.Event()
    text = turn_text(story(6, "r"), [])
    replies = [GatedReply(turn_text(story(4, "a"), [])), GatedReply(text, pause=gate, pause_at=len(text) // 2)]
    held = replies[-1]
    async with playing(frame_recorder, replies, size) as game:
        pilot = game.pilot
        await game.send("look")
        game.recorder.mark("key")
        await pilot.press(*"wait", "enter")
        await until_true(pilot, lambda: held.waiting)
        game.recorder.mark("resize")
        await pilot.resize_terminal(size[0] + 17, size[1] - 3)
        await pilot.pause(0.3)
        gate.set()
        await game.settle()
        game.recorder.stop()
    check(game)


@pytest.mark.parametrize("size", SIZES)
async def test_scrolled_up_nothing_moves_while_a_turn_streams_and_end_follows_again(
    frame_recorder: Any, size: tuple[int, int]
) -> None:
    gate = asyncio.Event()
    text = turn_text(story(8, "s"), [])
    replies = [
        GatedReply(turn_text(story(6, "a"), [])),
        GatedReply(turn_text(story(6, "b"), [])),
        GatedReply(text, pause=gate, pause_at=len(text) // 4),
    ]
    held = replies[-1]
    async with playing(frame_recorder, replies, size) as game:
        app, pilot = game.app, game.pilot
        await game.send("look")
        await game.send("wait")
        game.recorder.mark("key")
        await pilot.press(*"listen", "enter")
        await until_true(pilot, lambda: held.waiting)
        game.recorder.mark("page up")
        await pilot.press("pageup")
        await pilot.pause(0.2)
        up = len(game.recorder.frames)
        gate.set()
        await until_true(pilot, lambda: not app.game.running, 20)
        await pilot.pause(0.3)
        down = len(game.recorder.frames)
        assert not app.game.transcript.following
        game.recorder.mark("end")
        await pilot.press("end")
        await pilot.pause(0.3)
        assert app.game.transcript.following  # Textual#6677: scroll_to stopped the anchor; End re-anchors
        frames = game.recorder.frames
        assert "s8:" in "\n".join(view(frames[-1])), "End did not bring the newest text into view"
        game.recorder.stop()
    sheets = game.sheets()
    assert_calm(sheets[up:down], statuses=STATUSES, ignore=HINT, idle=lambda s: False, scrolled=lambda s: True)
    assert_calm(sheets[: up - 3], statuses=STATUSES, ignore=HINT, idle=lambda s: False)


@pytest.mark.parametrize("size", SIZES)
async def test_typing_types_whatever_has_focus(frame_recorder: Any, size: tuple[int, int]) -> None:
    """With a turn message focused (browsing its versions), typing `go north` types it into the input
    line and Enter sends it; the message's own keys are arrows and ctrl keys, which the footer shows."""
    replies = [
        GatedReply(turn_text(story(2, "a"), TAKE_BOTH)),
        GatedReply(turn_text(None, TAKE_LAMP)),
        GatedReply(turn_text(story(1, "b"), [])),
        GatedReply(turn_text(story(1, "n"), [])),
    ]
    async with playing(frame_recorder, replies, size) as game:
        app, pilot = game.app, game.pilot
        await game.send("take lamp")
        await pilot.press("ctrl+g")
        await game.settle(0.3)
        message = app.game.message(1)
        assert message is not None and len(message.versions) == 2
        message.focus(scroll_visible=False)
        await pilot.pause(0.2)
        await pilot.press("left")  # an arrow browses the focused message's versions
        await pilot.pause(0.3)
        assert message.chosen == 1 and app.screen.focused is message
        keys = game.recorder.frames[-1].screen[-1]  # the footer
        for shown in ("← →", "Versions", "^d Details", "^g Another version", "^q Quit", "^p palette"):
            assert shown in keys, keys
        for char in "go north":
            await pilot.press(char if char != " " else "space")
        assert app.game.command_input.value == "go north"
        assert message.chosen == 1, "a letter acted on the focused message"
        await pilot.press("enter")
        await game.settle(0.3)
        game.recorder.stop()
        assert app.game.latest_message().player_input == "go north"
        assert app.game.command_input.value == ""
    check(game)


@pytest.mark.parametrize("size", SIZES)
async def test_tab_moves_the_focus_between_messages_on_screen_without_moving_the_story(
    frame_recorder: Any, size: tuple[int, int]
) -> None:
    """Tab from the input line focuses the oldest message on screen and shift+tab the newest: nothing
    moves. Only focusing a message with no row on screen moves the story, in one step, by the fewest
    rows: its top row comes to the view's top row."""
    replies = [GatedReply(turn_text(story(3, tag), [])) for tag in "abcdef"]
    async with playing(frame_recorder, replies, size) as game:
        app, pilot = game.app, game.pilot
        for command in ("look", "wait", "listen", "rest", "go on", "sleep"):
            await game.send(command)
        screen, transcript = app.game, app.game.transcript
        on_screen = [m for m in transcript.live_messages() if m.region.overlaps(transcript.scrollable_content_region)]
        assert len(on_screen) < len(transcript.live_messages()), "the story must be taller than the view"

        def press(key: str) -> Any:
            game.recorder.mark(key)
            return pilot.press(key)

        await press("tab")
        await pilot.pause(0.3)
        assert screen.focused is on_screen[0], (screen.focused, on_screen[0])
        for message in on_screen[1:]:
            await press("tab")
            await pilot.pause(0.1)
            assert screen.focused is message
        await press("tab")
        await pilot.pause(0.1)
        assert screen.focused is screen.command_input
        await press("shift+tab")
        await pilot.pause(0.1)
        assert screen.focused is on_screen[-1] is transcript.latest_message()
        for char in "go":
            await press(char)
        assert screen.command_input.value == "go" and screen.focused is screen.command_input
        await pilot.pause(0.3)
        still = len(game.recorder.frames)
        assert transcript.following
        await press("shift+tab")
        for _ in on_screen:
            await press("shift+tab")
            await pilot.pause(0.3)
        above = screen.focused
        assert isinstance(above, TurnMessage) and above not in on_screen
        game.recorder.stop()
        frames = game.recorder.frames
        top_row = "\n".join(view(frames[-1])[:2])
        assert above.prose.text.split("\n")[0][:12] in top_row, (top_row, above.prose.text[:40])
        moved = [k for k in range(still + 1, len(frames)) if frames[k].texts["top"] != frames[k - 1].texts["top"]]
        assert len(moved) == 1, f"the story moved over {len(moved)} frames, not in one step"
    check(game, still)


@pytest.mark.parametrize("size", SIZES)
async def test_the_ending_and_its_undo_move_nothing_already_read(frame_recorder: Any, size: tuple[int, int]) -> None:
    to_the_path = [
        *TAKE_LAMP,
        {"op": "replace", "path": "/flags/door_open", "value": True},
        {"op": "replace", "path": "/location", "value": "path"},
    ]
    wind = "\n\nThe wind drums on the glass and runs in threads down the panes, and far out a bell rings once."
    up = "You climb to the Lamp Room with the lamp, and light it." + wind * 2
    replies = [
        GatedReply(turn_text(story(3, "a"), [])),
        GatedReply(turn_text("You take the brass lamp, open the way and climb to the Cliff Path." + wind, to_the_path)),
        GatedReply(turn_text(up, [{"op": "replace", "path": "/location", "value": "tower"}])),
    ]
    async with playing(frame_recorder, replies, size) as game:
        app, pilot = game.app, game.pilot
        await game.send("look")
        await game.send("climb")
        await game.send("go up")
        assert app.session.ending is not None
        game.recorder.mark("undo")
        await pilot.press("ctrl+z")
        await pilot.pause(0.6)
        game.recorder.stop()
        assert app.session.ending is None
    check(game)


@pytest.mark.parametrize("size", SIZES)
async def test_idle_no_gap_stays_under_a_turn_whose_prose_got_shorter(
    frame_recorder: Any, size: tuple[int, int]
) -> None:
    """A correction that swaps in shorter prose, and another version (ctrl+g) with fewer rows: once
    the turn settles, at most one blank row stays under it (the blank rows the longer prose held are
    given back in the step that shows the settled prose, and the view follows its foot)."""
    replies = [
        GatedReply(turn_text(story(8, "a"), [])),
        GatedReply(turn_text(story(6, "b"), [])),
        GatedReply(turn_text(story(5, "c"), TAKE_BOTH)),  # a correction that swaps in shorter prose
        GatedReply(turn_text(story(1, "d"), TAKE_LAMP)),
        GatedReply(turn_text(story(4, "e"), [])),
        GatedReply(turn_text(story(1, "f"), [])),  # ctrl+g: another version, shorter
        GatedReply(turn_text(story(3, "g"), [])),
        GatedReply(turn_text(story(1, "h"), [])),  # ctrl+g again: shorter still
    ]
    async with playing(frame_recorder, replies, size) as game:
        app, pilot = game.app, game.pilot
        await game.send("look")
        await game.send("wait")
        await game.send("take lamp")
        await game.send("listen")
        game.recorder.mark("other version")
        await pilot.press("ctrl+g")
        await game.settle()
        await game.send("rest")
        game.recorder.mark("other version")
        await pilot.press("ctrl+g")
        await game.settle()
        game.recorder.stop()
        messages = app.game.transcript.live_messages()
    assert [m.prose.text for m in messages] == [
        story(8, "a"),
        story(6, "b"),
        story(1, "d"),
        story(1, "f"),
        story(1, "h"),
    ]
    check(game)
    assert sum(m.prose.closed for m in messages) == 3, "a shorter prose kept its taller height"


@pytest.mark.parametrize("size", SIZES)
async def test_a_correction_one_row_shorter_moves_nothing_and_says_corrected(
    frame_recorder: Any, size: tuple[int, int]
) -> None:
    """The common correction: the narrator claimed one deed too many ("And you take the matches too."),
    and the corrected prose drops that sentence, a row shorter. Nothing already read moves down: the
    status row says "corrected" where "correcting" stood and the freed row stays blank under it,
    until the next command's blank row above its echo takes it."""
    replies = [GatedReply(turn_text(story(8, "a"), []))]
    async with playing(frame_recorder, replies, size) as game:
        app = game.app
        await game.send("look")
        width = app.game.latest_message().prose.size.width
        row = " ".join(["rock"] * 40)[: width - 1].rsplit(" ", 1)[0]  # fills its row: what follows wraps
        meant = f"{story(1, 'b')}\n\n{row}"
        game.narrator.replies += [
            GatedReply(turn_text(f"{meant} And you take the matches too.", TAKE_BOTH)),
            GatedReply(turn_text(meant, TAKE_LAMP)),
            GatedReply(turn_text(story(1, "c"), [])),
        ]
        await game.send("take lamp")
        corrected = app.game.latest_message()
        await game.send("listen")
        game.recorder.stop()
    assert corrected.prose.text == meant and corrected.status.plain_text == "corrected"
    frames = game.recorder.since("key")
    echoes = [row for f in frames if (row := f.row_of("› take lamp")) is not None]
    assert echoes and all(b <= a for a, b in zip(echoes, echoes[1:], strict=False)), "a line moved down"
    assert sum(f.row_of("matches too") is not None for f in frames) > 0, "the false sentence was never shown"
    final = frames[-1]
    status, listen = final.row_of("corrected"), final.row_of("› listen")
    assert status is not None and listen == status + 2, "one blank row parts the corrected turn and the next"
    check(game)


BLANK_LINES_PACK = SHORE_PACK.replace(
    'intro = "Grey water, black rocks."', 'intro = """\nGrey water, black rocks.\n\nThe tide is turning.\n"""'
)
"""The shore, its intro written as packs write it: a multi-line string that ends with a newline."""


def separators(rows: list[str]) -> list[str]:
    """What stands above each command row shown (`› ...`) with rows above it in view: its blank rows
    above the text before, e.g. "1 above '› look'" (rows of text, statuses included, count as text)."""
    found = []
    for y, row in enumerate(rows):
        if not row.startswith("› "):
            continue
        above = next((j for j in range(y - 1, -1, -1) if rows[j].strip()), None)
        if above is not None:
            found.append(f"{y - above - 1} above {row.strip()!r}")
    return found


@pytest.mark.parametrize("size", SIZES)
async def test_one_blank_row_parts_the_intro_and_every_turn(frame_recorder: Any, size: tuple[int, int]) -> None:
    """One blank row between the intro and the first turn, and between turns, on every frame: under
    a turn whose status row says something (a failure, its versions) as under one whose status row
    is empty, and under the intro of a pack whose text ends with a newline."""
    replies = [
        GatedReply(turn_text(story(2, "a"), [])),
        GatedReply(turn_text(story(1, "b"), TAKE_BOTH)),  # fails: its correction breaks the rules too
        GatedReply(turn_text(None, TAKE_BOTH)),
        GatedReply(turn_text(story(1, "c"), [])),
        GatedReply(turn_text(story(1, "d"), [])),  # ctrl+g: `‹ 2/2 ›`, then `version 2 of 2`
        GatedReply(turn_text(story(1, "e"), [])),
    ]
    async with playing(frame_recorder, replies, size, budget=1, pack=BLANK_LINES_PACK) as game:
        app, pilot = game.app, game.pilot
        await game.send("look")
        await game.send("take boulder")
        await game.send("listen")
        await pilot.press("ctrl+g")
        await game.settle()
        await game.send("wait")
        game.recorder.stop()
        messages = app.game.transcript.live_messages()
    assert [m.outcome for m in messages] == ["committed", "failed", "committed", "committed"]
    assert messages[2].status.plain_text == "version 2 of 2"
    frames = game.recorder.frames
    wrong = [(f.index, f.phase, gap) for f in frames for gap in separators(view(f)) if not gap.startswith("1 above")]
    assert not wrong, f"{len(wrong)} separator(s) of other than one blank row, e.g. {wrong[:4]}"
    seen = {gap for f in frames for gap in separators(view(f))}
    # under the intro, under the failed turn's status, under `version 2 of 2`
    assert {"1 above '› look'", "1 above '› listen'", "1 above '› wait'"} <= seen, seen
    assert any(row == "The tide is turning." for f in frames for row in view(f)), "the intro's end was never seen"
    check(game)
