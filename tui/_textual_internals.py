"""Every private Textual name storyloom leans on, in one place, with the releases it was checked against.

Textual has no public hook for five things the game needs: a partial repaint that renders
only the dirty rows and that paints the rows a layout moved once, not again the next frame
(`RowCroppedCompositor`), a scroll bar that restyles only the rows its thumb changed
(`RowDiffScrollBar`), a layout request that is always counted (`request_layout`), a scroll step
that follows rows laid out ahead of the text (`scroll_to_new_rows`), and, for the frame tests,
reading what a layout placed (`arranged_height`). Each reaches into Textual's
private API, which may change in any release, so they live here and nowhere else. The names
are the same in every release from 7.0.0 to 8.2.8 (checked in each release's source; CI runs the
lowest and the highest). On any other Textual the game still runs: it repaints with Textual's
own compositor and scroll bar (slower, still correct), and `storyloom config` says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any
from weakref import WeakKeyDictionary

import textual
from textual.geometry import Region, Size
from textual.reactive import Reactive
from textual.screen import Screen
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.widget import Widget

try:
    from textual._compositor import Compositor
except ImportError:  # a Textual that moved it: the public repaint only
    Compositor = object  # type: ignore[misc,assignment]

TESTED_TEXTUAL = ("7.0.0", "8.2.8")
"""The lowest and highest Textual releases the code below was checked and tested with."""


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


def is_tested(installed: str | None = None) -> bool:
    """Whether `installed` (by default the installed Textual) is a release within `TESTED_TEXTUAL`."""
    installed = installed_textual_version() if installed is None else installed
    parts = installed.split(".")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        return False  # a pre-release or a local build
    low, high = (tuple(int(p) for p in v.split(".")) for v in TESTED_TEXTUAL)
    return low <= tuple(int(p) for p in parts) <= high


def untested_note(installed: str | None = None) -> str | None:
    """What `storyloom config` says once when the installed Textual is outside the tested releases."""
    installed = installed_textual_version() if installed is None else installed
    if is_tested(installed):
        return None
    low, high = TESTED_TEXTUAL
    return (
        f"# textual {installed} is outside the releases storyloom was tested with ({low} to {high}): "
        "it repaints with Textual's own compositor (slower, still correct)"
    )


TESTED = is_tested() and Compositor is not object
"""Whether the game uses the private parts below (else Textual's public repaint)."""


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

    _reflowed = False
    """Set by a layout (`reflow`), until the repaint that follows it (`render_partial_update`)."""
    _scrolled: dict[Widget, Any] | None = None
    """Where the latest scroll step (`reflow_visible`) placed the widgets in view: what the screen shows."""

    def reflow(self, parent: Widget, size: Size) -> Any:
        """Textual's layout, measured against what the screen shows.

        Textual repaints the widgets a layout moved from where its full map had them. After a scroll
        step that map is rebuilt only when something asks where a widget is, with the scroll as it is
        then: a scroll made before that (a page up, the view following new rows) and laid out after
        looked like no move at all, and its rows were never repainted. The widgets the latest scroll
        step placed are compared from where it placed them.
        """
        self._reflowed = True
        if self._scrolled is not None and self._full_map:
            self._full_map = {**self._full_map, **self._scrolled}
        self._scrolled = None
        return super().reflow(parent, size)

    def reflow_visible(self, parent: Widget, size: Size) -> set[Widget]:
        self._reflowed = True
        exposed = super().reflow_visible(parent, size)
        self._scrolled = self._visible_map
        return exposed

    def render_partial_update(self) -> Any:
        """Textual's partial update; after a layout, also forget the repaints it made needless.

        A layout that moves the transcript (a new line of prose lifts it by one row) repaints
        every row it moved, with what each widget shows now. The widgets it resized (the streaming
        prose, its turn, the scroll bar) asked for a repaint of their whole selves while it ran,
        which Textual paints again the next frame: the same rows, the same cells, a second time.
        Those requests are dropped where this paint covered them; the rest stay.
        """
        if not self._reflowed:
            return super().render_partial_update()
        self._reflowed = False
        painted = list(self._dirty_regions)
        update = super().render_partial_update()
        if painted:
            forget_painted_repaints(self.visible_widgets, self._regions_to_spans(painted))
        return update

    def render_full_update(self, simplify: bool = False) -> Any:
        """Textual's full update; after a layout, also forget the repaints it made needless (all of them).

        Not for a screenshot (`simplify`): that paints no terminal.
        """
        update = super().render_full_update(simplify=simplify)
        if self._reflowed and not simplify:
            self._reflowed = False
            forget_painted_repaints(self.visible_widgets, self._regions_to_spans([self.size.region]))
        return update


def forget_painted_repaints(
    visible: dict[Widget, tuple[Region, Region]], spans: Iterable[tuple[int, int, int]]
) -> None:
    """Drop each widget's pending repaint that lies wholly within the painted `spans` (y, x1, x2).

    Textual merges a row's overlapping spans, so a region is painted when, on each of its rows,
    one span holds it. A region clipped out of view is dropped too, as Textual would.
    """
    rows: dict[int, list[tuple[int, int]]] = {}
    for y, x1, x2 in spans:
        rows.setdefault(y, []).append((x1, x2))

    def painted(area: Region) -> bool:
        x, y, width, height = area
        right = x + width
        return all(any(x1 <= x and right <= x2 for x1, x2 in rows.get(row, ())) for row in range(y, y + height))

    for widget, (region, clip) in visible.items():
        pending = widget._repaint_regions
        if pending:
            offset = region.offset
            kept = [area for area in pending if not painted(clip.intersection(area.translate(offset)))]
            if len(kept) != len(pending):
                pending.clear()
                pending.update(kept)


class RowDiffScrollBar(ScrollBar):
    """A vertical scroll bar that, asked to repaint whole, restyles only the rows whose cells changed.

    Each layout of the transcript (a new line of streamed prose) moves its thumb by a fraction of a
    row and repaints the whole bar; Textual then styles every row of it again (the bar's height in
    rows, each one new strips), though only the one or two rows at the thumb's ends change.
    The whole bar is still painted (the rows come from the cache), and its text drawn once a frame.
    """

    _whole = False
    _styled_for: object = None

    def _set_dirty(self, *regions: Region) -> None:
        if regions or not self._size:
            super()._set_dirty(*regions)
            return
        self._whole = True  # `render_lines` finds the rows that changed
        self._repaint_regions.add(self.outer_size.region)

    def render_lines(self, crop: Region) -> list[Strip]:
        if self._whole:
            self._whole = False
            old = self._render_cache
            self._render_content()
            new = self._render_cache
            styled_for = (self.background_colors, self.opacity, self.rich_style, self.app.ansi_theme)
            if old.size != new.size or styled_for != self._styled_for:
                self._styles_cache.clear()
            else:
                width = new.size.width
                for y, (was, now) in enumerate(zip(old.lines, new.lines, strict=False)):
                    if was != now:
                        self._styles_cache.set_dirty(Region(0, y, width, 1))
            self._styled_for = styled_for
        return super().render_lines(crop)


class KeepsRowsWhenTaller(Widget):
    """A container whose rows do not depend on its height keeps its styled rows when it grows.

    Textual restyles every row of a widget whose size changed. A turn message grows by a row with
    each line of its streaming prose, and its own rows (its left border and padding beside the prose,
    blank elsewhere) read the same at any height when nothing is drawn at its foot (no bottom border,
    outline or padding): only its last row and the new ones are styled anew. Any other change of size
    (a new width, a shorter message) restyles all, as Textual does.
    """

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        old = self._size
        if not (TESTED and old and size.width == old.width and size.height > old.height and self._plain_foot()):
            return super()._size_updated(size, virtual_size, container_size, layout)
        grown = Region(0, old.height - 1, size.width, size.height - old.height + 1)
        self._styles_cache.set_dirty(grown)
        self._repaint_regions.add(grown)
        self._dirty_regions.add(grown)  # its (blank) content is drawn again at the new height
        self._size = size
        super()._size_updated(size, virtual_size, container_size, layout)
        return True

    def _plain_foot(self) -> bool:
        styles = self.styles
        return (
            styles.border_bottom[0] in ("", "none")
            and styles.outline_bottom[0] in ("", "none")
            and not styles.padding.bottom
            and str(styles.keyline[0]) == "none"
        )


def vertical_scrollbar(widget: Widget) -> ScrollBar:
    """`widget`'s vertical scroll bar, a `RowDiffScrollBar` on a tested Textual (as `Widget.vertical_scrollbar`
    makes one: hidden until a layout shows it)."""
    if not TESTED or widget._vertical_scrollbar is not None:
        return Widget.vertical_scrollbar.fget(widget)  # type: ignore[attr-defined,no-any-return]
    bar = RowDiffScrollBar(vertical=True, name="vertical", thickness=widget.scrollbar_size_vertical)
    bar.display = False
    widget._vertical_scrollbar = bar
    widget.app._start_widget(widget, bar)
    return bar


def crop_repaints_to_rows(screen: Screen[Any]) -> None:
    """Give `screen` the `RowCroppedCompositor` (before it is mounted), on a tested Textual only."""
    if TESTED:
        screen._compositor = RowCroppedCompositor()


def screen_compositor(screen: Screen[Any]) -> Compositor:
    """The compositor that paints `screen` (the frame recorder reads what it painted)."""
    return screen._compositor


def no_layout_virtual_size() -> Reactive[Size]:
    """`Widget.virtual_size` without its layout flag (one descriptor per class that uses it).

    Textual declares `virtual_size` with `layout=True`, so a size change found by a
    layout asks for a second full layout. That second pass changes nothing for the
    transcript's widgets; they use this instead, so a streamed line costs one layout,
    not two (relies on how Textual 7.0 to 8.2 lay out; the frame tests cover it).
    """
    return Reactive(Size(0, 0), layout=False, repaint=False)


def scroll_to_new_rows(widget: Widget) -> None:
    """Text filled rows `widget` was laid out with below the view: scroll its anchored container to them.

    The container keeps such rows out of view by counting them in its `container_size`, which is
    what Textual's anchor and `max_scroll_y` measure from. The anchor moves the view only in a
    layout or a scroll step; this asks the screen for the scroll step, which the next frame runs
    before it paints (so the new line and the scroll show together), and arranges nothing again:
    a few times cheaper than the layout a taller widget would need. The container's scroll bar is
    measured again for its new range.
    """
    if not TESTED:
        widget.refresh(layout=True)  # the public way: a layout also moves the anchored view
        return
    for ancestor in widget.ancestors:
        if isinstance(ancestor, Widget) and ancestor.is_anchored:
            ancestor._scroll_update(ancestor.virtual_size)
            break
    screen = widget.screen
    screen._scroll_required = True
    screen.check_idle()


def request_layout(widget: Widget) -> None:
    """Ask for a layout, and make sure it measures `widget` again.

    Textual caches a widget's box model by its count of layout requests, and a
    second request made while one is pending is not counted; a layout run in
    between (for another widget) would then keep a stale height. This counts every one,
    as Textual does for its ancestors when it sends the pending request.
    """
    if getattr(widget, "_layout_required", False) and hasattr(widget, "_clear_arrangement_cache"):
        widget._layout_updates += 1
        for ancestor in widget.ancestors:
            if not isinstance(ancestor, Widget):
                break
            ancestor._clear_arrangement_cache()
            ancestor._layout_updates += 1
            if not ancestor.styles.auto_dimensions:
                break
    widget.refresh(layout=True)


_ARRANGED: WeakKeyDictionary[Widget, int] = WeakKeyDictionary()
"""Each container's height as last measured: what it stands at while a layout request has emptied
its arrangement cache and the next layout has not yet run (the frame shows the last one)."""


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
    if arrangement is None:  # a child asked for a layout since: the screen still shows the last one
        return _ARRANGED.get(container, 0)
    placed = [p.region for p in arrangement.placements if not p.fixed]
    height = max(r.bottom for r in placed) - min(r.y for r in placed) if placed else 0
    _ARRANGED[container] = height
    return height
