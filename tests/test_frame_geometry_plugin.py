"""The frame-geometry plugin on small apps, through its public API only (`pytest_frame_geometry`).

Runs on the lowest and the highest supported Textual (.ci/run): nothing here depends on exact paint.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pytest_frame_geometry import SUPPORTED, Find, FrameRecorder, Line, assert_no_shift
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Label, Log, Static


class Dialog(ModalScreen[None]):
    def compose(self) -> ComposeResult:
        yield Label("Really quit?", id="question")


class Board(App[None]):
    """A bordered note, a scrolled list of twenty rows, a log and a footer."""

    BINDINGS = [("q", "quit", "Quit")]
    CSS = "#note { border: round white; padding: 0 1; height: 5; } #list { height: 4; } Log { height: 6; }"

    def compose(self) -> ComposeResult:
        yield Static("a note", id="note")
        with VerticalScroll(id="list"):
            for k in range(20):
                yield Static(f"row {k}", id=f"row-{k}")
        yield Log()
        yield Footer()


async def test_recorders_stack_and_stop_one_by_one_and_the_app_then_displays_as_before():
    app = Board()
    async with app.run_test(size=(40, 24)) as pilot:
        first = FrameRecorder(app, texts={"note": "#note"}).start()
        with FrameRecorder(app, texts={"note": "#note"}) as second:
            first.stop()
            app.query_one("#note", Static).update("changed")
            await pilot.pause()
            assert second.recording and not first.recording
        assert {f.texts["note"] for f in first.frames} == {first.frames[0].texts["note"]}  # stopped first
        assert "changed" in second.frames[-1].texts["note"] and len(second.frames) >= 2
        assert not second.recording
        assert "_display" not in vars(app) and "_press_keys" not in vars(app)
        app.query_one("#note", Static).update("again")
        await pilot.pause()  # the app still paints, and no recorder sees it
        assert "changed" in second.frames[-1].texts["note"]


async def test_the_frame_showing_at_start_is_frame_0_and_a_window_includes_the_frame_before_its_mark():
    app = Board()
    async with app.run_test(size=(40, 24)) as pilot:
        recorder = FrameRecorder(app, texts={"note": Find("#note", content=True)}).start()
        assert [f.texts["note"] for f in recorder.frames] == ["a note\n\n"]  # before anything is painted again
        recorder.mark("key")
        app.query_one("#note", Static).update("after the key")
        await pilot.pause()
        window = recorder.since("key")
        assert [f.texts["note"] for f in window][:2] == ["a note\n\n", "after the key\n\n"]
        assert recorder.since("key", before=False)[0].texts["note"] == "after the key\n\n"
        recorder.stop()


async def test_pilot_key_presses_are_marked_before_they_are_sent():
    app = Board()
    async with app.run_test(size=(40, 24)) as pilot:
        recorder = FrameRecorder(app, regions={"dialog": Find("#question")}).start()
        await pilot.press("x", "q")
        assert ["press:x", "press:q"] == [m for m in recorder.all_marks() if m.startswith("press:")]
        recorder.stop()


async def test_lookups_search_the_whole_screen_stack_so_the_footer_under_a_dialog_is_found():
    app = Board()
    async with app.run_test(size=(40, 24)):
        recorder = FrameRecorder(
            app,
            regions={"footer": "Footer", "question": "#question", "named": Find("#question", screen="dialog")},
            texts={"footer": "Footer"},
        ).start()
        app.install_screen(Dialog(), name="dialog")
        app.push_screen("dialog")
        dialog = await recorder.wait_for(
            lambda f: f.states["question"] == "shown" and "Quit" in (f.texts["footer"] or "")
        )
        assert dialog.states["footer"] == "shown" and dialog.regions["footer"] == (0, 23, 40, 1)
        assert dialog.regions["named"] == dialog.regions["question"] is not None
        app.pop_screen()
        gone = await recorder.wait_for(lambda frame: frame.states["question"] == "absent")
        assert gone.regions["question"] is None and gone.states["named"] == "hidden"  # installed, not on the stack
        recorder.stop()


async def test_a_widget_on_a_screen_under_one_that_is_not_a_modal_is_covered_and_shows_no_text():
    app = Board()
    async with app.run_test(size=(40, 24)):
        recorder = FrameRecorder(app, regions={"footer": "Footer"}, texts={"note": "#note"}).start()
        assert recorder.frames[0].states == {"footer": "shown", "note": "shown"}
        app.push_screen(Screen())  # a whole screen over the board: nothing of it is painted
        over = await recorder.wait_for(lambda frame: frame.states["footer"] == "covered")
        assert over.states["note"] == "covered" and over.texts["note"] is None
        recorder.stop()


async def test_absent_hidden_off_screen_and_covered_are_told_apart_and_regions_can_be_clipped():
    app = Board()
    async with app.run_test(size=(40, 24)) as pilot:
        rows = {"row 0": "#row-0", "row 2": "#row-2", "row 9": "#row-9", "clipped 9": Find("#row-9", clip=True)}
        recorder = FrameRecorder(app, regions={**rows, "note": "#note", "gone": "#nothing", "list": "#list"}).start()
        first = recorder.frames[0]
        assert first.states == {
            "row 0": "shown", "row 2": "shown", "row 9": "off-screen", "clipped 9": "off-screen",
            "note": "shown", "gone": "absent", "list": "shown",
        }  # fmt: skip
        assert first.regions["row 9"] is not None and first.regions["clipped 9"] is None  # laid out, not shown
        app.query_one("#row-2").display = False
        app.query_one("#note").loading = True
        await pilot.pause()
        last = await recorder.wait_for(lambda frame: frame.states["note"] == "covered")
        assert last.states["row 2"] == "hidden" and last.regions["row 2"] is None
        app.query_one("#list").scroll_to(y=1, animate=False)
        scrolled = await recorder.wait_for(lambda frame: frame.states["row 0"] == "off-screen")
        assert scrolled.scroll["list"] == (0, 1) and scrolled.regions["row 0"] is not None
        recorder.stop()


class Tall(App[None]):
    """A bordered, padded note six rows high in a view four rows high."""

    CSS = "#view { height: 4; } #tall { height: 6; border: round white; padding: 0 1; }"

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="view"):
            yield Static("top\nmiddle\nbottom", id="tall")


async def test_a_clipped_region_is_the_part_that_shows_and_a_content_region_leaves_out_border_and_padding():
    app = Tall()
    async with app.run_test(size=(30, 10)):
        regions = {"whole": "#tall", "clipped": Find("#tall", clip=True), "content": Find("#tall", content=True)}
        recorder = FrameRecorder(app, regions=regions).start()
        first = recorder.frames[0]
        assert first.regions["whole"] == (0, 0, 28, 6)  # beside the scrollbar, reaching two rows below the view
        assert first.regions["clipped"] == (0, 0, 28, 4)
        assert first.regions["content"] == (2, 1, 24, 4)  # inside the round border and one column of padding
        app.query_one("#view").scroll_to(y=2, animate=False)
        scrolled = await recorder.wait_for(lambda frame: frame.regions["whole"] != first.regions["whole"])
        assert scrolled.regions["whole"] == (0, -2, 28, 6) and scrolled.regions["clipped"] == (0, 0, 28, 4)
        assert scrolled.states["whole"] == "shown"
        recorder.stop()


async def test_wait_for_fails_naming_what_it_saw_when_no_frame_matches_in_time():
    app = Board()
    async with app.run_test(size=(40, 24)):
        with FrameRecorder(app, texts={"note": "#note"}) as recorder:
            with pytest.raises(
                AssertionError, match=r"no frame matched within 0.2 s \(\d+ frames recorded, still recording\)"
            ):
                await recorder.wait_for(lambda frame: frame.texts["note"] == "never", timeout=0.2)


async def test_texts_can_leave_out_border_and_padding():
    app = Board()
    async with app.run_test(size=(40, 24)):
        with FrameRecorder(app, texts={"whole": "#note", "content": Find("#note", content=True)}) as recorder:
            frame = recorder.frames[0]
    assert frame.texts["whole"] is not None and frame.texts["whole"].startswith("╭")
    assert frame.texts["content"] == "a note\n\n"


async def test_lines_are_followed_by_exact_text_regex_or_row_so_row_1_is_not_row_10():
    app = Board()
    async with app.run_test(size=(40, 24)) as pilot:
        log = app.query_one(Log)
        with FrameRecorder(app, regions={"log": "Log"}, screen=True) as recorder:
            for _ in range(3):
                log.write_line("same line")
            log.write_line("row 1")
            log.write_line("row 10")
            await pilot.pause()
        last = recorder.frames[-1]
    assert last.row_of("row 1") is None  # a substring: also in "row 10" (and in the list above)
    assert Line.exact("row 1").find(last) == (None, 2)  # the list's "row 1" too
    exact, regex = Line.exact("row 1", within="log"), Line.regex(r"row 1\b", within="log")
    assert exact.find(last)[0] == regex.find(last)[0] == last.row_of("row 10") - 1
    assert Line.containing("same line").find(last) == (None, 3)  # on three rows: not followed
    assert Line.row("log", 1).find(last)[0] == last.content["log"][1] + 1


async def test_a_line_followed_by_its_row_in_a_log_whose_lines_repeat_catches_a_jump():
    app = Board()
    async with app.run_test(size=(40, 24)) as pilot:
        log = app.query_one(Log)
        log.write_lines(["same line"] * 3)
        await pilot.pause()
        with FrameRecorder(app, regions={"log": "Log"}, screen=True) as recorder:
            log.styles.margin = (2, 0, 0, 0)  # the log, and every line in it, jumps down two rows
            await pilot.pause()
            await pilot.pause()
    with pytest.raises(AssertionError, match="moved down"):
        assert_no_shift(recorder.frames, [Line.row("log", 1)])
    with pytest.raises(AssertionError, match="never seen.*matched 3 rows"):
        assert_no_shift(recorder.frames, ["same line"])


async def test_no_shift_fails_rather_than_checking_nothing():
    app = Board()
    async with app.run_test(size=(40, 24)):
        with FrameRecorder(app, regions={"note": "#note"}) as rowless:
            pass
        with FrameRecorder(app, regions={"note": "#note"}, screen=True) as recorder:
            pass
    with pytest.raises(AssertionError, match=r"record with screen=True"):
        assert_no_shift(rowless.frames, ["a note"])
    with pytest.raises(AssertionError, match="'nowhere' was never seen"):
        assert_no_shift(recorder.frames, ["a note", "nowhere"])
    with pytest.raises(AssertionError, match="nothing was followed"):
        assert_no_shift(recorder.frames, [Line.exact("nowhere", optional=True)])
    with pytest.raises(AssertionError, match="'input' given as fixed="):
        assert_no_shift(recorder.frames, ["a note"], fixed=["input"])
    with pytest.raises(AssertionError, match="'height' given as content="):
        assert_no_shift(recorder.frames, ["a note"], content="height")
    assert_no_shift(recorder.frames, ["a note", Line.exact("row 0")], fixed=["note"])


async def test_the_rows_kept_from_each_update_are_what_a_full_render_paints():
    app = Board()
    async with app.run_test(size=(40, 24)) as pilot:
        with FrameRecorder(app, screen=True) as recorder:
            log = app.query_one(Log)
            for k in range(12):
                log.write_line(f"line {k}")
                app.query_one("#note", Static).update(f"note {k}")
                await pilot.pause()
            app.push_screen(Dialog())
            await pilot.pause()
            await pilot.pause()
        with FrameRecorder(app, screen=True) as fresh:  # its frame 0 is a whole render of the screen now
            pass
    assert len(recorder.frames) > 12
    assert recorder.frames[-1].screen == fresh.frames[0].screen
    assert any("Really quit?" in row for row in fresh.frames[0].screen)


def test_on_a_textual_outside_the_tested_range_the_fixtures_skip_and_other_tests_pass(tmp_path: Path):
    (tmp_path / "conftest.py").write_text(
        "import pytest_frame_geometry._textual as t\nt.textual_version = lambda: '6.12.0'\n", encoding="utf-8"
    )
    (tmp_path / "test_x.py").write_text(
        textwrap.dedent(
            """
            def test_plain():
                assert 1 + 1 == 2

            def test_frames(frame_recorder):
                raise AssertionError("not reached")

            def test_baselines(frame_baselines):
                raise AssertionError("not reached")

            def test_a_recorder_started_directly():
                from pytest_frame_geometry import FrameRecorder
                from textual.app import App

                FrameRecorder(App()).start()
                raise AssertionError("not reached")
            """
        ),
        encoding="utf-8",
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed, 3 skipped" in run.stdout
    assert run.stdout.count(f"frame_geometry supports {SUPPORTED}; Textual 6.12.0 is installed") == 3


def test_loading_the_plugin_imports_no_textual_so_a_project_that_does_not_use_it_is_untouched():
    """Loading the plugin (in every pytest run of the environment) imports neither Textual nor the
    recorder: a Textual whose modules moved cannot break it, and a suite that never asks for the
    fixtures pays nothing for them. The public names still import when first asked for."""
    probe = (
        "import sys\n"
        "import pytest_frame_geometry, pytest_frame_geometry.plugin\n"
        "loaded = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "assert loaded == [], loaded\n"
        "from pytest_frame_geometry import Find, FrameRecorder, assert_calm, assert_no_shift\n"
        "assert 'textual.app' in sys.modules and Find('#x').selector == '#x'\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
