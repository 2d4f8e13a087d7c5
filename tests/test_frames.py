"""Frame geometry over the whole life of a turn: nothing on screen moves that the player is reading.

Each test records every frame the app paints, from before the key press (Enter, or ctrl+r) until
one second after the turn commits, fails or is cancelled, and checks on every frame, as rules
(`storyloom.tui.testing.frames.assert_no_shift`), what the player would see:

1. no line already painted ever moves down;
2. a line moves up only when text is added below it, by exactly the rows the transcript grew;
3. from the first frame that shows a status (correcting, narrator busy, a failure, cancelled)
   nothing above the input moves, except in the one frame of a swap to a longer prose;
4. the status row is there from the turn's first frame, one row tall;
5. the input, side panel, header and footer never move or resize.

The transcript is full (a resumed history and one live turn above the one played), so it is
anchored to the bottom, as in a long game. Every case runs at four terminal sizes, following the
newest text and, where the player paged up during the turn, scrolled away from it (then nothing
moves at all). A few cases also compare the sequence of states with a reviewed JSON baseline in
snapshots/frames/ (rewrite: --frames-update).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from storyloom.engine.lifecycle import Session
from storyloom.engine.narration import Exchange, TransientNarratorError
from storyloom.engine.packs import parse_pack
from storyloom.engine.turns import Turn
from storyloom.tui._textual_internals import arranged_height
from storyloom.tui.app import StoryloomApp
from storyloom.tui.testing.frames import Frame, FrameRecorder, Line, assert_no_shift
from storyloom.tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from storyloom.tui.testing.pilot import until
from storyloom.tui.widgets.status_row import StatusRow
from tests.conftest import SHORE_PACK

SIZES = [(80, 24), (100, 30), (120, 40), (160, 50)]
SIZE_IDS = [f"{w}x{h}" for w, h in SIZES]
QUICK = (100, 30)
"""The size every case also runs at without the slow mark."""
TAKE_BOTH = [
    {"op": "replace", "path": "/items/lamp", "value": "player"},
    {"op": "replace", "path": "/items/boulder", "value": "player"},
]
TAKE_LAMP = [{"op": "replace", "path": "/items/lamp", "value": "player"}]
HISTORY = 12
"""Committed turns the story resumes with (shown folded above the live turns)."""
SETTLE_SECONDS = 1.0
"""How long the recording goes on after the turn ends (archiving, timers, late repaints)."""
STATUSES = ("correcting (", "narrator busy", "couldn't make this turn consistent", "cancelled")
"""The start of each status that, once shown, freezes everything above the input (rule 3)."""


def prose(paragraphs: int, tag: str) -> str:
    """Prose of `paragraphs` paragraphs, each opening with its own name (`[a1]`, `[a2]`, ...) so its
    first line can be followed on screen, and long enough to wrap onto two to four lines."""
    sentences = (
        "The lamp's glass is cold and crusted with salt, and the wind pulls at your coat.",
        "The rain drums on the black rocks and runs in threads between them.",
        "Far out, a bell rings once, slow and lost.",
    )
    return "\n\n".join(f"[{tag}{k}] " + " ".join(sentences[: 1 + k % 3]) for k in range(1, paragraphs + 1))


@dataclass
class Case:
    """One way a turn can go, as the narrator's scripted replies and what the player does."""

    replies: Callable[[asyncio.Event, int], list[GatedReply]]
    budget: int = 2
    action: str = ""
    """"cancel": Esc once the turn is held; "retry": ctrl+r once it has failed; "undo": ctrl+z once committed."""
    releases: bool = True
    """Whether the gate is opened once the turn is held (else it waits for the player)."""


