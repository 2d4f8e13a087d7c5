"""Every private Textual name the plugin leans on, reached only at use time.

Textual has no public per-frame hook. The plugin wraps `App._display` (the call a screen makes with
each compositor update, also headless), reads `Screen._compositor` and what the update renderables
(`LayoutUpdate`, `ChopsUpdate`) carry, wraps `App._press_keys` (what `Pilot.press` awaits) to mark
key presses, and sets the `visible_screen_stack` context to paint a modal's background screens.
These are the same in every Textual release from 7.0.0 to 8.2.8 (checked in each release's source);
outside that range `unsupported()` says so and the fixtures skip. Nothing here is imported while
the plugin loads, so loading it never fails, whatever Textual is installed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any

LOWEST = (7, 0, 0)
HIGHEST = (8, 2, 8)
SUPPORTED = "Textual 7.0.0 to 8.2.8"
"""The releases the plugin was tested with (CI runs the lowest and the highest)."""


def textual_version() -> str:
    """The installed Textual's version."""
    return metadata.version("textual")


def _release(version: str) -> tuple[int, ...] | None:
    parts = version.split(".")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        return None  # a pre-release or a local build: not a tested release
    return tuple(int(part) for part in parts)


def unsupported(version: str | None = None) -> str | None:
    """Why the plugin cannot record with this Textual (None when it can): the skip reason."""
    version = textual_version() if version is None else version
    release = _release(version)
    if release is not None and LOWEST <= release <= HIGHEST:
        return None
    return f"frame_geometry supports {SUPPORTED}; Textual {version} is installed"


def compositor(screen: Any) -> Any:
    """The compositor that paints `screen`."""
    return screen._compositor


def background_screens(app: Any) -> list[Any]:
    """The screens painted under the top one (below a modal), bottom first."""
    return list(app._background_screens)


def render_screen(app: Any) -> list[Any]:
    """Every row of the app's screen as it would be painted now (modal backgrounds included)."""
    from textual._context import visible_screen_stack

    token = visible_screen_stack.set(background_screens(app))
    try:
        return list(app.screen._compositor.render_strips())
    finally:
        visible_screen_stack.reset(token)


def applicable(update: Any) -> bool:
    """Whether `apply_update` can apply `update` (a full or a partial update, not an inline one)."""
    from textual._compositor import ChopsUpdate, LayoutUpdate

    return isinstance(update, (ChopsUpdate, LayoutUpdate))


def apply_update(rows: list[Any] | None, update: Any, width: int, height: int) -> list[Any] | None:
    """The rows of the screen after the terminal applies `update` (None: not an update this can apply).

    A full update (`LayoutUpdate`) carries every row; a partial one (`ChopsUpdate`) carries the
    changed spans only, so the cost follows what changed, not the size of the screen.
    """
    from textual._compositor import ChopsUpdate, LayoutUpdate

    if isinstance(update, LayoutUpdate):
        return _apply_layout(rows, update, width, height)
    if isinstance(update, ChopsUpdate) and rows is not None and len(rows) == height:
        rows = list(rows)
        for y, x1, x2 in update.spans:
            if 0 <= y < height:
                rows[y] = _apply_chops(rows[y], update, y, x1, x2, width)
        return rows
    return None


def _apply_layout(rows: list[Any] | None, update: Any, width: int, height: int) -> list[Any] | None:
    """A full update: every row it carries replaces the screen's (None: it does not cover the screen)."""
    from textual.strip import Strip

    region = update.region
    if rows is None or len(rows) != height or region.x != 0:
        if region.y != 0 or region.height < height:
            return None
        rows = [Strip.blank(width)] * height
    rows = list(rows)
    for y, line in enumerate(update.strips, region.y):
        if 0 <= y < height:
            rows[y] = Strip.join(list(line)).crop(0, width)
    return rows


def _apply_chops(row: Any, update: Any, y: int, x1: int, x2: int, width: int) -> Any:
    """One row of a partial update: its changed span `x1..x2` laid over the row as it was."""
    from textual.strip import Strip

    parts, cursor = [], 0
    for end, (x, strip) in zip(update.chop_ends[y], update.chops[y].items(), strict=False):
        start, stop = max(x, x1, cursor), min(end, x2)
        if strip is None or start >= stop:
            continue
        if start > cursor:
            parts.append(row.crop(cursor, start))
        parts.append(strip if start == x and stop == end else strip.crop(start - x, stop - x))
        cursor = stop
    if not parts:
        return row
    if cursor < width:
        parts.append(row.crop(cursor, width))
    return parts[0] if len(parts) == 1 else Strip.join(parts)


class _Hooks:
    """The listeners of one app's display step and key presses; installed once, removed with the last."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.paint: list[Callable[[Any, Any], None]] = []
        self.press: list[Callable[[str], None]] = []
        self._own_display = vars(app).get("_display")
        self._own_press = vars(app).get("_press_keys")
        original_display = app._display
        original_press = app._press_keys

        def display(screen: Any, renderable: Any) -> None:
            if renderable is not None and not app._batch_count:
                for listener in list(self.paint):
                    listener(screen, renderable)
            original_display(screen, renderable)

        async def press_keys(keys: Iterable[str]) -> None:
            for key in keys:
                for listener in list(self.press):
                    listener(key)
                await original_press([key])

        self.display, self.press_keys = display, press_keys
        app._display = display
        app._press_keys = press_keys

    def remove(self) -> None:
        """Give the app back the display step and key presses it had (unless someone wrapped ours since)."""
        for name, ours, own in (
            ("_display", self.display, self._own_display),
            ("_press_keys", self.press_keys, self._own_press),
        ):
            if vars(self.app).get(name) is not ours:
                continue  # wrapped again by someone else: ours stays, listening to no one
            if own is None:
                delattr(self.app, name)
            else:
                setattr(self.app, name, own)


_HOOKS = "_frame_geometry_hooks"


def listen(app: Any, paint: Callable[[Any, Any], None], press: Callable[[str], None]) -> Callable[[], None]:
    """Call `paint(screen, update)` before each real paint of `app` and `press(key)` before each key a
    pilot presses; returns the function that stops exactly these two listeners."""
    hooks: _Hooks | None = vars(app).get(_HOOKS)
    if hooks is None:
        hooks = _Hooks(app)
        setattr(app, _HOOKS, hooks)
    hooks.paint.append(paint)
    hooks.press.append(press)

    def stop() -> None:
        assert hooks is not None
        if paint in hooks.paint:
            hooks.paint.remove(paint)
            hooks.press.remove(press)
        if not hooks.paint and vars(app).get(_HOOKS) is hooks:
            hooks.remove()
            delattr(app, _HOOKS)

    return stop
