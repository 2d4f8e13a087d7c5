"""Frame geometry: record every frame a Textual app paints, with widget regions and painted text.

Textual has no public per-frame hook, and pytest-textual-snapshot captures one
frame per test. This module wraps the app's display step (`App._display`, the
call the screen makes with each compositor update, which also runs in headless
mode) on one app instance, and after each real paint records, for the widgets
you name, their region on screen and the text painted inside it. Tests can then
assert what a player would see frame by frame: that a message never moved while
it was being corrected, that its prose changed in exactly one frame, and so on.

It is a pytest plugin (entry point `frame_geometry`), providing:

* the `frame_recorder` fixture: `frame_recorder(app, regions={...}, texts={...})`
  returns a started `FrameRecorder` (call it inside `app.run_test()`);
* `--frames-update` (or `FRAMES_UPDATE=1`): rewrite the JSON baselines
  instead of comparing with them;
* the ini option `frame_baselines` (default `snapshots/frames`), relative to the rootdir;
* `assert_no_shift(frames, lines, ...)`: the rules "no line already painted moves down; a line moves
  up only as far as text was added below it; once settled, nothing moves" checked on every frame
  (record with `screen=True`), for any app whose view must not jump.

Leans on Textual internals (`App._display`, `Screen._compositor`), reached through
`storyloom.tui._textual_internals`, which checks the Textual version; covered by this project's frame tests.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.geometry import Region
from textual.screen import Screen
from textual.widget import Widget

from storyloom.tui._textual_internals import screen_compositor, unwrap_display, wrap_display
from storyloom.tui.testing.calm import assert_calm as assert_calm

RegionTuple = tuple[int, int, int, int]
Target = str | Callable[[App[Any]], Any]
"""A CSS selector (the first match on the current screen), or a callable given the app."""

UPDATE_ENV = "FRAMES_UPDATE"


@dataclass(frozen=True)
class Frame:
    """What one painted frame showed.

    Attributes:
        index: the frame's number since recording started.
        phase: the latest mark set before this frame (see `FrameRecorder.mark`).
        marks: the marks set since the previous frame, in order.
        regions: name -> (x, y, width, height) on screen, or None when the widget was absent.
        texts: name -> the text painted inside that widget's visible region (lines joined by
            newlines, trailing spaces removed), or what a callable returned.
        screen: every row of the screen as painted (trailing spaces removed), when recorded
            with `screen=True`; else empty.
    """

    index: int
    phase: str
    marks: tuple[str, ...]
    regions: dict[str, RegionTuple | None]
    texts: dict[str, str | None]
    screen: tuple[str, ...] = ()

    def row_of(self, text: str) -> int | None:
        """The screen row showing `text`, if exactly one row shows it (else None: absent, or not a name)."""
        found = None
        for y, row in enumerate(self.screen):
            if text in row:
                if found is not None:
                    return None
                found = y
        return found


@dataclass
class FrameRecorder:
    """Records the frames one app paints; see the module docstring.

    Args:
        app: a running app (inside `run_test`).
        regions: name -> target whose region is recorded per frame.
        texts: name -> target whose painted text is recorded per frame (a callable
            target may return any string it likes, e.g. a widget's state).
        screen: also record every painted row of the screen (for `Frame.row_of` and `assert_no_shift`).
    """

    app: App[Any]
    regions: Mapping[str, Target] = field(default_factory=dict)
    texts: Mapping[str, Target] = field(default_factory=dict)
    screen: bool = False
    frames: list[Frame] = field(default_factory=list)
    _phase: str = ""
    _pending_marks: list[str] = field(default_factory=list)
    _recording: bool = False

    # -- recording

    def start(self) -> FrameRecorder:
        """Begin recording: wrap this app instance's display step."""
        if self._recording:
            return self
        wrap_display(self.app, self._record)
        self._recording = True
        return self

    def stop(self) -> None:
        """Stop recording and restore the app's own display step."""
        if self._recording:
            unwrap_display(self.app)
            self._recording = False

    def mark(self, label: str) -> None:
        """Label the frames painted from now on (e.g. with each engine event's name)."""
        self._phase = label
        self._pending_marks.append(label)

    def _record(self, screen: Screen[Any]) -> None:
        compositor = screen_compositor(screen)
        strips = None
        regions: dict[str, RegionTuple | None] = {}
        for name, target in self.regions.items():
            widget = self._resolve(screen, target)
            region = widget.region if isinstance(widget, Widget) else None
            regions[name] = tuple(region) if region else None  # type: ignore[assignment]
        texts: dict[str, str | None] = {}
        for name, target in self.texts.items():
            if callable(target) and not isinstance(target, str):
                value = target(self.app)
                texts[name] = value if value is None else str(value)
                continue
            widget = self._resolve(screen, target)
            visible = compositor.visible_widgets.get(widget) if isinstance(widget, Widget) else None
            if visible is None:
                texts[name] = None
                continue
            if strips is None:
                strips = compositor.render_strips()
            texts[name] = _painted_text(strips, visible[0].intersection(visible[1]))
        rows: tuple[str, ...] = ()
        if self.screen:
            rows = tuple(strip.text.rstrip() for strip in (strips or compositor.render_strips()))
        self.frames.append(Frame(len(self.frames), self._phase, tuple(self._pending_marks), regions, texts, rows))
        self._pending_marks.clear()

    @staticmethod
    def _resolve(screen: Screen[Any], target: Target) -> Any:
        if isinstance(target, str):
            found = screen.query(target)
            return found.first() if found else None
        return target(screen.app)

    # -- reading the recording

    def between(self, start: str, end: str | None = None, *, include_end: bool = False) -> list[Frame]:
        """Frames from the first frame after mark `start` up to (not including) the one after mark `end`.

        With `include_end`, the frames after `end` are included too (to the end of the recording).
        """
        frames: list[Frame] = []
        started = ended = False
        for frame in self.frames:
            if start in frame.marks:
                started = True
            if end is not None and end in frame.marks:
                ended = True
            if started and (not ended or include_end):
                frames.append(frame)
        if not started:
            raise AssertionError(f"no frame was painted after the mark {start!r}; marks seen: {self.all_marks()}")
        return frames

    def since(self, mark: str) -> list[Frame]:
        """Every frame painted after `mark` was set, to the end of the recording (the mark set before
        the key press: the whole life of what the key started)."""
        return self.between(mark, include_end=True)

    def all_marks(self) -> list[str]:
        """Every mark, in the order the frames saw them."""
        return [m for f in self.frames for m in f.marks] + list(self._pending_marks)

    @staticmethod
    def changes(frames: list[Frame], name: str, kind: str = "texts") -> list[int]:
        """Indexes of the frames in which `name` (a text, or with kind="regions" a region) differs
        from the frame before it."""
        values = [getattr(f, kind)[name] for f in frames]
        return [frames[i].index for i in range(1, len(frames)) if values[i] != values[i - 1]]

    @staticmethod
    def sequences(frames: list[Frame]) -> dict[str, list[Any]]:
        """Per region and per text, the sequence of distinct consecutive values.

        This is what a baseline stores: how many frames a state lasted depends on
        timing, but the order of states a player sees does not.
        """
        out: dict[str, list[Any]] = {}
        if not frames:
            return out
        for kind in ("regions", "texts"):
            for name in getattr(frames[0], kind):
                seq: list[Any] = []
                for frame in frames:
                    value = getattr(frame, kind)[name]
                    value = list(value) if isinstance(value, tuple) else value
                    if not seq or seq[-1] != value:
                        seq.append(value)
                out[f"{kind}.{name}"] = seq
        return out


def assert_no_shift(
    frames: Sequence[Frame],
    lines: Iterable[str],
    *,
    content: str | None = None,
    settled: Callable[[Frame], bool] | None = None,
    swap: str | None = None,
    fixed: Iterable[str] = (),
) -> None:
    """Assert on every pair of consecutive frames that nothing already painted jumped.

    The rules, checked on the rows of the named `lines` (recorded with `screen=True`):

    1. no line moves down;
    2. lines move up only together, all by the same rows, and (with `content`) by exactly as many
       rows as the scrolled content grew in that frame: text was added below them;
    3. from the first frame where `settled(frame)` holds to the end, no line moves at all, except in
       a frame where the text named `swap` changed and rule 2 holds (a swap to a longer text);
    4. the regions named in `fixed` never change.

    A line is found by its text: the one row of the screen that contains it (a line not on screen,
    or on more than one row, is not followed in that frame). Give lines that only one row shows.

    Args:
        frames: the frames, from before the key press to well after things settle.
        lines: texts that each name one line (e.g. the start of a paragraph, a command echo).
        content: name of a recorded text holding the height of the scrolled content (an int).
        settled: from the first frame this holds for, nothing may move (e.g. a status is shown).
        swap: name of a recorded text whose change in a frame allows that frame's move up after `settled`.
        fixed: names of recorded regions that must stay the same in every frame.

    Raises:
        AssertionError: listing each frame that broke a rule: its index, phase, and what moved where.
    """
    names = list(lines)
    problems: list[str] = []
    for name in fixed:
        seen = {frame.regions.get(name) for frame in frames}
        if len(seen) > 1:
            problems.append(f"region {name!r} changed: {sorted(map(repr, seen))}")
    settled_at = next((f.index for f in frames if settled is not None and settled(f)), None)
    for before, after in itertools.pairwise(frames):
        moves: dict[str, tuple[int, int]] = {}
        for name in names:
            a, b = before.row_of(name), after.row_of(name)
            if a is not None and b is not None and a != b:
                moves[name] = (a, b)
        if not moves:
            continue
        where = f"frame {after.index} (after {after.phase or 'the start'!r})"
        shown = ", ".join(f"{name!r} {a}->{b}" for name, (a, b) in moves.items())
        down = {name for name, (a, b) in moves.items() if b > a}
        if down:
            problems.append(f"{where}: moved down: {shown}")
            continue
        shifts = {b - a for a, b in moves.values()}
        if len(shifts) > 1:
            problems.append(f"{where}: lines moved up by different amounts: {shown}")
            continue
        rows = -shifts.pop()
        if content is not None:
            grown = int(after.texts[content] or 0) - int(before.texts[content] or 0)
            if grown != rows:
                problems.append(f"{where}: moved up {rows} rows while the content grew {grown}: {shown}")
                continue
        if settled_at is not None and after.index >= settled_at:
            if swap is None or after.texts.get(swap) == before.texts.get(swap):
                problems.append(f"{where}: moved after things settled (frame {settled_at}): {shown}")
    if problems:
        raise AssertionError(f"{len(problems)} frame(s) broke the no-shift rules:\n  " + "\n  ".join(problems))


def _painted_text(strips: list[Any], region: Region) -> str:
    x1, x2 = region.x, region.right
    lines = [strips[y].crop(x1, x2).text.rstrip() for y in range(region.y, min(region.bottom, len(strips)))]
    return "\n".join(lines)


class FrameBaselines:
    """JSON baselines of recorded frame sequences, compared or rewritten.

    Args:
        directory: where the baseline files live.
        update: rewrite baselines instead of comparing.
    """

    def __init__(self, directory: Path, update: bool) -> None:
        self.directory = directory
        self.update = update

    def check(self, name: str, data: Any) -> None:
        """Compare `data` (JSON-serialisable) with the baseline `name`, or write it when updating.

        Raises:
            AssertionError: the baseline is missing or differs (with the path and how to update).
        """
        path = self.directory / f"{name}.json"
        text = _dump(data)
        if self.update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return
        if not path.is_file():
            raise AssertionError(
                f"no frame baseline {path}; run with --frames-update (or {UPDATE_ENV}=1) to write it, then review it"
            )
        expected = json.loads(path.read_text(encoding="utf-8"))
        actual = json.loads(text)
        if expected != actual:
            diff = (
                [
                    f"  {key}: expected {expected.get(key)!r}\n  {' ' * len(key)}  actual   {actual.get(key)!r}"
                    for key in sorted(set(expected) | set(actual))
                    if expected.get(key) != actual.get(key)
                ]
                if isinstance(expected, dict) and isinstance(actual, dict)
                else [f"  {expected!r} != {actual!r}"]
            )
            raise AssertionError(f"frames differ from the baseline {path}:\n" + "\n".join(diff))


def _dump(data: Any) -> str:
    """JSON with one value per line, so a baseline diff shows which state changed."""
    if isinstance(data, dict) and all(isinstance(v, list) for v in data.values()):
        keys = sorted(data)
        body = ",\n".join(
            f" {json.dumps(k)}: [\n" + ",\n".join(f"  {json.dumps(v, ensure_ascii=False)}" for v in data[k]) + "\n ]"
            for k in keys
        )
        return "{\n" + body + "\n}\n"
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


# -- the pytest plugin


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("frame-geometry")
    group.addoption(
        "--frames-update",
        action="store_true",
        default=False,
        help=f"rewrite frame-geometry baselines instead of comparing (or set {UPDATE_ENV}=1)",
    )
    parser.addini(
        "frame_baselines",
        "directory of frame-geometry JSON baselines, relative to the rootdir",
        default="snapshots/frames",
    )


@pytest.fixture
def frame_baselines(request: pytest.FixtureRequest) -> FrameBaselines:
    """The project's frame baselines: `frame_baselines.check(name, data)`."""
    config = request.config
    update = bool(config.getoption("--frames-update")) or os.environ.get(UPDATE_ENV, "") not in ("", "0")
    return FrameBaselines(Path(config.rootpath) / config.getini("frame_baselines"), update)


@pytest.fixture
def frame_recorder() -> Iterator[Callable[..., FrameRecorder]]:
    """A factory: `frame_recorder(app, regions={...}, texts={...}, screen=False)` starts recording that app's frames.

    Call it inside `async with app.run_test()`; recording stops at the end of the test.
    """
    recorders: list[FrameRecorder] = []

    def make(
        app: App[Any],
        *,
        regions: Mapping[str, Target] | None = None,
        texts: Mapping[str, Target] | None = None,
        screen: bool = False,
    ) -> FrameRecorder:
        recorder = FrameRecorder(app, dict(regions or {}), dict(texts or {}), screen=screen).start()
        recorders.append(recorder)
        return recorder

    yield make
    for recorder in recorders:
        recorder.stop()
