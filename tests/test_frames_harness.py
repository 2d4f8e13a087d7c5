"""The frame recorder itself, on a tiny app: it sees what moved, what changed, and when."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from storyloom.tui.testing.frames import FrameBaselines


class Growing(App[None]):
    """A line of text above a box that a test can grow."""

    def compose(self) -> ComposeResult:
        yield Static("one line", id="text")
        yield Static("box", id="box")


async def test_recorder_sees_a_widget_move_and_its_text_change_once(frame_recorder):
    app = Growing()
    async with app.run_test(size=(40, 10)) as pilot:
        recorder = frame_recorder(app, regions={"box": "#box"}, texts={"text": "#text"})
        recorder.mark("start")
        app.query_one("#box", Static).styles.background = "red"  # a repaint, nothing moves
        await pilot.pause()
        recorder.mark("grow")
        app.query_one("#text", Static).update("first line\nsecond line")
        await pilot.pause()
        await pilot.pause()

    assert recorder.frames[0].phase == "" and recorder.frames[0].texts["text"] == "one line"  # recorded at start()
    assert recorder.frames[1].phase == "start"
    assert recorder.sequences(recorder.frames) == {
        "regions.box": [[0, 1, 40, 1], [0, 2, 40, 1]],
        "texts.text": ["one line", "first line\nsecond line"],
    }
    grow = recorder.between("grow")  # from the frame showing when the mark was set
    assert recorder.changes(recorder.frames, "text") == [grow[1].index]
    assert recorder.changes(recorder.frames, "box", "regions") == [grow[1].index]
    with pytest.raises(AssertionError, match="no frame was painted after the mark"):
        recorder.between("never")


async def test_recording_stops_with_the_fixture_and_the_app_displays_normally_again(frame_recorder):
    app = Growing()
    async with app.run_test(size=(40, 10)) as pilot:
        recorder = frame_recorder(app, regions={"box": "#box"})
        recorder.stop()
        count = len(recorder.frames)
        app.query_one("#text", Static).update("changed")
        await pilot.pause()
        assert len(recorder.frames) == count
        assert "_display" not in vars(app)


def test_baselines_fail_with_a_useful_message_and_can_be_rewritten(tmp_path):
    data = {"regions.box": [[0, 1, 40, 1]], "texts.text": ["a", "b"]}
    with pytest.raises(AssertionError, match="--frames-update"):
        FrameBaselines(tmp_path, update=False).check("case", data)
    FrameBaselines(tmp_path, update=True).check("case", data)
    FrameBaselines(tmp_path, update=False).check("case", data)
    with pytest.raises(AssertionError, match="texts.text"):
        FrameBaselines(tmp_path, update=False).check("case", {**data, "texts.text": ["a", "c"]})
