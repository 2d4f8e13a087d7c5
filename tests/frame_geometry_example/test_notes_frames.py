"""Frame geometry for the notes app, through the plugin's public API only: adding a note moves no
note down, moves them up only by the rows added, never moves the input line, and shows the states
of the reviewed baseline in order; and, read as a reader reads it, the list stays calm (the calm-reading
rules: no row of text moves down, rises by more than the text that arrived, vanishes or re-wraps). The
same checks fail on the jumping version of the app."""

from __future__ import annotations

from typing import Any

import pytest
from notes_app import JumpyNotesApp, NotesApp
from pytest_frame_geometry import Find, Frame, FrameRecorder, Line, assert_calm, assert_no_shift, sheets_of

EARLIER = ["buy milk", "call Ada", "fix the gate", "post the letter", "water the plants", "book the train"]
LINES = [Line.exact(f"• {text}", within="notes", optional=True) for text in EARLIER] + [
    Line.exact("• read the map", within="notes")
]


async def add_a_note(frame_recorder: Any, app: NotesApp) -> FrameRecorder:
    """Record every frame from before Enter until the status says the note is saved."""
    async with app.run_test(size=(50, 8)) as pilot:
        recorder = frame_recorder(
            app,
            screen=True,
            regions={"notes": Find("#notes", clip=True), "entry": "#entry"},
            texts={"status": "#status", "content": lambda app: app.query_one("#notes").virtual_size.height},
        )
        await pilot.press(*"read the map", "enter")
        await recorder.wait_for(lambda frame: frame.texts["status"] == "7 notes")
    return recorder


def check_nothing_jumps(recorder: FrameRecorder) -> list[Any]:
    window = recorder.since("press:enter")  # from the frame before Enter
    assert_no_shift(window, LINES, content="content", fixed=["entry", "notes"])
    return window


async def test_adding_a_note_moves_nothing_down_and_matches_the_reviewed_baseline(frame_recorder, frame_baselines):
    recorder = await add_a_note(frame_recorder, NotesApp(EARLIER))
    window = check_nothing_jumps(recorder)
    assert window[-1].row_of("• read the map") == 3  # the newest note at the foot of the list
    frame_baselines.check("add_a_note", recorder.sequences(window))


async def test_the_same_check_fails_on_the_jumping_version(frame_recorder):
    recorder = await add_a_note(frame_recorder, JumpyNotesApp(EARLIER))
    with pytest.raises(AssertionError, match="moved down"):
        check_nothing_jumps(recorder)


def notes_view(frame: Frame) -> list[str]:
    """The rows of the notes list as painted (inside its scrollbar gutter): what a reader reads."""
    x, y, width, height = frame.content["notes"] or (0, 0, 0, 0)
    return [row.ljust(x + width)[x : x + width] for row in frame.screen[y : y + height]]


async def test_reading_the_notes_stays_calm_while_one_is_added(frame_recorder):
    recorder = await add_a_note(frame_recorder, NotesApp(EARLIER))
    sheets = sheets_of(recorder.since("press:enter"), notes_view)
    assert any("• read the map" in row for row in sheets[-1].rows)
    assert_calm(sheets)


async def test_the_calm_reading_check_fails_on_the_jumping_version(frame_recorder):
    recorder = await add_a_note(frame_recorder, JumpyNotesApp(EARLIER))
    with pytest.raises(AssertionError, match="rule 1, a line moved down"):
        assert_calm(sheets_of(recorder.since("press:enter"), notes_view))
