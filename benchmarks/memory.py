"""Figure 5: resident memory with a 5,000-turn session open in the UI.

Each case is a fresh interpreter that plays the same 5,000 turns of the
lighthouse story on the offline narrator (no save) and opens the UI headless at
120x40, then reports its resident set size (VmRSS) after the screen painted:

- storyloom: `StoryloomApp` with every played turn shown through the game
  screen's own event path, old turns folded away as the screen does after each
  turn (see `benchmarks._common.fill_transcript`);
- storyloom, resumed: the same session opened as a resume opens it (the app
  mounts no past turns today, so this is the floor the UI adds to the session);
- baseline: the same session, every turn mounted as one plain Textual `Static`
  in an anchored `VerticalScroll`.
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


async def _open(which: str, session: Any) -> dict[str, float]:
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll
    from textual.widgets import Static

    from tui.widgets import plain

    history = session.history
    if which == "baseline":
        class Chat(App[None]):
            def compose(self) -> ComposeResult:
                yield VerticalScroll(id="transcript")

        app: App[Any] = Chat()
    else:
        app = storyloom_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        started = time.perf_counter()
        if which == "baseline":
            transcript = app.query_one(VerticalScroll)
            transcript.anchor()
            await transcript.mount_all([Static(plain(f"› {e.player_input}\n\n{e.turn.narrative}"), markup=False)
                                        for e in history])
        elif which == "storyloom":
            await fill_transcript(app, ((turn, e.player_input, e.turn.narrative) for turn, e in enumerate(history, 1)),
                                  session.state)
        for _ in range(5):
            await pilot.pause()
        mounted = time.perf_counter() - started
        gc.collect()
        rss = rss_mb()
        widgets = len(list(app.screen.walk_children()))
    return {"rss_mb": rss, "mount_s": mounted, "widgets": widgets}


def _child(which: str, turns: int) -> dict[str, float]:
    played = play_session(turns)
    gc.collect()
    before = rss_mb()
    result = asyncio.run(_open(which, played.session))
    return {**result, "session_rss_mb": before}


def _case(which: str, turns: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-m", "benchmarks.memory", which, str(turns)],
                          capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(f"memory case {which} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> Figure:
    turns = 40 if quick else TURNS
    figure = Figure(5, "memory", "every turn mounted as one plain Textual Static")
    ours, resumed, naive = (_case(w, turns) for w in ("storyloom", "resumed", "baseline"))
    figure.add(Row(f"MB resident, {turns:,} turns on screen", ours["rss_mb"], naive["rss_mb"],
                   target="< 300, below baseline", met=ours["rss_mb"] < 300 and ours["rss_mb"] < naive["rss_mb"]))
    figure.add(Row(f"MB resident, {turns:,}-turn session resumed (no past turns mounted)", resumed["rss_mb"],
                   naive["rss_mb"]))
    figure.add(Row(f"s to mount {turns:,} turns", ours["mount_s"], naive["mount_s"]))
    figure.notes += [
        f"the session alone (before the UI): {ours['session_rss_mb']:.0f} MB",
        f"widgets on the screen: storyloom {ours['widgets']:,}, resumed {resumed['widgets']:,}, "
        f"baseline {naive['widgets']:,}",
    ]
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description="one memory case (used by `python -m benchmarks`)")
    parser.add_argument("which", choices=("storyloom", "resumed", "baseline"))
    parser.add_argument("turns", type=int)
    args = parser.parse_args()
    print(json.dumps(_child(args.which, args.turns)))


if __name__ == "__main__":
    main()
