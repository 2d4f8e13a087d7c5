"""Figure 5: resident memory with a 5,000-turn session open in the UI.

Each case is a fresh interpreter that plays the same 5,000 turns of the
lighthouse story on the offline narrator (no save), keeps that session in
memory, opens a UI headless at 120x40, and reports its resident set size
(VmRSS) once the screen has painted:

- storyloom, resumed: `StoryloomApp` opened on the 5,000-turn session, as
  `storyloom play --resume` opens it (the screen shows the turns the session's history holds,
  the latest 50 to 100, and says how many came before);
- storyloom, played here: `StoryloomApp` on a fresh session of the same story,
  with the 5,000 turns delivered through the game screen's own event path and
  folded as the screen folds them (see `benchmarks._common.fill_transcript`);
- baseline: every turn mounted as one plain Textual `Static` in an anchored
  `VerticalScroll`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import time
from typing import Any

from benchmarks._common import Figure, Row, fill_transcript, play_session, rss_mb, storyloom_app

TURNS = 5000
SIZE = (120, 40)


async def _open(which: str, played: Any) -> dict[str, float]:
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll
    from textual.widgets import Static

    from storyloom.engine.lifecycle import Session
    from storyloom.tui.widgets.prose import plain

    session = played.session
    story = played.story
    if which == "baseline":

        class Chat(App[None]):
            def compose(self) -> ComposeResult:
                yield VerticalScroll(id="transcript")

        app: App[Any] = Chat()
    elif which == "resumed":
        app = storyloom_app(session)
    else:
        app = storyloom_app(Session(session.pack, session.narrator))
    started = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        if which == "baseline":
            transcript = app.query_one(VerticalScroll)
            transcript.anchor()
            await transcript.mount_all(
                [Static(plain(f"› {command}\n\n{prose}"), markup=False) for command, prose in story]
            )
        elif which == "played":
            await fill_transcript(
                app, ((turn, command, prose) for turn, (command, prose) in enumerate(story, 1)), session.state
            )
        for _ in range(5):
            await pilot.pause()
        mounted = time.perf_counter() - started
        gc.collect()
        rss = rss_mb()
        widgets = len(list(app.screen.walk_children()))
    return {"rss_mb": rss, "mount_s": mounted, "widgets": widgets}


def _child(which: str, turns: int) -> dict[str, float]:
    played = play_session(turns, keep_story=which != "resumed")  # the screen and the baseline show every turn
    gc.collect()
    before = rss_mb()
    result = asyncio.run(_open(which, played))
    return {**result, "session_rss_mb": before}


def _case(which: str, turns: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", which, str(turns)], capture_output=True, text=True, timeout=1200
    )
    if done.returncode != 0:
        raise RuntimeError(f"memory case {which} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> Figure:
    turns = 40 if quick else TURNS
    figure = Figure(5, "memory", "every turn mounted as one plain Textual Static")
    resumed, played, naive = (_case(w, turns) for w in ("resumed", "played", "baseline"))
    figure.add(
        Row(
            f"MB resident, {turns:,}-turn session open (resumed)",
            resumed["rss_mb"],
            naive["rss_mb"],
            target="< 300, below baseline",
            met=resumed["rss_mb"] < 300 and resumed["rss_mb"] < naive["rss_mb"],
        )
    )
    figure.add(
        Row(
            f"MB resident, {turns:,} turns played in this UI",
            played["rss_mb"],
            naive["rss_mb"],
            target="< 300, below baseline",
            met=played["rss_mb"] < 300 and played["rss_mb"] < naive["rss_mb"],
        )
    )
    figure.add(Row(f"s to open the resumed {turns:,}-turn session (to painted)", resumed["mount_s"], naive["mount_s"]))
    figure.notes += [
        f"the session alone, before any UI: {resumed['session_rss_mb']:.0f} MB (part of every row)",
        f"widgets on the screen: resumed {resumed['widgets']:,}, played here {played['widgets']:,}, "
        f"baseline {naive['widgets']:,}",
        f"s to show the {turns:,} turns played here one by one: {played['mount_s']:.0f}",
    ]
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description="one memory case (used by `python -m benchmarks`)")
    parser.add_argument("which", choices=("resumed", "played", "baseline"))
    parser.add_argument("turns", type=int)
    args = parser.parse_args()
    print(json.dumps(_child(args.which, args.turns)))


if __name__ == "__main__":
    main()
