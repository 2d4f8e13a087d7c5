"""Figure 8: scale: long games and big saves, each beside a small one or a naive reading in the same run.

One 5,000-turn session of the lighthouse story is played on the offline narrator with faults
0.3 into a save by the real journal (`play_session`; fsync off, since its disk time is figure
3's), timing each turn; a 100-turn save is played the same way. Then:

- per-turn cost: median CPU ms per turn of a session resumed from the large save against one
  resumed from the small save (the same commands, alternating rounds; flat is 1x);
- `storyloom saves`: ms to read what the listing shows of one save (`summarize_save`), the large
  save against the small one (constant is 1x), and against reading the large save whole
  (`load_save`, what the listing did before);
- `storyloom verify`: peak resident memory of a fresh interpreter verifying the large save
  against the small one (bounded is about 1x), and against json-decoding every line of the
  large save into a list (the least a whole reading holds);
- `storyloom replay SAVE --headless`: peak resident memory of a fresh interpreter replaying the
  large save as text, against replaying the small one (bounded is about 1x) and against verifying
  the large one (the same memory is the goal: both read the save a record at a time);
- `storyloom replay SAVE --headless --speed inf` and `storyloom play --headless --resume SAVE`
  (one command) of the large save, as a player runs them, against json-decoding the save;
- the UI: peak resident memory of the installed `storyloom play --resume SAVE` in a pty, from start
  to a settled screen, with the large save against the small one (bounded is about 1x). With
  `STORYLOOM_BENCH_SAVE_MB=200` in the environment a save of that size is played too (about 80,000
  turns; some 8 minutes more) and opened the same way, against the goal of 300 MB.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import COMMAND_CYCLE, Figure, Row, median, play_session, scratch_dir

TURNS = 5000
SMALL = 100
FAULTS = 0.3
ROUNDS = 6
COUNT = 50
"""Turns timed per round in each resumed session."""

PEAK_CHILD = """
import json, sys
from storyloom.saves.verify import verify_save  # both cases start from the same modules loaded
def peak():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) / 1024 for l in status if l.startswith("VmHWM:"))
if sys.argv[1] == "verify":
    report = verify_save(sys.argv[2])
    assert report.sound, report.lines
elif sys.argv[1] == "replay":  # `storyloom replay SAVE --headless`, its text thrown away
    import contextlib, os
    from storyloom.tui.cli import main
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        code = main(["replay", sys.argv[2], "--headless"])
    assert code == 0, code
else:
    with open(sys.argv[2], "rb") as save:
        records = [json.loads(line) for line in save]
print(json.dumps({"peak_mb": peak()}))
"""


def _peak_mb(what: str, save: Path) -> float:
    """Peak resident memory (VmHWM) of a fresh interpreter doing `what` to the save."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK_CHILD, what, str(save)], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} of {save.name} failed:\n{done.stderr[-3000:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["peak_mb"])


