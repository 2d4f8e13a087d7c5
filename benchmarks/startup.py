"""Figure 4: time from process start to the first painted frame, against a bare Textual app.

Both run as fresh interpreters in the same run, alternately, headless at 120x40,
with their modules byte-compiled as `pip install` leaves them (see `first_paint`).
The clock starts in the parent just before the child is spawned, and stops when
the child reports its first paint (the first call of the app's display step that
carries a frame) on stdout. storyloom's child runs the `storyloom` command itself
(`storyloom.tui.cli.main(["play"])`: settings, the default story, the offline narrator, the
app), with `App.run` made headless; the bare child paints one `Static`. Both patch `textual.app`
as it is imported (an import hook), so each imports Textual where its own code does. Settings
and saves point at an empty temporary folder.

A second baseline in the same run, for reading the first: a bare app painting the opening screen's
widgets (Header, the story's title and intro in a scrolling column, an Input, the side panel's empty
box, Footer; the same text, read as `storyloom` reads it), so the row beside it is what storyloom's
own code costs the first frame, apart from what Textual costs to draw that screen.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

from benchmarks import terminal
from benchmarks._common import Figure, Row, median

CHILD = """
import importlib.util, os, sys

def _patch(App):
    _original = App._display
    def _display(self, screen, renderable):
        _original(self, screen, renderable)
        if renderable is not None:
            sys.stdout.write("painted\\n"); sys.stdout.flush()
            os._exit(0)
    App._display = _display
    if sys.argv[1] == "storyloom":
        _run = App.run
        def _headless_run(self, *args, **kwargs):
            return _run(self, *args, **{**kwargs, "headless": True, "size": (120, 40)})
        App.run = _headless_run

class _WhenTextualLoads:
    # patches `textual.app` as it is imported, so each child imports it where and when its own code does
    def find_spec(self, name, path=None, target=None):
        if name != "textual.app":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            _patch(module.App)
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _WhenTextualLoads())

if sys.argv[1] == "storyloom":
    from storyloom.tui.cli import main  # exactly what the `storyloom` command runs
    main(["play"])
elif sys.argv[1] == "layout":
    from textual.app import App
    from textual.containers import Horizontal, Vertical, VerticalScroll
    from textual.widgets import Footer, Header, Input, Static

    from storyloom.engine.builtin import builtin_opening

    title, intro = builtin_opening("lighthouse")

    class Layout(App):
        CSS = "#side { width: 28; border-left: vkey $foreground 20%; } Input { margin: 0 1; }"

        def compose(self):
            yield Header(icon="\u2261")
            with Horizontal():
                with Vertical():
                    with VerticalScroll():
                        yield Static(title)
                        yield Static(intro)
                    yield Input()
                yield Static("", id="side")
            yield Footer()

        def on_mount(self):
            self.title, self.sub_title = title, "loading\u2026"

    Layout().run(headless=True, size=(120, 40))
else:
    from textual.app import App
    from textual.widgets import Static

    class Bare(App):
        def compose(self):
            yield Static("Hello")

    Bare().run(headless=True, size=(120, 40))
"""


def first_paint(which: str, home: str) -> float:
    """Seconds from spawning a child to its first painted frame."""
    env = {**os.environ, "XDG_CONFIG_HOME": home, "XDG_DATA_HOME": home, "TEXTUAL": ""}
    # As installed: pip byte-compiles a package's modules, so no player's start compiles them. An
    # editable checkout run with PYTHONDONTWRITEBYTECODE (this workplace sets it) would compile every
    # storyloom module on every start (about 10 ms), a cost the bare app (all in site-packages) never has.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, which], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    line = child.stdout.readline() if child.stdout else ""
    elapsed = time.perf_counter() - started
    _, err = child.communicate(timeout=60)
    if line.strip() != "painted":
        raise RuntimeError(f"the {which} child never painted a frame:\n{err[-3000:]}")
    return elapsed


def run(quick: bool = False) -> Figure:
    """Alternate storyloom and bare children; compare the medians."""
    from benchmarks._common import scratch_dir

    rounds = 2 if quick else 9
    folder = scratch_dir("startup")
    home = str(folder)
    ours, bare, layout = [], [], []
    try:
        first_paint("bare", home)  # warm the file cache for each
        first_paint("storyloom", home)
        first_paint("layout", home)
        for _ in range(rounds):
            ours.append(first_paint("storyloom", home))
            bare.append(first_paint("bare", home))
            layout.append(first_paint("layout", home))
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # the saves `storyloom play` created there
    figure = Figure(4, "start-up", "a bare Textual app painting one Static")
    ratio = median(ours) / median(bare)
    figure.add(
        Row(
            "s from process start to first painted frame (median)",
            median(ours),
            median(bare),
            target="ratio <= 1.2",
            met=ratio <= 1.2,
        )
    )
    figure.add(
        Row(
            "s from process start to first painted frame, vs a bare app painting the same widgets (median)",
            median(ours),
            median(layout),
        )
    )
    figure.notes.append(
        f"{rounds} alternating runs each; min storyloom {min(ours):.3f} s, bare {min(bare):.3f} s, bare with the "
        f"opening screen's widgets {min(layout):.3f} s (median {median(layout):.3f} s: "
        f"{median(layout) / median(bare):.2f}x the bare app's)"
    )
    terminal.resume_rows(figure, *((40, 5, 1) if quick else (terminal.RESUME_TURNS, 10, terminal.RESUME_RUNS)))
    return figure
