"""What recording frames costs the app: `python -m benchmarks.frame_capture [--quick]`.

An app of 100x30 (a side list of 25 rows, a log and a status line) appends a line to its log and
updates its status 300 times, a frame each. Measured in the same run, as CPU seconds over the
whole run: the app alone (the plain run), with the frame-geometry recorder keeping every painted
row and two widgets' texts (`screen=True`), and with the capture the plugin made before, which
re-rendered the whole screen on each frame (`render_strips()` in the display hook) and cropped the
texts from it. The recorder keeps each frame's update (only the spans Textual repainted) and
applies it to the previous frame's rows when a test first reads them, after the run: on the app's
event loop it only finds the named widgets. The rows read at the end are checked.
Not one of the nine figures of `python -m benchmarks`: it measures the test plugin, not the game.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from typing import Any

from benchmarks._common import Figure, Row, fmt

SIZE = (100, 30)


def _app() -> Any:
    from textual.app import App, ComposeResult
    from textual.containers import Horizontal, VerticalScroll
    from textual.widgets import Log, Static

    class Busy(App[None]):
        CSS = "#side { width: 30; } #status { height: 1; dock: bottom; }"

        def compose(self) -> ComposeResult:
            with Horizontal():
                with VerticalScroll(id="side"):
                    for k in range(25):
                        yield Static(f"[b]item {k}[/b] with some words", id=f"item-{k}")
                yield Log(id="log")
            yield Static("ready", id="status")

    return Busy()


async def _run(mode: str, updates: int) -> tuple[float, int]:
    from pytest_frame_geometry import FrameRecorder, _textual
    from textual.widgets import Log, Static

    app = _app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        frames: list[Any] = []
        stop = None
        recorder = None
        if mode == "recorder":
            recorder = FrameRecorder(app, texts={"log": "#log", "status": "#status"}, screen=True).start()
        elif mode == "naive":

            def paint(screen: Any, update: Any) -> None:  # what the recorder did before: render it all
                compositor = _textual.compositor(screen)
                strips = compositor.render_strips()
                texts = {}
                for selector in ("#log", "#status"):
                    region, clip = compositor.visible_widgets[screen.query(selector).first()]
                    shown = region.intersection(clip)
                    rows = range(shown.y, shown.bottom)
                    texts[selector] = "\n".join(strips[y].crop(shown.x, shown.right).text.rstrip() for y in rows)
                frames.append((texts, tuple(strip.text.rstrip() for strip in strips)))

            stop = _textual.listen(app, paint, lambda key: None)
        log, status = app.query_one(Log), app.query_one("#status", Static)
        gc.collect()
        cpu = time.process_time()
        for k in range(updates):
            log.write_line(f"line {k}: the quick brown fox jumps over the lazy dog")
            status.update(f"{k + 1} lines")
            await pilot.pause()
        cpu = time.process_time() - cpu
        if recorder is not None:
            recorder.stop()
            count = len(recorder.frames) - 1
            assert recorder.frames[-1].texts["status"] == f"{updates} lines"  # read after the clock stopped
            assert recorder.frames[-1].screen[-1].strip() == f"{updates} lines"
        elif stop is not None:
            stop()
            count = len(frames)
        else:
            count = updates
    return cpu, count


def run(quick: bool = False) -> Figure:
    updates = 40 if quick else 300
    figure = Figure(
        9, "frame capture", "the same app, not recorded; and the naive capture re-rendering the screen per frame"
    )
    started = time.perf_counter()
    best: dict[str, float] = {}
    counts: dict[str, int] = {}
    for _ in range(1 if quick else 3):  # interleaved, best of three: the machine is shared
        for mode in ("plain", "recorder", "naive"):
            cpu, counts[mode] = asyncio.run(_run(mode, updates))
            best[mode] = min(best.get(mode, cpu), cpu)
    plain, recorder, naive = best["plain"], best["recorder"], best["naive"]
    figure.add(
        Row(f"CPU s, {updates} frames recorded with every row (vs not recorded)", recorder, plain, "ratio <= 1.3"),
        Row(f"CPU s, {updates} frames, naive whole-screen capture (vs not recorded)", naive, plain),
        Row("CPU ms added per painted frame by recording (vs the naive capture)",
            (recorder - plain) * 1000 / counts["recorder"], (naive - plain) * 1000 / counts["naive"]),
    )  # fmt: skip
    figure.rows[0] = Row(figure.rows[0].metric, recorder, plain, "ratio <= 1.3", met=recorder / plain <= 1.3)
    figure.notes.append(f"frames painted: recorder {counts['recorder']}, naive {counts['naive']}")
    figure.seconds = time.perf_counter() - started
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    figure = run(parser.parse_args().quick)
    import os

    import textual

    print(f"frame capture, Textual {textual.__version__}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    for row in figure.rows:
        ratio = "" if row.ratio is None else f"{row.ratio:.3g}x"
        print(f"  {row.metric}: {fmt(row.storyloom)} vs {fmt(row.baseline)}  ratio {ratio}  {row.target}")
    for note in figure.notes:
        print(f"  ({note})")


if __name__ == "__main__":
    main()