def _storyloom(*args: str, stdin: str | None = None) -> float:
    """Seconds a `storyloom` command takes as a player runs it (a fresh process, output discarded)."""
    home = tempfile.mkdtemp(prefix="storyloom-bench-home-")
    env = {**os.environ, "XDG_DATA_HOME": f"{home}/data", "XDG_CONFIG_HOME": f"{home}/config"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "storyloom.tui.cli", *args],
        input=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=600,
        env=env,
    )
    took = time.perf_counter() - started
    shutil.rmtree(home, ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"storyloom {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return took


def _best_ms(action, repeats: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times) * 1000


def _per_turn(large: Path, small: Path, *, rounds: int, count: int, folder: Path) -> tuple[float, float, int, int]:
    """Median CPU ms per turn of a session resumed from the small save and from the large one (the
    story each save rebuilds to, as `play --resume` has it), measured in alternating rounds (so a
    change in the machine's load falls on both alike), each a fresh session journalled into a
    fresh save (fsync off). Also the standing turns of each."""
    from storyloom.engine.lifecycle import Session
    from storyloom.engine.narrators.offline import OfflineNarrator
    from storyloom.engine.packs import load_pack
    from storyloom.saves.format import SaveHeader
    from storyloom.saves.reader import load_save
    from storyloom.saves.rebuild import rebuild
    from storyloom.saves.writer import Journal

    pack = load_pack("lighthouse")
    built = {which: rebuild(load_save(which), pack) for which in (small, large)}
    times: dict[Path, list[float]] = {small: [], large: []}

    async def play(which: Path, seed: int) -> None:
        narrator = OfflineNarrator(pack, seed=seed, faults=FAULTS)
        session = Session(pack, narrator, next_turn=built[which].ledger.next_turn)
        session.restore(built[which].story())
        save = folder / f"turns-{which.stem}-{seed}.jsonl"
        with Journal.create(save, SaveHeader.for_session(pack, narrator, seed=seed, faults=FAULTS)) as journal:
            for index in range(count):
                started = time.process_time()
                async for event in session.play(COMMAND_CYCLE[index % len(COMMAND_CYCLE)]):
                    journal.record(event)
                times[which].append(time.process_time() - started)
        save.unlink()

    real_fsync = os.fsync
    os.fsync = lambda fd: None  # type: ignore[assignment]
    try:
        for seed in range(rounds):
            for which in (small, large):
                asyncio.run(play(which, seed))
    finally:
        os.fsync = real_fsync
    return (
        median(times[small]) * 1000,
        median(times[large]) * 1000,
        built[small].standing,
        built[large].standing,
    )


def _json_decode_s(save: Path) -> float:
    started = time.perf_counter()
    with open(save, "rb") as handle:
        records = [json.loads(line) for line in handle]
    took = time.perf_counter() - started
    del records
    return took


def _ui_peak_mb(save: Path, folder: Path) -> tuple[float, float]:
    """Peak RSS (MB) of the installed command resuming `save` in a pty, and seconds until its screen settles."""
    from benchmarks.terminal import open_case

    home = folder / f"home-{save.stem}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir()
    found = open_case("storyloom", save, home)
    shutil.rmtree(home, ignore_errors=True)
    return found["peak_rss_mb"], found["usable_s"]


def run(quick: bool = False) -> Figure:
    from storyloom.saves.reader import load_save
    from storyloom.saves.summary import summarize_save

    turns, small = (60, 10) if quick else (TURNS, SMALL)
    folder = scratch_dir("scale")
    figure = Figure(8, "scale", "a small save, or the whole save read or json-decoded, in the same run")
    try:
        large_save, small_save = folder / "large.jsonl", folder / "small.jsonl"
        started = time.perf_counter()
        play_session(turns, save_path=large_save, faults=FAULTS, fsync=False)
        played = time.perf_counter() - started
        play_session(small, save_path=small_save, faults=FAULTS, fsync=False)
        short, long, few, many = _per_turn(
            large_save, small_save, rounds=2 if quick else ROUNDS, count=5 if quick else COUNT, folder=folder
        )
        figure.add(
            Row(
                f"CPU ms per turn after {many:,} standing turns (vs after {few}; resumed sessions)",
                long,
                short,
                target="flat (ratio <= 1.2)",
                met=long <= 1.2 * short,
            )
        )

        repeats = 20 if quick else 50
        load_save(small_save)  # the readers' validators are built once per process, before any timing
        listed_large = _best_ms(lambda: summarize_save(large_save), repeats)
        listed_small = _best_ms(lambda: summarize_save(small_save), repeats)
        loaded_large = _best_ms(lambda: load_save(large_save), 1 if quick else 3)
        figure.add(
            Row(
                f"ms to list a {turns:,}-turn save (vs a {small}-turn one)",
                listed_large,
                listed_small,
                target="constant (ratio <= 2)",
                met=listed_large <= 2 * listed_small,
            ),
            Row(f"ms to list a {turns:,}-turn save (vs reading it whole)", listed_large, loaded_large),
        )

        verify_large, verify_small = _peak_mb("verify", large_save), _peak_mb("verify", small_save)
        decoded_large = _peak_mb("decode", large_save)
        figure.add(
            Row(
                f"MB peak, verify of a {turns:,}-turn save (vs a {small}-turn one)",
                verify_large,
                verify_small,
                target="bounded (ratio <= 1.3)",
                met=verify_large <= 1.3 * verify_small,
            ),
            Row(f"MB peak, verify of a {turns:,}-turn save (vs json-decoding it whole)", verify_large, decoded_large),
        )
        replay_large, replay_small = _peak_mb("replay", large_save), _peak_mb("replay", small_save)
        figure.add(
            Row(
                f"MB peak, replay --headless of a {turns:,}-turn save (vs a {small}-turn one)",
                replay_large,
                replay_small,
                target="bounded (ratio <= 1.3)",
                met=replay_large <= 1.3 * replay_small,
            ),
            Row(
                f"MB peak, replay --headless of a {turns:,}-turn save (vs verify of it)",
                replay_large,
                verify_large,
                target="as verify (ratio <= 1.3)",
                met=replay_large <= 1.3 * verify_large,
            ),
        )

        decode = min(_json_decode_s(large_save) for _ in range(3))
        replayed = _storyloom("replay", str(large_save), "--headless", "--speed", "inf")
        figure.add(
            Row(
                f"s for `storyloom replay --headless --speed inf`, {turns:,} turns (vs json-decoding the save)",
                replayed,
                decode,
                target="< 5 s" if not quick else "",
                met=replayed < 5 if not quick else None,
            )
        )
        resumed_save = folder / "resumed.jsonl"
        shutil.copyfile(large_save, resumed_save)
        resumed = _storyloom("play", "--headless", "--commands", "-", "--resume", str(resumed_save), stdin="look\n")
        figure.add(
            Row(
                f"s for `storyloom play --headless --resume`, {turns:,} turns + 1 (vs json-decoding the save)",
                resumed,
                decode,
            )
        )
        ui_large, _ = _ui_peak_mb(large_save, folder)
        ui_small, _ = _ui_peak_mb(small_save, folder)
        figure.add(
            Row(
                f"MB peak resident, the UI resuming a {turns:,}-turn save (vs a {small}-turn one; pty)",
                ui_large,
                ui_small,
                target="bounded (ratio <= 1.3)",
                met=ui_large <= 1.3 * ui_small,
            )
        )
        big_mb = float(os.environ.get("STORYLOOM_BENCH_SAVE_MB", "0") or 0)
        if big_mb and not quick:
            big_save = folder / "big.jsonl"
            big_turns = int(big_mb * 1e6 / large_save.stat().st_size * turns)
            play_session(big_turns, save_path=big_save, faults=FAULTS, fsync=False)
            ui_big, opened = _ui_peak_mb(big_save, folder)
            size = big_save.stat().st_size / 1e6
            figure.add(
                Row(
                    f"MB peak resident, the UI resuming a {size:.0f} MB save ({big_turns:,} turns; vs {small} turns)",
                    ui_big,
                    ui_small,
                    target="< 300 MB",
                    met=ui_big < 300,
                )
            )
            figure.notes.append(f"the {size:.0f} MB save was usable {opened:.1f} s after the command started")
        figure.notes += [
            f"large save: {large_save.stat().st_size / 1e6:.1f} MB, "
            f"{sum(1 for _ in large_save.open('rb')):,} records; small: {small_save.stat().st_size / 1e3:.0f} kB",
            f"{turns:,} turns played in {played:.1f} s with the journal (fsync off); per-turn cost: "
            f"the median CPU time of {2 if quick else ROUNDS} x {5 if quick else COUNT} turns in each resumed session, "
            f"in alternating rounds, each a fresh session restored from its save's rebuild, with a journal (fsync off)",
            f"listing: the best of {repeats} reads each; the whole read is `load_save`, the best of "
            f"{1 if quick else 3}",
            "peak memory: VmHWM of a fresh interpreter (imports included, about 40 MB of every row)",
            "replay and resume: a fresh `python -m storyloom.tui.cli` each, start-up included",
        ]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return figure
