"""The frame recorder: every frame a Textual app paints, with the regions and text of the widgets you name."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import pytest
from textual.app import App
from textual.geometry import Region
from textual.screen import Screen
from textual.widget import Widget

from pytest_frame_geometry import _textual

RegionTuple = tuple[int, int, int, int]
State = Literal["shown", "absent", "hidden", "off-screen", "covered"]
"""What became of a named widget in a frame:

* "shown": painted, at least in part;
* "absent": no widget matches (not mounted, or removed);
* "hidden": it or a container holding it has `display: none`, it has `visibility: hidden`, or its
  screen is not on the stack;
* "off-screen": laid out, but wholly outside what its containers show (scrolled away);
* "covered": wholly under another widget (a loading indicator), or on a screen under an opaque one
  (a pushed screen; a modal dialog's translucent background lets the screen below show).
"""


@dataclass(frozen=True)
class Find:
    """Which widget a name follows, and which of its regions.

    Args:
        selector: a CSS selector, or a callable given the app that returns the widget (or None).
        screen: look only on this screen (a name given to `install_screen`/`SCREENS`, or a screen's id);
            by default every screen of the stack is searched, the top one first, so a footer under a
            modal dialog is found.
        clip: record only the part that shows (what its containers do not scroll away or clip);
            None when nothing of it shows.
        content: record the region inside its border, padding and scrollbars (with `texts`: the text
            painted there, without border, padding or scrollbar characters).
    """

    selector: str | Callable[[App[Any]], Widget | None]
    screen: str | None = None
    clip: bool = False
    content: bool = False


Target = str | Find | Callable[[App[Any]], Any]
"""A CSS selector (the first match on the topmost screen that has one), a `Find`, or a callable given
the app: returning a widget, it is followed like a selector's; in `texts`, any other value is
recorded as its `str`."""


@dataclass(frozen=True)
class Frame:
    """What one painted frame showed.

    Attributes:
        index: the frame's number since recording started (0: the frame showing when it started).
        phase: the latest mark set before this frame (see `FrameRecorder.mark`).
        marks: the marks set since the previous frame, in order.
        regions: name -> (x, y, width, height) on screen, or None when the widget is not there (see `states`).
            By default the widget's whole region, which may reach past what shows; `Find(..., clip=True)`
            records the part that shows.
        texts: name -> the text painted inside that widget's visible region (lines joined by
            newlines, trailing spaces removed), or what a callable returned.
        states: name -> the `State` of each named widget (regions and texts).
        scroll: name -> the widget's scroll offset (x, y), for lines followed by their row in it.
        content: name -> the region inside the widget's border, padding and scrollbars.
        screen: every row of the screen as painted (trailing spaces removed), when recorded
            with `screen=True`; else empty. Computed when first read.
    """

    index: int
    phase: str
    marks: tuple[str, ...]
    regions: dict[str, RegionTuple | None]
    texts: Mapping[str, str | None]
    states: dict[str, State] = field(default_factory=dict)
    scroll: dict[str, tuple[int, int]] = field(default_factory=dict)
    content: dict[str, RegionTuple | None] = field(default_factory=dict)
    paint: _Paint | None = field(default=None, repr=False, compare=False)
    """How to get this frame's rows (kept only with `screen=True`)."""

    @cached_property
    def painted(self) -> tuple[Any, ...]:
        """The painted rows as Textual strips (with `screen=True`; else empty)."""
        return tuple(self.paint.rows()) if self.paint is not None else ()

    @cached_property
    def screen(self) -> tuple[str, ...]:
        return tuple(strip.text.rstrip() for strip in self.painted)

    def row_of(self, text: str) -> int | None:
        """The screen row showing `text`, if exactly one row shows it (else None: absent, or not a name).

        A substring test: for exact text, a pattern or a row within a widget, see `Line`.
        """
        found = None
        for y, row in enumerate(self.screen):
            if text in row:
                if found is not None:
                    return None
                found = y
        return found


@dataclass
class FrameRecorder:
    """Records the frames one app paints.

    Recorders stack: several may record the same app, and each stops on its own. It is also a
    context manager (`with FrameRecorder(app, ...) as frames:` records inside the block).

    Args:
        app: a running app (inside `run_test`).
        regions: name -> target whose region is recorded per frame.
        texts: name -> target whose painted text is recorded per frame (a callable
            target may return any string it likes, e.g. a widget's state).
        screen: also record every painted row of the screen (for `Frame.row_of` and `assert_no_shift`).
        press_marks: mark each key a pilot presses (`press:enter`) just before it is sent.
    """

    app: App[Any]
    regions: Mapping[str, Target] = field(default_factory=dict)
    texts: Mapping[str, Target] = field(default_factory=dict)
    screen: bool = False
    press_marks: bool = True
    frames: list[Frame] = field(default_factory=list)
    _phase: str = ""
    _pending_marks: list[str] = field(default_factory=list)
    _marked_at: dict[str, int] = field(default_factory=dict)
    _stop: Callable[[], None] | None = None
    _last: _Paint | None = None
    _painted: asyncio.Event | None = None
    _crops: dict[tuple[int, int, int], tuple[Any, str]] = field(default_factory=dict)

    # -- recording

    def start(self) -> FrameRecorder:
        """Begin recording, with the frame showing now as frame 0.

        On a Textual outside the tested releases the test is skipped (`pytest.skip`), with a reason
        naming them.
        """
        if self._stop is not None:
            return self
        reason = _textual.unsupported()
        if reason is not None:
            pytest.skip(reason)  # as the fixtures do: the test is skipped, naming the tested range
        self._stop = _textual.listen(self.app, self._on_paint, self._on_press)
        self._record(self.app.screen, None)
        return self

    def stop(self) -> None:
        """Stop this recorder (other recorders of the same app go on)."""
        if self._stop is not None:
            self._stop()
            self._stop = None

    @property
    def recording(self) -> bool:
        return self._stop is not None

    def __enter__(self) -> FrameRecorder:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def mark(self, label: str) -> None:
        """Label the frames painted from now on (e.g. with each engine event's name)."""
        self._phase = label
        self._pending_marks.append(label)
        self._marked_at.setdefault(label, len(self.frames))

    async def wait_for(self, predicate: Callable[[Frame], bool], timeout: float = 5.0) -> Frame:
        """The first frame, from the latest one painted on, for which `predicate` holds (waiting for it).

        Raises:
            AssertionError: no such frame was painted within `timeout` seconds.
        """
        seen = max(len(self.frames) - 1, 0)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            for frame in self.frames[seen:]:
                if predicate(frame):
                    return frame
            seen = len(self.frames)
            left = deadline - loop.time()
            if left <= 0 or self._stop is None:
                raise AssertionError(
                    f"no frame matched within {timeout} s ({len(self.frames)} frames recorded, "
                    f"{'still recording' if self._stop else 'recording stopped'})"
                )
            self._painted = asyncio.Event()
            try:
                await asyncio.wait_for(self._painted.wait(), left)
            except TimeoutError:
                pass

    def _on_press(self, key: str) -> None:
        if self.press_marks:
            self.mark(f"press:{key}")

    def _on_paint(self, screen: Screen[Any], update: Any) -> None:
        self._record(screen, update)
        if self._painted is not None:
            self._painted.set()

    @cached_property
    def _needs_rows(self) -> bool:
        return self.screen or any(not _is_value(target) for target in self.texts.values())

    def _paint(self, screen: Screen[Any], update: Any) -> _Paint:
        """This frame's rows: the previous frame's with `update` applied, when first read (lazily:
        nothing is rendered on the app's event loop), or a whole render when that cannot be done."""
        size = (_textual.compositor(screen).size.width, _textual.compositor(screen).size.height)
        last = self._last
        if update is not None and last is not None and last.size == size and _textual.applicable(update):
            self._last = _Paint(size, previous=last, update=update)
        else:
            self._last = _Paint(size, rows=_textual.render_screen(self.app))
        return self._last

    def _record(self, screen: Screen[Any], update: Any) -> None:
        paint = self._paint(screen, update) if self._needs_rows else None
        regions: dict[str, RegionTuple | None] = {}
        states: dict[str, State] = {}
        scroll: dict[str, tuple[int, int]] = {}
        content: dict[str, RegionTuple | None] = {}
        for name, target in self.regions.items():
            found = self._locate(target)
            states[name] = found.state
            region = found.region()
            regions[name] = _tuple(region)
            if found.widget is not None:
                scroll[name] = (found.widget.scroll_offset.x, found.widget.scroll_offset.y)
                content[name] = _tuple(found.widget.scrollable_content_region)
        texts: dict[str, str | None] = {}
        pending: dict[str, Region] = {}
        for name, target in self.texts.items():
            if _is_value(target):
                value = target(self.app)  # type: ignore[operator]
                if not isinstance(value, Widget):
                    texts[name] = value if value is None else str(value)
                    continue
            found = self._locate(target)
            states.setdefault(name, found.state)
            shown = found.shown()
            if shown is None:
                texts[name] = None
            else:
                pending[name] = shown
        self.frames.append(
            Frame(
                len(self.frames),
                self._phase,
                tuple(self._pending_marks),
                regions,
                _Texts(list(self.texts), texts, pending, paint, self._painted_text),
                states,
                scroll,
                content,
                paint if self.screen else None,
            )
        )
        self._pending_marks.clear()

    def _painted_text(self, rows: list[Any], region: Region) -> str:
        """The text painted in `region`; a row's crop is reused while the row is the same strip."""
        x1, x2 = region.x, region.right
        lines = []
        for y in range(max(region.y, 0), min(region.bottom, len(rows))):
            key = (id(rows[y]), x1, x2)
            kept = self._crops.get(key)
            if kept is None or kept[0] is not rows[y]:
                kept = self._crops[key] = (rows[y], rows[y].crop(x1, x2).text.rstrip())
            lines.append(kept[1])
        if len(self._crops) > 8 * len(rows) + 64:
            self._crops.clear()  # rows painted over long ago
        return "\n".join(lines)

    def _locate(self, target: Target) -> _Found:
        find = target if isinstance(target, Find) else Find(target)
        selector = find.selector
        app = self.app
        if not isinstance(selector, str):
            widget = selector(app)
            if not isinstance(widget, Widget):
                return _Found(app, find, None, None)
            try:
                return _Found(app, find, widget, widget.screen)
            except Exception:  # noqa: BLE001 - a widget not (or no longer) on a screen
                return _Found(app, find, None, None)
        for screen in self._screens(find.screen):
            found = screen.query(selector)
            if found:
                return _Found(app, find, found.first(), screen)
        return _Found(app, find, None, None)

    def _screens(self, name: str | None) -> list[Screen[Any]]:
        stack = list(reversed(self.app.screen_stack))
        if name is None:
            return stack
        named = [screen for screen in stack if screen.id == name]
        if not named:
            try:
                named = [self.app.get_screen(name)]
            except KeyError:
                named = []
        return named

    # -- reading the recording

    def _start_of(self, mark: str, before: bool) -> int:
        if mark not in self._marked_at:
            raise AssertionError(
                f"no frame was painted after the mark {mark!r}: it was never set; marks seen: {self.all_marks()}"
            )
        at = self._marked_at[mark]
        return max(at - 1, 0) if before else at

    def between(
        self, start: str, end: str | None = None, *, include_end: bool = False, before: bool = True
    ) -> list[Frame]:
        """Frames from the one showing when mark `start` was set (`before=False`: the first painted
        after it) up to (not including) the first painted after mark `end`.

        With `include_end`, the frames after `end` are included too (to the end of the recording).
        The frame before a key press is what the key changed: a window that leaves it out cannot show it.
        """
        first = self._start_of(start, before)
        last = len(self.frames)
        if end is not None and not include_end and end in self._marked_at:
            last = max(self._marked_at[end], first)
        return self.frames[first:last]

    def since(self, mark: str, *, before: bool = True) -> list[Frame]:
        """Every frame from the one showing when `mark` was set (the mark set before the key press: what
        the screen showed, then the whole life of what the key started) to the end of the recording."""
        return self.between(mark, include_end=True, before=before)

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
    def sequences(frames: list[Frame], kinds: tuple[str, ...] = ("regions", "texts")) -> dict[str, list[Any]]:
        """Per region and per text (and per state, with "states" in `kinds`), the sequence of
        distinct consecutive values.

        This is what a baseline stores: how many frames a state lasted depends on
        timing, but the order of states a player sees does not.
        """
        out: dict[str, list[Any]] = {}
        if not frames:
            return out
        for kind in kinds:
            for name in getattr(frames[0], kind):
                seq: list[Any] = []
                for frame in frames:
                    value = getattr(frame, kind)[name]
                    value = list(value) if isinstance(value, tuple) else value
                    if not seq or seq[-1] != value:
                        seq.append(value)
                out[f"{kind}.{name}"] = seq
        return out


class _Paint:
    """One frame's rows: given, or the previous frame's with an update applied, when first asked for."""

    __slots__ = ("size", "previous", "update", "_rows")

    def __init__(
        self,
        size: tuple[int, int],
        *,
        previous: _Paint | None = None,
        update: Any = None,
        rows: list[Any] | None = None,
    ) -> None:
        self.size, self.previous, self.update, self._rows = size, previous, update, rows

    def rows(self) -> list[Any]:
        chain: list[_Paint] = []
        node: _Paint | None = self
        while node is not None and node._rows is None:
            chain.append(node)
            node = node.previous
        assert node is not None and node._rows is not None
        rows = node._rows
        for later in reversed(chain):
            applied = _textual.apply_update(rows, later.update, *later.size)
            assert applied is not None, f"an update that cannot be applied: {type(later.update).__name__}"
            later._rows, later.previous, later.update = applied, None, None
            rows = applied
        return rows


class _Texts(Mapping[str, "str | None"]):
    """A frame's texts: what callables returned, and widgets' painted text, read from the rows when asked for."""

    def __init__(
        self,
        names: list[str],
        values: dict[str, str | None],
        pending: dict[str, Region],
        paint: _Paint | None,
        crop: Callable[[list[Any], Region], str],
    ) -> None:
        self._names, self._values, self._pending, self._paint, self._crop = names, values, pending, paint, crop

    def __getitem__(self, name: str) -> str | None:
        if name in self._pending:
            assert self._paint is not None
            self._values[name] = self._crop(self._paint.rows(), self._pending.pop(name))
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return repr(dict(self))


def _is_value(target: Target) -> bool:
    return callable(target) and not isinstance(target, (str, Find))


def _painted_screens(app: App[Any]) -> list[Screen[Any]]:
    """The screens painted now, the top one first: below it, each screen is painted only while every
    screen above it has a translucent background (a modal dialog's, by default); an opaque screen
    covers the whole stack under it (as `Screen.render` paints a `BackgroundScreen` only then)."""
    stack = list(reversed(app.screen_stack))
    painted = stack[:1]
    for above, below in zip(stack, stack[1:], strict=False):
        if above.styles.background.a >= 1:
            break
        painted.append(below)
    return painted


def _tuple(region: Region | None) -> RegionTuple | None:
    return (region.x, region.y, region.width, region.height) if region else None


@dataclass
class _Found:
    app: App[Any]
    find: Find
    widget: Widget | None
    on: Screen[Any] | None

    @cached_property
    def visible(self) -> tuple[Region, Region] | None:
        if self.widget is None or self.on is None:
            return None
        found: tuple[Region, Region] | None = _textual.compositor(self.on).visible_widgets.get(self.widget)
        return found

    @cached_property
    def state(self) -> State:
        widget = self.widget
        if widget is None or self.on is None:
            return "absent"
        if (
            self.on not in self.app.screen_stack
            or not widget.visible
            or any(not node.display for node in widget.ancestors_with_self if not isinstance(node, (Screen, App)))
        ):
            return "hidden"
        if self.visible is None:
            loading = any(getattr(node, "loading", False) for node in widget.ancestors_with_self)
            return "covered" if loading else "off-screen"  # a loading indicator is painted instead
        if self.on not in _painted_screens(self.app):
            return "covered"  # under an opaque screen
        shown = self.visible[0].intersection(self.visible[1])
        for other, (region, clip) in _textual.compositor(self.on).visible_widgets.items():
            if other is widget:
                break
            if widget in other.ancestors and type(other).__name__ != "LoadingIndicator":
                continue  # its own children paint it
            if region.intersection(clip).contains_region(shown):
                return "covered"
        return "shown"

    def region(self) -> Region | None:
        """The recorded region (None unless the widget is laid out and, when clipped, shows)."""
        widget = self.widget
        if widget is None or self.state in ("absent", "hidden"):
            return None
        region = widget.scrollable_content_region if self.find.content else widget.region
        if self.find.clip:
            if self.visible is None:
                return None
            region = region.intersection(self.visible[1])
        return region or None

    def shown(self) -> Region | None:
        """Where its text is read: the part that shows (inside border and padding with `content`)."""
        if self.visible is None or self.state != "shown":
            return None
        region, clip = self.visible
        if self.find.content and self.widget is not None:
            region = self.widget.scrollable_content_region
        return region.intersection(clip)
