"""Record what the transcript paints, frame by frame, over a short scripted game: the data `test_calm.py` reads.

    python -m tests.calm_recordings.record OUT.json.gz 80x24 120x40

The recording kept beside this script (`before-24.json.gz`) was made with it at main b65c801 (before
issue 24, in a worktree of that commit): it holds the reserve steps, blank frames, re-wrap and half
words a reader saw then, and the check `assert_calm` must name each rule they break. Each frame
keeps the transcript's rows (the scrollbar column left out), its marks (engine events, keys), the
time it was painted and whether the game was busy, the transcript full and following; consecutive
identical frames are kept once.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
import time
from typing import Any

from storyloom.engine.lifecycle import Session
from storyloom.engine.packs import parse_pack
from storyloom.tui.app import StoryloomApp
from storyloom.tui.testing.frames import FrameRecorder
from storyloom.tui.testing.narrators import GatedNarrator, GatedReply, turn_text
from tests.conftest import SHORE_PACK

WORDS = (
    "The lighthouse keeper's logbook lies open on the table, its pages swollen with damp and salt. "
    "Somewhere below, the generator coughs twice and falls silent, and the darkness presses closer. "
    "You notice scratches along the doorframe, deliberate and patient, as if someone counted days here."
)


def story(paragraphs: int, tag: str) -> str:
    """Prose of long, varied words, so a chunk often ends in the middle of one near a row's end."""
    return "\n\n".join(f"{tag}{k}: " + WORDS[: 120 + 60 * (k % 3)].rsplit(" ", 1)[0] for k in range(1, paragraphs + 1))


def fills(lengths: range = range(1, 7)) -> str:
    """Paragraphs of words of one length each: for most widths one of them fills a row exactly, so
    it re-wraps if the text loses a column (a scrollbar appearing)."""
    return "\n\n".join(" ".join(chr(97 + k % 26) * n for k in range(130 // (n + 1))) for n in lengths)


def crop(frame: Any, region: tuple[int, int, int, int] | None) -> list[str]:
    if region is None:
        return []
    x, y, width, height = region
    return [row[x : x + width - 1].rstrip() for row in (r.ljust(x + width) for r in frame.screen[y : y + height])]


async def record(size: tuple[int, int]) -> dict[str, Any]:
    replies = [
        GatedReply(turn_text(story(1, "a") + "\n\n" + fills(), [])),  # a new game's first turn: the scrollbar appears
        GatedReply(turn_text(story(1, "b"), [])),
        GatedReply(turn_text(story(4, "c"), [])),
        GatedReply(turn_text(story(4, "c"), [])),  # ctrl+g: another version with the same prose
        GatedReply(turn_text(story(2, "d"), [])),
        GatedReply(turn_text(story(8, "e"), [])),
    ]
    narrator = GatedNarrator(replies, chunk=5, delay=0.012)
    session = Session(parse_pack(SHORE_PACK, "shore.toml"), narrator)
    holder: list[FrameRecorder] = []
    app = StoryloomApp(session, on_event=lambda event: holder and holder[0].mark(event.event), blink=False)
    async with app.run_test(size=size) as pilot:
        game = app.game
        recorder = FrameRecorder(
            app,
            regions={"story": "#transcript"},
            texts={
                "time": lambda app: f"{time.monotonic():.4f}",
                "busy": lambda app: str(app.game.running),
                "full": lambda app: str(app.game.transcript.max_scroll_y > 0),
                "following": lambda app: str(app.game.transcript.following),
            },
            screen=True,
        ).start()
        holder.append(recorder)

        async def settle() -> None:
            while game.running:
                await pilot.pause(0.01)
            await pilot.pause(0.5)

        for command in ("take lamp", "look", "open door"):
            recorder.mark("key")
            await pilot.press(*command, "enter")
            await pilot.pause(0.05)
            await settle()
        recorder.mark("ctrl+g")
        await pilot.press("ctrl+g")
        await pilot.pause(0.05)
        await settle()
        for command in ("wait", "listen"):
            recorder.mark("key")
            await pilot.press(*command, "enter")
            await pilot.pause(0.05)
            await settle()
        recorder.stop()
    frames: list[dict[str, Any]] = []
    for frame in recorder.frames:
        rows = crop(frame, frame.regions["story"])
        flags = {k: frame.texts[k] for k in ("time", "busy", "full", "following")}
        entry = {"marks": list(frame.marks), "rows": rows, **flags}
        if frames and frames[-1]["rows"] == rows and not frame.marks:
            continue
        frames.append(entry)
    return {"size": list(size), "frames": frames}


def main() -> None:
    out, *sizes = sys.argv[1:]
    data = {}
    for label in sizes:
        width, height = (int(n) for n in label.split("x"))
        data[label] = asyncio.run(record((width, height)))
    with gzip.open(out, "wt", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, separators=(",", ":"))


if __name__ == "__main__":
    main()
