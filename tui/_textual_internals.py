"""Every private Textual name storyloom leans on, in one place, checked against the tested Textual.

Textual has no public hook for three things the game needs: a partial repaint that renders
only the dirty rows (`RowCroppedCompositor`), a layout request that is always counted
(`request_layout`), and a per-frame display hook for the frame tests (`wrap_display`).
Each of them reaches into Textual's private API, which may change in any release, so
they live here and nowhere else, and importing this module fails with a clear message
unless the installed Textual is the one these were written and tested against
(`pyproject.toml` pins the same version).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import textual
from textual._compositor import Compositor
from textual.app import App
from textual.geometry import Region, Size
from textual.reactive import Reactive
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

TESTED_TEXTUAL = "8.2.8"
"""The Textual release the code below was written for, and that the snapshot and frame tests paint with."""


class TextualVersionError(ImportError):
    """The installed Textual is not the release storyloom's use of its internals was tested with."""


def installed_textual_version() -> str:
    """The installed Textual's version, read from its dist-info folder beside the package.

    Cheaper than `importlib.metadata` (about 15 ms to import), which matters on the way to the first frame;
    that is still the fallback for an unusual install layout.
    """
    site = os.path.dirname(os.path.dirname(textual.__file__))
    found = [
        name[len("textual-") : -len(".dist-info")]
        for name in os.listdir(site)
        if name.startswith("textual-") and name.endswith(".dist-info")
    ]
    if len(found) == 1:
        return found[0]
    from importlib.metadata import version

    return version("textual")


def check_textual_version(installed: str | None = None) -> None:
    """Raise `TextualVersionError` unless Textual is the tested release."""
    installed = installed_textual_version() if installed is None else installed
    if installed != TESTED_TEXTUAL:
        raise TextualVersionError(
            f"storyloom needs Textual {TESTED_TEXTUAL} (it relies on private parts of that release), "
            f"but Textual {installed} is installed: run `pip install textual=={TESTED_TEXTUAL}`."
        )


check_textual_version()


class RowCroppedCompositor(Compositor):
    """Textual's compositor, rendering only the rows a partial update repaints.

    For a partial update Textual asks every widget whose container overlaps the
    dirty area to render its *whole* region, and then keeps only the dirty rows. While
    a turn streams, the dirty area is one line of the prose, but the screen, the body,
    the side panel, the transcript and its scroll bar all re-render (from their caches)
    every line they have, every frame: most of the cost of a frame. This asks them for
    the dirty rows only, and skips widgets that are wholly beside the dirty area
    (the partial update writes only the dirty spans). Widgets come front to back, so once one
    covers the whole dirty area (the streaming prose does) the ones behind it are not asked at all;
    what is painted is the same. Overrides a private method (the snapshot and frame tests paint through it).
    """

    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        if crop is None or crop == self.size.region:
            yield from super()._get_renders(crop)
            return
        rows = Region(0, crop.y, self.size.width, crop.height)
        crop_overlaps = crop.overlaps
        intersection = Region.intersection
        for widget, (region, clip) in self.visible_widgets.items():
            if not crop_overlaps(intersection(region, clip)):
                continue  # beside the repainted area (the side panel while prose streams): nothing to paint
            visible = intersection(region, clip)
            clip = intersection(clip, rows)
            x, y, width, height = intersection(region, clip)
            if width and height:
                yield region, clip, widget.render_lines(Region(x - region.x, y - region.y, width, height))
            if visible.contains_region(crop):
                return  # front to back: this widget covers the whole repaint, nothing below it shows


def crop_repaints_to_rows(screen: Screen[Any]) -> None:
    """Give `screen` the `RowCroppedCompositor` (before it is mounted)."""
    screen._compositor = RowCroppedCompositor()


def screen_compositor(screen: Screen[Any]) -> Compositor:
    """The compositor that paints `screen` (the frame recorder reads what it painted)."""
    return screen._compositor


def no_layout_virtual_size() -> Reactive[Size]:
    """`Widget.virtual_size` without its layout flag (one descriptor per class that uses it).

    Textual declares `virtual_size` with `layout=True`, so a size change found by a
    layout asks for a second full layout. That second pass changes nothing for the
    transcript's widgets; they use this instead, so a streamed line costs one layout,
    not two (relies on how Textual 8.2.8 lays out; the frame tests cover it).
    """
    return Reactive(Size(0, 0), layout=False, repaint=False)


def request_layout(widget: Widget) -> None:
    """Ask for a layout, and make sure it measures `widget` again.

    Textual caches a widget's box model by its count of layout requests, and a
    second request made while one is pending is not counted; a layout run in
    between (for another widget) would then keep a stale height. This counts every one,
    as Textual does for its ancestors when it sends the pending request.
    """
    if widget._layout_required:
        widget._layout_updates += 1
        for ancestor in widget.ancestors:
            if not isinstance(ancestor, Widget):
                break
            ancestor._clear_arrangement_cache()
            ancestor._layout_updates += 1
            if not ancestor.styles.auto_dimensions:
                break
    widget.refresh(layout=True)


DisplayHook = Callable[[Screen[Any]], None]


def wrap_display(app: App[Any], before_paint: DisplayHook) -> None:
    """Call `before_paint(screen)` before each real paint of `app` (not within a batch update).

    Wraps `App._display`, the call the screen makes with each compositor update (also headless);
    `unwrap_display` restores it.
    """
    original = app._display

    def display(screen: Screen[Any], renderable: Any) -> None:
        if renderable is not None and not app._batch_count:
            before_paint(screen)
        original(screen, renderable)

    app._display = display  # type: ignore[method-assign]


def unwrap_display(app: App[Any]) -> None:
    """Give `app` back its own display step (after `wrap_display`)."""
    del app._display


def arranged_height(container: Widget) -> int:
    """How tall a container's children stand as its latest layout placed them, docked ones aside.

    What a frame paints: a widget's own size and the compositor's map of it catch up a message
    later (a message mounted this frame is laid out, yet not mapped). For the frame tests.
    """
    cache = container._arrangement_cache
    keys = list(cache.keys())
    # The cache also holds trial arrangements (another width, `optimal` sizing) made in the same
    # layout: take the one for the size the container has now, of its latest children.
    size = container.scrollable_content_region.size
    current = [key for key in keys if key[0] == size and not key[2]]
    chosen = max(current, key=lambda key: key[1]) if current else (keys[-1] if keys else None)
    arrangement = cache.get(chosen) if chosen is not None else None
    if arrangement is None:
        return 0
    placed = [p.region for p in arrangement.placements if not p.fixed]
    return max(r.bottom for r in placed) - min(r.y for r in placed) if placed else 0
