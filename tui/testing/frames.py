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
* the ini option `frame_baselines` (default `snapshots/frames`), relative to the rootdir.

Leans on Textual internals (`App._display`, `Screen._compositor`); pinned to
Textual 8.2.8 and covered by this project's frame tests.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.geometry import Region
from textual.screen import Screen
from textual.widget import Widget

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
    """

    index: int
    phase: str
    marks: tuple[str, ...]
    regions: dict[str, RegionTuple | None]
    texts: dict[str, str | None]


@dataclass
class FrameRecorder:
    """Records the frames one app paints; see the module docstring.

    Args:
        app: a running app (inside `run_test`).
        regions: name -> target whose region is recorded per frame.
        texts: name -> target whose painted text is recorded per frame (a callable
            target may return any string it likes, e.g. a widget's state).
    """

    app: App[Any]
    regions: Mapping[str, Target] = field(default_factory=dict)
    texts: Mapping[str, Target] = field(default_factory=dict)
    frames: list[Frame] = field(default_factory=list)
    _phase: str = ""
    _pending_marks: list[str] = field(default_factory=list)
    _recording: bool = False

    # -- recording

    def start(self) -> FrameRecorder:
        """Begin recording: wrap this app instance's display step."""
        if self._recording:
            return self
        original = self.app._display

        def display(screen: Screen[Any], renderable: Any) -> None:
            if renderable is not None and not self.app._batch_count:
                self._record(screen)
            original(screen, renderable)

        self.app._display = display  # type: ignore[method-assign]
        self._recording = True
        return self

    def stop(self) -> None:
        """Stop recording and restore the app's own display step."""
        if self._recording:
            del self.app._display
            self._recording = False

    def mark(self, label: str) -> None:
        """Label the frames painted from now on (e.g. with each engine event's name)."""
        self._phase = label
        self._pending_marks.append(label)

    def _record(self, screen: Screen[Any]) -> None:
        compositor = screen._compositor
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
        self.frames.append(Frame(len(self.frames), self._phase, tuple(self._pending_marks), regions, texts))
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
            raise AssertionError(f"no frame baseline {path}; run with --frames-update (or {UPDATE_ENV}=1) "
                                 "to write it, then review it")
        expected = json.loads(path.read_text(encoding="utf-8"))
        actual = json.loads(text)
        if expected != actual:
            diff = [f"  {key}: expected {expected.get(key)!r}\n  {' ' * len(key)}  actual   {actual.get(key)!r}"
                    for key in sorted(set(expected) | set(actual)) if expected.get(key) != actual.get(key)] \
                if isinstance(expected, dict) and isinstance(actual, dict) else [f"  {expected!r} != {actual!r}"]
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
    group.addoption("--frames-update", action="store_true", default=False,
                    help=f"rewrite frame-geometry baselines instead of comparing (or set {UPDATE_ENV}=1)")
    parser.addini("frame_baselines", "directory of frame-geometry JSON baselines, relative to the rootdir",
                  default="snapshots/frames")


@pytest.fixture
def frame_baselines(request: pytest.FixtureRequest) -> FrameBaselines:
    """The project's frame baselines: `frame_baselines.check(name, data)`."""
    config = request.config
    update = bool(config.getoption("--frames-update")) or os.environ.get(UPDATE_ENV, "") not in ("", "0")
    return FrameBaselines(Path(config.rootpath) / config.getini("frame_baselines"), update)


@pytest.fixture
def frame_recorder() -> Iterator[Callable[..., FrameRecorder]]:
    """A factory: `frame_recorder(app, regions={...}, texts={...})` starts recording that app's frames.

    Call it inside `async with app.run_test()`; recording stops at the end of the test.
    """
    recorders: list[FrameRecorder] = []

    def make(app: App[Any], *, regions: Mapping[str, Target] | None = None,
             texts: Mapping[str, Target] | None = None) -> FrameRecorder:
        recorder = FrameRecorder(app, dict(regions or {}), dict(texts or {})).start()
        recorders.append(recorder)
        return recorder

    yield make
    for recorder in recorders:
        recorder.stop()