def _partial(text: str) -> str:
    return text[: len(text) // 2]


CASES: dict[str, Case] = {
    "prose-kept": Case(
        lambda gate, n: [
            GatedReply(turn_text(prose(n, "a"), TAKE_BOTH)),
            GatedReply(turn_text(None, TAKE_LAMP), before=gate),
        ]
    ),
    "swapped-longer": Case(
        lambda gate, n: [
            GatedReply(turn_text(prose(n, "a"), TAKE_BOTH)),
            GatedReply(turn_text(prose(n + 3, "b"), TAKE_LAMP), before=gate),
        ]
    ),
    "swapped-shorter": Case(
        lambda gate, n: [
            GatedReply(turn_text(prose(n, "a"), TAKE_BOTH)),
            GatedReply(turn_text(prose(1, "c"), TAKE_LAMP), before=gate),
        ]
    ),
    "failed-then-retry": Case(
        lambda gate, n: [
            GatedReply(turn_text(prose(n, "a"), TAKE_BOTH)),
            GatedReply(turn_text(None, TAKE_BOTH)),
            GatedReply(turn_text(prose(n, "d"), TAKE_LAMP), before=gate),
        ],
        budget=1,
        action="retry",
    ),
    "cancelled-mid-stream": Case(
        lambda gate, n: [
            GatedReply(turn_text(prose(n, "a"), TAKE_LAMP), pause=gate, pause_at=len(turn_text(prose(n, "a"))) // 2)
        ],
        action="cancel",
        releases=False,
    ),
    "cancelled-mid-correction": Case(
        lambda gate, n: [
            GatedReply(turn_text(prose(n, "a"), TAKE_BOTH)),
            GatedReply(turn_text(None, TAKE_LAMP), before=gate),
        ],
        action="cancel",
        releases=False,
    ),
    "narrator-busy": Case(
        lambda gate, n: [
            GatedReply(
                _partial(turn_text(prose(n, "a"), TAKE_LAMP)),
                error=TransientNarratorError("overloaded", retry_after=0.3),
            ),
            GatedReply(turn_text(prose(n, "a"), TAKE_LAMP), before=gate),
        ]
    ),
    "no-prose-first": Case(
        lambda gate, n: [
            # a model thinking aloud for a while (25 chunks) before it forgets to call the tool
            GatedReply("I take the lamp, I think. " * 16, plain=True),
            GatedReply(turn_text(prose(n, "a"), TAKE_LAMP), before=gate),
        ]
    ),
}


@dataclass
class Played:
    recorder: FrameRecorder
    app: StoryloomApp
    game: Any
    """The game screen as the turn left it (the app has closed)."""
    lines: list[Line]
    following: bool
    """Whether the transcript followed the newest text at the end."""
    """The texts that name the lines followed on screen."""

    def whole_turn(self) -> list[Frame]:
        return self.recorder.since("key")


def transcript_height(app: StoryloomApp) -> int:
    """Rows of story in the transcript (its messages and blocks, not the docked follow hint) as its
    latest layout placed them, less the rows laid out ahead of streaming text that were never shown
    (`hidden_rows`): what "the rows added below" counts. Not `virtual_size`, which is at least the
    view's height, nor widgets' own sizes, which catch up a message later."""
    transcript = app.game.transcript
    return arranged_height(transcript) - transcript.hidden_rows()


def history() -> tuple[Exchange, ...]:
    return tuple(
        Exchange(f"wait {i:02d}", Turn(narrative=f"[h{i:02d}] You wait. The rain goes on, and on."))
        for i in range(1, HISTORY + 1)
    )


async def until_true(pilot: Any, condition: Callable[[], bool], seconds: float = 10.0) -> None:
    """Let the app run (in real time: the narrator streams with small delays) until `condition()` holds."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the app never reached the expected state")
        await pilot.pause(0.01)


def record_turn(frame_recorder: Any, app: StoryloomApp, turn: int, **texts: Any) -> FrameRecorder:
    """Start recording every frame of `app`, following turn `turn`'s message and status row, the
    regions that must never move, and the transcript's height (plus any further `texts`)."""
    return frame_recorder(
        app,
        screen=True,
        regions={
            "message": f"#turn-{turn}",
            "status": f"#turn-{turn} StatusRow",
            "input": "#command",
            "side": "#side-panel",
            "header": "Header",
            "footer": "Footer",
        },
        texts={
            "prose": f"#turn-{turn} Prose",
            "status": f"#turn-{turn} StatusRow",
            "content": transcript_height,
            "closed": lambda app: m.prose.closed if (m := app.game.message(turn)) is not None else 0,
            **texts,
        },
    )


def split_at_close(frames: list[Frame]) -> list[list[Frame]]:
    """The frames before and from the one where the turn, settling on prose shorter than its message
    was, gave back the blank rows under it (`TurnMessage.close_gap`): the one frame anything may move
    down, once, by exactly the rows the message gave back (checked here), while the view follows its foot."""
    closes = [k for k in range(1, len(frames)) if frames[k].texts["closed"] != frames[k - 1].texts["closed"]]
    assert len(closes) <= 1, f"the gap closed in frames {[frames[k].index for k in closes]}"
    for k in closes:
        before, after = frames[k - 1], frames[k]
        assert before.texts["following"] != "False", "the gap closed while the reader was scrolled up"
        shrank = before.regions["message"][3] - after.regions["message"][3]
        assert after.regions["message"][1] - before.regions["message"][1] == shrank > 0, (
            f"frame {after.index}: the message moved {after.regions['message'][1] - before.regions['message'][1]} "
            f"rows where it gave back {shrank}"
        )
        assert {"turn_committed", "turn_failed", "turn_cancelled"} & set(after.marks), after.marks
    return [frames[: closes[0]], frames[closes[0] :]] if closes else [frames]


async def play(
    frame_recorder: Any, case: Case, size: tuple[int, int], *, paragraphs: int = 3, page_up: bool = False
) -> Played:
    """Resume a story, play one live turn, then play `case` as "take lamp" and record it whole.

    With `page_up`, the player pages up once the turn's first prose (or status) is painted (mark "page_up").
    """
    gate = asyncio.Event()
    replies = case.replies(gate, paragraphs)
    earlier = GatedReply(turn_text("[e1] You wait. Rain runs off the rocks.\n\n[e2] Nothing else happens."))
    narrator = GatedNarrator([earlier, *replies], chunk=16, delay=0.006)
    pack = parse_pack(SHORE_PACK, "shore.toml")
    session = Session(pack, narrator, budget=case.budget, history=history(), next_turn=HISTORY + 1)
    holder: list[FrameRecorder] = []
    app = StoryloomApp(session, on_event=lambda event: holder and holder[0].mark(event.event), blink=False)
    turn = HISTORY + 2
    lines = [f"› wait {i:02d}" for i in range(1, HISTORY + 1)] + [f"[h{i:02d}]" for i in range(1, HISTORY + 1)]
    lines += ["› look", "[e1]", "[e2]", "› take lamp", *STATUSES]
    lines += list(dict.fromkeys(re.findall(r"\[[a-z]\d\]", "".join(r.text for r in replies))))
    followed = [Line.containing(text, optional=True) for text in lines]  # each may be out of a window's view
    async with app.run_test(size=size) as pilot:
        await pilot.press(*"look", "enter")
        await until_true(pilot, lambda: app.game.message(HISTORY + 1) is not None and not app.game.running)
        await pilot.pause(0.1)
        recorder = record_turn(
            frame_recorder,
            app,
            turn,
            outcome=lambda app: m.outcome if (m := app.game.message(turn)) else None,
            following=lambda app: app.game.transcript.following,
        )
        holder.append(recorder)
        recorder.mark("key")
        await pilot.press(*"take lamp", "enter")
        if page_up:
            await until_true(pilot, lambda: {"prose_delta", "validation_failed"} & set(recorder.all_marks()))
            recorder.mark("page_up")
            await pilot.press("pageup")
        if case.action == "cancel":
            held = replies[-1]
            await until_true(pilot, lambda: held.waiting)
            await pilot.pause(0.1)
            await pilot.press("escape")
        elif case.action == "retry":
            await until_true(pilot, lambda: "turn_failed" in recorder.all_marks() and not app.game.running)
            # the player presses ctrl+r once the row offers it (a status before it stays 250 ms to be read)
            row = app.query_one(f"#turn-{turn} StatusRow", StatusRow)
            await until_true(pilot, lambda: row.painted and "retry" in row.plain_text)
            await pilot.pause(0.1)
            recorder.mark("key")
            await pilot.press("ctrl+r")
        elif case.action == "undo":
            await until_true(pilot, lambda: "turn_committed" in recorder.all_marks() and not app.game.running)
            await pilot.pause(0.1)
            recorder.mark("undo")
            await pilot.press("ctrl+z")
        if case.releases:
            await until_true(pilot, lambda: any(r.waiting for r in replies) or not app.game.running)
            await pilot.pause(0.15)  # the held state (a status, the writing sign) stays on screen a while
            gate.set()
        await until_true(pilot, lambda: not app.game.running)
        await pilot.pause(SETTLE_SECONDS)
        recorder.stop()
        with FrameRecorder(app, screen=True) as fresh:  # its frame 0 is the whole screen rendered afresh
            pass
        assert recorder.frames[-1].screen == fresh.frames[0].screen, "a row on screen was never repainted"
        game = app.game
        following = game.transcript.following
    return Played(recorder, app, game, followed, following)


def _painted_page_up(recorded: list[Frame], mark: int, lines: list[Line]) -> int | None:
    """The frame from `mark` on in which the tracked lines first stand lower than the frame before
    (the page up painted), if any did."""
    for before, frame in zip(recorded[max(mark - 1, 0) :], recorded[mark:], strict=False):
        for line in lines:
            (was, _), (now, _) = line.find(before), line.find(frame)
            if was is not None and now is not None and now > was:
                return frame.index
    return None


def assert_turn_geometry(played: Played, *, page_up: bool = False) -> list[Frame]:
    """The five rules over the whole turn (two windows when the player paged up: before, and after)."""
    frames = played.whole_turn()
    fixed = ("input", "side", "header", "footer")
    if page_up:  # three windows: to the page up; from the frame it lands in; from a retry's ctrl+r (it follows)
        recorded = played.recorder.frames
        first = next(f.index for f in recorded if "key" in f.marks)
        cuts = [f.index for f in recorded if "page_up" in f.marks or ("key" in f.marks and f.index > first)]
        # the key lands a few frames after the mark on a busy machine: the view leaves the newest text there,
        # and its rows go down in the frame the page up is painted (which can be a frame after that)
        landed = _painted_page_up(recorded, cuts[0], played.lines) or next(
            (f.index for f in recorded[cuts[0] :] if f.texts["following"] == "False"), cuts[0] + 1
        )
        scrolled = recorded[landed : cuts[1] if len(cuts) > 1 else None]
        assert_no_shift(recorded[first:landed], played.lines, content="content", fixed=fixed)
        assert_no_shift(scrolled, played.lines, settled=lambda frame: True, fixed=fixed)
        if len(cuts) > 1:
            assert_no_shift(played.recorder.frames[cuts[1] :], played.lines, content="content", fixed=fixed)
    else:
        for part in split_at_close(frames):
            assert_no_shift(
                part,
                played.lines,
                content="content",
                swap="prose",
                fixed=fixed,
                settled=lambda frame: (frame.texts["status"] or "").startswith(STATUSES),
            )
    assert_no_shift(played.recorder.frames, [], fixed=fixed)  # not even before the key press
    with_message = [f for f in frames if f.regions["message"] is not None]
    assert with_message, "the turn's message was never painted"
    for frame in with_message:  # rule 4: the status row is there from the first frame, one row tall
        status = frame.regions["status"]
        assert status is not None and status[3] == 1, f"frame {frame.index}: status row {status}"
    # ... at the message's foot (checked once settled: the compositor maps a message mounted this
    # frame a message later than it lays it out, so its region can lag a frame behind), or a row
    # above it when the turn settled shorter with words in its status: the blank row it holds there
    # is the one the next turn's blank row above its command takes (`TurnMessage.close_gap`)
    status, message = frames[-1].regions["status"], frames[-1].regions["message"]
    if status is not None and message is not None:
        held = message[1] + message[3] - 1 - status[1]
        assert held == 0 or (held == 1 and frames[-1].texts["status"]), "the status row is not at the message's foot"
    return frames


def statuses(frames: list[Frame]) -> list[str]:
    seq: list[str] = []
    for frame in frames:
        text = frame.texts["status"]
        if text is not None and (not seq or seq[-1] != text):
            seq.append(text)
    return seq


def after_stream(played: Played) -> list[Frame]:
    """The frames from the end of the stream (and of a page up, which changes what shows) on."""
    marks = played.recorder.all_marks()
    first = "validation_failed" if "validation_failed" in marks else "turn_committed"
    frames = played.recorder.since(first, before=False)
    if "page_up" in marks:
        paged = played.recorder.since("page_up", before=False)[0].index
        frames = [f for f in frames if f.index > paged]
    return frames


def check_outcome(name: str, played: Played, *, painted: bool = True) -> None:
    """What the player sees at the end of each case, beyond geometry (`painted`: what the frames
    showed of the message too; not when the player paged it out of view)."""
    frames = played.whole_turn()
    seen = statuses(frames)
    message = played.game.latest_message()
    state = played.app.session.state["items"]["lamp"]
    if name in ("cancelled-mid-stream", "cancelled-mid-correction"):
        assert message.status.plain_text == "cancelled · ^r retry" and state == "shore"
        return
    said = "corrected" if name in ("swapped-longer", "swapped-shorter") else ""  # the words on screen changed
    assert message.status.plain_text == said and message.outcome == "committed" and state == "player"
    if name in ("swapped-longer", "swapped-shorter"):
        assert ("[b1]" if name == "swapped-longer" else "[c1]") in message.prose.text
    if name == "failed-then-retry":
        assert "[d1]" in message.prose.text
    if not painted:
        return
    if name == "prose-kept":
        assert "correcting (1/2)…" in seen
        assert played.recorder.changes(after_stream(played), "prose") == []  # kept prose is never repainted
    if name in ("swapped-longer", "swapped-shorter"):
        window = after_stream(played)
        assert len(played.recorder.changes(window, "prose")) == 1, "the prose changed in more than one frame"
        if name == "swapped-shorter":  # its message keeps its height until the turn settles, then gives back
            heights = [f.regions["message"][3] for f in window]  # the blank rows at its foot, in the same frame
            assert len(set(heights)) == (2 if played.following else 1) and heights == sorted(heights, reverse=True)
            assert played.recorder.changes(window, "prose")[0] == next(
                f.index for f in window if f.regions["message"][3] == heights[-1]
            )
    if name == "failed-then-retry":
        assert any(s.startswith("couldn't make this turn consistent · ^r retry") for s in seen), seen
    if name == "narrator-busy":
        assert "narrator busy, retrying in 1 s" in seen
    if name == "no-prose-first":
        shown = [s for s in seen if s]  # a sign of life before any prose: "writing…" unless the correction came first
        assert shown[shown[0] == "writing…" :][:1] == ["correcting (1/2)…"] and seen[-1] == "", seen


def size_params(quick: tuple[int, int] = QUICK) -> list[Any]:
    return [
        pytest.param(size, id=label, marks=() if size == quick else pytest.mark.slow)
        for size, label in zip(SIZES, SIZE_IDS, strict=True)
    ]


@pytest.mark.parametrize("size", size_params())
@pytest.mark.parametrize("name", list(CASES))
async def test_nothing_moves_over_the_whole_turn(frame_recorder: Any, name: str, size: tuple[int, int]) -> None:
    played = await play(frame_recorder, CASES[name], size)
    assert_turn_geometry(played)
    check_outcome(name, played)


@pytest.mark.parametrize("size", size_params(quick=(80, 24)))
@pytest.mark.parametrize("name", list(CASES))
async def test_after_page_up_nothing_moves_at_all(frame_recorder: Any, name: str, size: tuple[int, int]) -> None:
    played = await play(frame_recorder, CASES[name], size, page_up=True)
    assert_turn_geometry(played, page_up=True)
    check_outcome(name, played, painted=False)
    assert played.following == (name == "failed-then-retry")  # where the player left it, until ctrl+r


@pytest.mark.parametrize("size", size_params())
@pytest.mark.parametrize("page_up", [False, True], ids=["at-the-bottom", "after-page-up"])
@pytest.mark.parametrize("paragraphs", range(1, 9))
async def test_one_to_eight_paragraphs_stream_without_a_jump(
    frame_recorder: Any, paragraphs: int, page_up: bool, size: tuple[int, int]
) -> None:
    case = Case(lambda gate, n: [GatedReply(turn_text(prose(n, "p"), TAKE_LAMP))], releases=False)
    played = await play(frame_recorder, case, size, paragraphs=paragraphs, page_up=page_up)
    frames = assert_turn_geometry(played, page_up=page_up)
    assert played.game.latest_message().prose.text == prose(paragraphs, "p")
    assert played.following != page_up  # paged up, the player is left where they were
    if not page_up:
        rows = [row for k in range(1, paragraphs + 1) if (row := frames[-1].row_of(f"[p{k}]")) is not None]
        assert rows == sorted(rows) and frames[-1].row_of(f"[p{paragraphs}]") is not None


@pytest.mark.parametrize(
    "name,baseline",
    [
        ("prose-kept", "correction_prose_kept"),
        ("swapped-longer", "correction_prose_changed"),
        ("failed-then-retry", "correction_failed"),
        ("cancelled-mid-correction", "correction_cancelled"),
    ],
)
async def test_the_states_a_player_sees_match_the_reviewed_baseline(
    frame_recorder: Any, frame_baselines: Any, name: str, baseline: str
) -> None:
    """The order of what the player sees from the end of the stream on (how long each state lasts is
    timing; the order is not), reviewed once and kept."""
    played = await play(frame_recorder, CASES[name], QUICK)
    retry = [f.index for f in played.recorder.frames if "key" in f.marks][1:]
    window = [f for f in after_stream(played) if not retry or f.index < retry[0]]  # a retry streams again
    timing = ("texts.content", "texts.following")
    counted = ("texts.closed",)  # a counter the geometry checks read (`split_at_close`), not a state shown
    data = {key: value for key, value in played.recorder.sequences(window).items() if key not in timing + counted}
    frame_baselines.check(baseline, data)


@pytest.mark.parametrize("size", size_params())
async def test_undo_moves_nothing(frame_recorder: Any, size: tuple[int, int]) -> None:
    """ctrl+z keeps the undone message where it is, marked undone: nothing moves for a second after."""
    case = Case(lambda gate, n: [GatedReply(turn_text(prose(n, "u"), TAKE_LAMP))], releases=False, action="undo")
    played = await play(frame_recorder, case, size)
    assert_turn_geometry(played)
    assert_no_shift(played.recorder.since("undo"), played.lines, settled=lambda frame: True)
    assert played.game.latest_message().outcome == "undone"
    assert played.app.session.state["items"]["lamp"] == "shore"


async def test_the_message_below_takes_the_blank_rows_the_turn_above_kept(frame_recorder: Any) -> None:
    """A turn keeps its reserved rows when it ends (giving them back would drop every line above);
    the next turn takes them in the frame it appears, so no blank gap is left between turns."""
    played = await play(frame_recorder, CASES["prose-kept"], (120, 40))
    first = next(f for f in played.whole_turn() if f.row_of("› take lamp") is not None)
    echo = first.row_of("› take lamp")
    above = max(r for r in (first.row_of("[e1]"), first.row_of("[e2]")) if r is not None)
    assert echo - above == 2, first.screen[above : echo + 1]  # the prose, the empty status row, the echo


async def test_status_updates_never_trigger_a_layout() -> None:
    """The status row is one line, so a status change repaints without laying out the screen."""
    gate = asyncio.Event()
    first = prose(1, "a")
    session = Session(
        parse_pack(SHORE_PACK, "shore.toml"),
        GatedNarrator([GatedReply(turn_text(first, TAKE_BOTH)), GatedReply(turn_text(None, TAKE_LAMP), before=gate)]),
    )
    app = StoryloomApp(session, blink=False)
    async with app.run_test(size=QUICK) as pilot:
        await pilot.press(*"take lamp", "enter")
        await until(
            pilot,
            lambda: app.game.latest_message() is not None and app.game.latest_message().status.kind == "correcting",
        )
        await pilot.pause()
        message = app.game.latest_message()
        before = message.region
        layouts: list[int] = []
        original = app.screen._refresh_layout  # measuring layout passes: Textual's private step, directly

        def counting(*args: Any, **kwargs: Any) -> None:
            layouts.append(1)
            original(*args, **kwargs)

        app.screen._refresh_layout = counting  # type: ignore[method-assign]
        message.status.retrying(2)
        await pilot.pause()
        message.status.correcting(1, 2)
        await pilot.pause()
        del app.screen._refresh_layout
        gate.set()
        await until(pilot, lambda: not app.game.running)
        assert layouts == []
        assert message.region == before


async def test_on_textuals_own_repaint_a_turn_is_painted_without_a_jump_too(
    frame_recorder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside the tested Textual releases the game repaints with Textual's own compositor (slower):
    the same turn keeps the same promises."""
    from storyloom.tui import _textual_internals

    monkeypatch.setattr(_textual_internals, "TESTED", False)
    played = await play(frame_recorder, CASES["swapped-longer"], QUICK)
    assert not isinstance(played.game._compositor, _textual_internals.RowCroppedCompositor)
    assert_turn_geometry(played)
    check_outcome("swapped-longer", played)
