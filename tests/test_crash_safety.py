"""Crash safety: a headless writer killed (SIGKILL) at random moments never loses a committed turn.

Each run plays a long commands file through `storyloom play --headless` with a
save and an events file, and is killed at a random moment. The events file is
written after the journal has recorded (and, for a commit, fsynced) each event,
so every `turn_committed` in it is a turn the player was shown as committed.
After each kill the save must load (a torn last line at most), verify, hold
every one of those commits, and replay faithfully.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from storyloom.saves.reader import load_save
from storyloom.saves.replay import Replayer, replay_plan
from storyloom.saves.verify import verify_save
from tests.test_saves_kit import LIGHTHOUSE_WALK

KILLS = 50
SEED = int(os.environ.get("STORYLOOM_CRASH_SEED", "20261129"))
ROOT = Path(__file__).parent.parent
COMMANDS = [
    *[*LIGHTHOUSE_WALK, "drop rope", "/undo", "look", "take rope", "east", "west"] * 2,
    *["/branch 5", "/regenerate", "/choose 1", "east", "/switch 1", "look", "/branch 0", "north", "/switch 2"],
]


def _writer(tmp_path: Path, n: int) -> tuple[list[str], Path, Path]:
    save, events = tmp_path / f"run{n}.jsonl", tmp_path / f"run{n}.events.jsonl"
    argv = [
        sys.executable,
        "-m",
        "storyloom.tui.cli",
        "play",
        "--headless",
        "--commands",
        str(tmp_path / "commands.txt"),
        "--save",
        str(save),
        "--events",
        str(events),
        "--faults",
        "0.3",
        "--seed",
        str(n),
        "--pace",
        "0.0005",
        "--on-fail",
        "skip",  # a failed turn does not end the run: every kind of record is written, and killed
    ]
    return argv, save, events


def _reported_commits(events: Path) -> list[tuple[int, str]]:
    """The commits the writer reported before it died (a torn last line of the events file is skipped)."""
    if not events.exists():
        return []
    commits = []
    for line in events.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "turn_committed":
            commits.append((event["turn"], event["state_hash"]))
    return commits


def _run(argv: list[str], env: dict[str, str], kill_after: float | None) -> int:
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    if kill_after is None:
        return process.wait(timeout=60)
    time.sleep(kill_after)
    process.send_signal(signal.SIGKILL)
    return process.wait(timeout=60)


def _last_records(save: Path, count: int = 8) -> str:
    """The failing save, kept where pytest keeps this test's folder, and its last records (what the kill
    interrupted), each cut to a line's worth."""
    kept = save.with_name(save.stem + "-failed" + save.suffix)
    kept.write_bytes(save.read_bytes())
    lines = save.read_bytes().splitlines()[-count:]
    return f"the save is kept at {kept}; its last {len(lines)} records:\n" + "\n".join(
        line.decode("utf-8", "replace")[:300] for line in lines
    )


