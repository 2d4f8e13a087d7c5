"""Streamed prose is drawn exactly as the whole text would be, however the chunks fall.

`Prose` wraps only the live paragraph's last line again when a chunk arrives, so these
tests stream random texts in random chunks and compare every line (its text and the
selection offsets Textual puts on it) with the same text shown at once, wrapped whole.
"""

from __future__ import annotations

import random
from typing import Any

from textual.app import App, ComposeResult
from textual.strip import Strip

from storyloom.engine.safety import safe_text
from storyloom.tui.widgets.prose import Prose

WIDTH = 23
PIECES = (
    "the",
    "sea",
    "a",
    "lighthouse",
    "keeper's",
    "brass",
    "lamp.",
    "—",
    "灯台守",
    "ÿéè",
    "supercalifragilisticexpialidocious",  # longer than a line: folded
    " ",
    " ",
    " ",
    " ",
    "   ",
    "\n",
    "\n\n",
    "\x1b[3",
    "1m",
    "\u200b",
    "\r\n",
)


class Side(App[None]):
    CSS = f"Prose {{ width: {WIDTH}; }}"

    def compose(self) -> ComposeResult:
        yield Prose()


def a_story(rng: random.Random) -> tuple[str, list[str]]:
    """A text of random pieces, and that text cut into random chunks (mid-word too).

    A streaming paragraph shows a newline it ends with (more text is on its way), and
    the committed text does not; so texts are drawn without outer newlines (and blank runs).
    """
    text = ""
    while not safe_text(text).strip() or "\n\n\n" in safe_text(text) or safe_text(text).strip("\n") != safe_text(text):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 60)))
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 30)))) if len(text) > 1 else []
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return text, chunks


def drawn(strips: Any) -> list[tuple[str, tuple[int, int] | None]]:
    """Each line's text (without trailing blanks) and, unless blank, where it starts in the text."""
    out = []
    for strip in strips:
        assert isinstance(strip, Strip)
        text = strip.text.rstrip()
        starts = [s.style.meta["offset"] for s in strip if s.style is not None and "offset" in s.style.meta]
        out.append((text, starts[0] if starts and text else None))
    return out


async def test_streamed_prose_draws_the_same_lines_as_the_whole_text_at_once():
    rng = random.Random(20261130)
    app = Side()
    async with app.run_test(size=(60, 40)) as pilot:
        prose = app.query_one(Prose)
        await pilot.pause()
        compared = long_ones = 0
        for _ in range(300):
            text, chunks = a_story(rng)
            prose.set_text("")
            for chunk in chunks:
                prose.append(chunk)
                if rng.random() < 0.7:  # otherwise several chunks wait for one wrap, as within a frame
                    prose.settle()
            prose.settle()
            streamed = drawn(prose.wrapped_lines)
            prose.set_text("")
            prose.set_text(text)
            at_once = drawn(prose.wrapped_lines)
            assert streamed == at_once, (text, chunks)
            compared += 1
            long_ones += len(streamed) > 4
        assert compared == 300 and long_ones > 100  # long paragraphs, several lines each, were part of it


async def test_streamed_prose_paints_the_same_cells_as_the_whole_text_at_once():
    """Segment for segment, style and selection offsets included: what a screenshot (or a snapshot) records."""
    rng = random.Random(20261202)
    app = Side()
    async with app.run_test(size=(60, 40)) as pilot:
        prose = app.query_one(Prose)
        await pilot.pause()
        breaks = 0
        for _ in range(300):
            text, chunks = a_story(rng)
            prose.set_text("")
            for chunk in chunks:
                prose.append(chunk)
                if rng.random() < 0.7:
                    prose.settle()
            prose.settle()
            streamed = [list(strip) for strip in prose.wrapped_lines]
            prose.set_text("")
            prose.set_text(text)
            at_once = [list(strip) for strip in prose.wrapped_lines]
            assert streamed == at_once, (text, chunks)
            breaks += "\n\n" in safe_text(text)
        assert breaks > 50  # paragraph breaks (drawn by the finished part) were part of it
