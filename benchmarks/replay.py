"""Figure 6: replaying a 1,000-turn save headless at maximum speed, in turns per second.

The save is played here first (lighthouse story, offline narrator with faults
0.2, so it holds corrections and failures too). Then it is replayed:

- in process: `load_save` + `replay_plan` (which re-verifies every commit) +
  `Replayer.run` at infinite speed;
- as a player runs it: `storyloom replay SAVE --headless --speed inf`, a fresh
  process, output to /dev/null.

The baseline in the same run is playing the same 1,000 commands live on the
offline narrator with no save at all (what the replay re-does, plus its checks).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time

from benchmarks._common import Figure, Row, play_session, scratch_dir

TURNS = 1000
FAULTS = 0.2


def run(quick: bool = False) -> Figure:
    from storyloom.saves.reader import load_save
    from storyloom.saves.replay import Replayer, replay_plan

    turns = 40 if quick else TURNS
    folder = scratch_dir("replay")
    figure = Figure(6, "replay", "playing the same commands live on the offline narrator, no save")
    try:
        save = folder / "replay.jsonl"
        play_session(turns, save_path=save, faults=FAULTS, fsync=False)
        started = time.perf_counter()
        play_session(turns, faults=FAULTS)
        live = time.perf_counter() - started

        started = time.perf_counter()
        plan = replay_plan(load_save(save))
        planned = time.perf_counter() - started
        result = asyncio.run(Replayer(plan).run())
        in_process = time.perf_counter() - started
        if not result.faithful:
            raise AssertionError(f"the replay diverged: {result.divergence}")
        commits = sum(e.event == "turn_committed" for e in result.events)

        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "storyloom.tui.cli", "replay", str(save), "--headless", "--speed", "inf"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=600,
        )
        cli = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"storyloom replay failed ({done.returncode}):\n{done.stderr[-2000:]}")
        figure.add(
            Row(f"turns/s, {turns:,}-turn save replayed in process", turns / in_process, turns / live, better="higher")
        )
        figure.add(
            Row("turns/s, `storyloom replay --headless --speed inf`", turns / cli, turns / live, better="higher")
        )
        figure.notes += [
            f"{commits} commits; reading and planning the replay (chain check + re-judging) took "
            f"{planned:.2f} s of the {in_process:.2f} s"
        ]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return figure