@pytest.mark.slow
def test_a_writer_killed_at_random_moments_never_loses_a_committed_turn(tmp_path: Path) -> None:
    (tmp_path / "commands.txt").write_text("\n".join(COMMANDS) + "\n", encoding="utf-8")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    rng = random.Random(SEED)

    argv, save, _ = _writer(tmp_path, 0)
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    while not save.exists() and process.poll() is None:
        time.sleep(0.002)
    save_made = time.monotonic() - started  # before it, a kill proves nothing about the save
    assert process.wait(timeout=60) in (0, 3)
    full_run = time.monotonic() - started
    assert verify_save(save).sound
    kinds = {json.loads(line)["kind"] for line in save.read_text(encoding="utf-8").splitlines()}
    assert {"turn_undone", "alternative_chosen", "branch_started", "branch_switched"} <= kinds

    figures = {
        "kills": 0,
        "saves checked": 0,
        "torn lines dropped": 0,
        "commits reported": 0,
        "turns lost": 0,
        "killed before the save existed": 0,
    }
    lost: list[str] = []
    n = 0
    while figures["kills"] < KILLS and n < 2 * KILLS:
        n += 1
        argv, save, events = _writer(tmp_path, n)
        code = _run(argv, env, rng.uniform(0.9 * save_made, 0.98 * full_run))
        if code != -signal.SIGKILL:
            continue  # it finished before the kill landed; that run proves nothing about crashes
        figures["kills"] += 1
        reported = _reported_commits(events)
        figures["commits reported"] += len(reported)
        if not save.exists():
            figures["killed before the save existed"] += 1
            assert not reported
            continue
        loaded = load_save(save)
        figures["saves checked"] += 1
        figures["torn lines dropped"] += len(loaded.warnings)
        report = verify_save(save)
        assert report.sound, "\n".join(report.lines) + "\n" + _last_records(save)
        saved = {(e.turn, e.state_hash) for _, e in loaded.events if e.event == "turn_committed"}
        missing = [c for c in reported if c not in saved]
        figures["turns lost"] += len(missing)
        lost += [f"run {n}: turn {turn} ({digest[:12]}…)" for turn, digest in missing]
        result = asyncio.run(Replayer(replay_plan(loaded)).run())
        assert result.faithful, f"run {n}: {result.divergence}\n{_last_records(save)}"
    print(
        f"\ncrash test (seed {SEED}, a full run takes {full_run:.2f} s, its save made at {save_made:.2f} s): "
        + ", ".join(f"{k} {v}" for k, v in figures.items())
    )
    assert not lost, f"committed turns lost after a kill: {lost}"
    assert figures["kills"] == KILLS, f"only {figures['kills']} of {n} runs were killed mid-way"
    assert figures["commits reported"] > 0


def test_a_save_cut_at_any_byte_loads_verifies_and_keeps_every_whole_commit(tmp_path: Path) -> None:
    """What a power cut can leave: any prefix of the file. Every whole record survives; a torn one is dropped."""
    from tests.test_saves_kit import played_save

    source, _, _ = played_save(tmp_path / "whole.jsonl", LIGHTHOUSE_WALK[:6], faults=0.5)
    blob = source.read_bytes()
    header_end = blob.index(b"\n") + 1
    ends = [i + 1 for i, byte in enumerate(blob) if byte == ord("\n")]
    rng = random.Random(SEED)
    cuts = sorted({*rng.sample(range(header_end, len(blob)), 150), *ends})
    cut_path = tmp_path / "cut.jsonl"
    for cut in cuts:
        cut_path.write_bytes(blob[:cut])
        loaded = load_save(cut_path)
        whole_lines = blob[:cut].count(b"\n")
        assert len(loaded.records) == whole_lines - 1
        assert len(loaded.warnings) == (0 if cut in ends else 1)
        assert verify_save(cut_path).sound


def test_a_save_cut_after_any_record_replays_to_the_state_it_holds(tmp_path: Path) -> None:
    """A kill lands between any two records: after each record of every kind (a correction's swapped prose
    before its commit, an undo, another version, a choice, a branch, a switch), the save cut there replays
    faithfully, or the replay names where it parts from the record; never another world with no divergence
    named."""
    from tests.test_saves_kit import played_save

    walk = [
        *[*LIGHTHOUSE_WALK[:8], "drop rope", "/undo", "look", "/regenerate", "/choose 1", "/cancel east", "west"],
        *["/branch 3", "east", "/cancel /regenerate", "/switch 1", "look", "/branch 0", "wait", "/switch 2"],
    ]
    source, _, _ = played_save(tmp_path / "whole.jsonl", walk, faults=0.5, seed=3)
    lines = source.read_bytes().splitlines(keepends=True)
    kinds = [json.loads(line)["kind"] for line in lines]
    for kind in (
        "prose_replaced",
        "correction_started",
        "validation_failed",
        "turn_undone",
        "alternative_chosen",
        "branch_started",
        "branch_switched",
    ):
        assert kind in kinds, f"the session should hold a {kind} to cut after"
    cut = tmp_path / "cut.jsonl"
    for end in range(2, len(lines) + 1):
        cut.write_bytes(b"".join(lines[:end]))
        result = asyncio.run(Replayer(replay_plan(load_save(cut))).run())
        assert result.faithful, f"cut after record {end - 1} ({kinds[end - 1]}): {result.divergence}"
