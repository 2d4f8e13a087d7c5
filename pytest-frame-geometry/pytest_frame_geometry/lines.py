"""Lines a check follows on screen: by exact text, a pattern, a substring, or their row within a widget."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_frame_geometry.recorder import Frame


@dataclass(frozen=True)
class Line:
    """One line of what a player reads, found anew in every frame.

    Build one with `Line.exact`, `Line.regex`, `Line.containing` or `Line.row`; a plain string given to
    a check is `Line.containing(text)`. A line found on no row, or on more than one, is not followed
    in that frame; a check fails if a line that is not `optional` is never followed in any frame.
    """

    kind: str
    value: str | int
    within: str | None = None
    optional: bool = False

    @classmethod
    def exact(cls, text: str, *, within: str | None = None, optional: bool = False) -> Line:
        """The row whose text (trailing and leading spaces aside) is exactly `text`: on the whole
        screen, or inside the recorded region `within` (inside its border and padding)."""
        return cls("exact", text.strip(), within, optional)

    @classmethod
    def regex(cls, pattern: str, *, within: str | None = None, optional: bool = False) -> Line:
        """The row in which `pattern` matches (`re.search`)."""
        re.compile(pattern)
        return cls("regex", pattern, within, optional)

    @classmethod
    def containing(cls, text: str, *, within: str | None = None, optional: bool = False) -> Line:
        """The row that contains `text` ("row 1" is also in "row 10": prefer `exact` or `regex`)."""
        return cls("contains", text, within, optional)

    @classmethod
    def row(cls, within: str, row: int, *, optional: bool = False) -> Line:
        """Row `row` (from 0) of the content of the recorded region `within`, scrolled or not: a line
        of a log whose lines repeat. Needs `within` among the recorder's `regions`."""
        return cls("row", row, within, optional)

    def __str__(self) -> str:
        where = f" in {self.within!r}" if self.within else ""
        return f"{self.kind} {self.value!r}{where}"

    def needs_screen(self) -> bool:
        return self.kind != "row"

    def find(self, frame: Frame) -> tuple[int | None, int]:
        """(the screen row of this line in `frame` or None, how many rows matched)."""
        if self.kind == "row":
            assert self.within is not None and isinstance(self.value, int)
            content, scroll = frame.content.get(self.within), frame.scroll.get(self.within)
            if content is None or scroll is None or frame.states.get(self.within) != "shown":
                return None, 0
            offset = self.value - scroll[1]
            return (content[1] + offset, 1) if 0 <= offset < content[3] else (None, 0)
        rows: range = range(len(frame.screen))
        x1, x2 = 0, None
        if self.within is not None:
            content = frame.content.get(self.within)
            if content is None or frame.states.get(self.within) != "shown":
                return None, 0
            x, y, width, height = content
            rows = range(max(y, 0), min(y + height, len(frame.screen)))
            x1, x2 = max(x, 0), x + width
        if x2 is None:
            matched = [y for y in rows if self._matches(frame.screen[y])]
        else:  # cells, not characters: a wide character takes two
            matched = [y for y in rows if self._matches(frame.painted[y].crop(x1, x2).text)]
        return (matched[0] if len(matched) == 1 else None), len(matched)

    def _matches(self, row: str) -> bool:
        if self.kind == "exact":
            return row.strip() == self.value
        if self.kind == "regex":
            return re.search(str(self.value), row) is not None
        return str(self.value) in row


def as_line(line: str | Line) -> Line:
    return line if isinstance(line, Line) else Line.containing(line)
