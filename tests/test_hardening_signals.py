"""SIGTERM and SIGHUP end the game as ctrl+q does: the terminal leaves the alternate screen, the
save is closed (its lock file gone, every commit in it), and the exit message says where it is.

The installed `storyloom` runs in a pseudo-terminal, as a player's shell would run it.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from storyloom.saves.reader import load_save
from storyloom.saves.verify import verify_save
from tests.hardening.figures import tally

STORYLOOM = Path(sys.executable).parent / "storyloom"
ENTER_ALT_SCREEN, LEAVE_ALT_SCREEN = b"\x1b[?1049h", b"\x1b[?1049l"


def _read_until(fd: int, seen: bytearray, done, limit: float = 30.0) -> None:
    """Read the terminal's output into `seen` until `done()` or EOF (bounded: a hang fails the test)."""
    end = time.monotonic() + limit
    while not done() and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the other side closed
                return
            if not chunk:
                return
            seen += chunk


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminate_or_hangup_signal_quits_like_ctrl_q(tmp_path, signum):
    save = tmp_path / "game.jsonl"
    lock = save.with_name(save.name + ".lock")
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "TERM": "xterm-256color",
        "COLUMNS": "100",
        "LINES": "30",
    }
    main_fd, child_fd = pty.openpty()
    os.set_blocking(main_fd, False)
    process = subprocess.Popen(
        [str(STORYLOOM), "play", "--save", str(save), "--pace", "0"],
        stdin=child_fd,
        stdout=child_fd,
        stderr=child_fd,
        env=env,
        start_new_session=True,
    )
    os.close(child_fd)
    seen = bytearray()
    try:
        _read_until(main_fd, seen, lambda: lock.exists() and ENTER_ALT_SCREEN in seen)
        assert lock.exists(), bytes(seen[-400:])
        os.write(main_fd, b"look\r")
        _read_until(main_fd, seen, lambda: save.exists() and b"turn_committed" in save.read_bytes())
        time.sleep(0.5)  # the turn's frame painted
        process.send_signal(signum)
        if signum == signal.SIGHUP:
            # a hangup means the terminal is gone: its writes fail from now on
            os.close(main_fd)
            main_fd = -1
            process.wait(timeout=30)
        else:
            _read_until(main_fd, seen, lambda: process.poll() is not None)
            process.wait(timeout=30)
            _read_until(main_fd, seen, lambda: False, limit=1.0)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if main_fd >= 0:
            os.close(main_fd)
    assert process.returncode == 0, bytes(seen[-600:])
    assert not lock.exists()
    assert verify_save(save).sound
    assert sum(r.kind == "turn_committed" for r in load_save(save).records) == 1
    if signum == signal.SIGTERM:
        assert seen.rfind(LEAVE_ALT_SCREEN) > seen.rfind(ENTER_ALT_SCREEN)  # the terminal is restored
        assert f"saved to {save}".encode() in seen
    tally("faults: SIGTERM / SIGHUP to the running app")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminate_or_hangup_signal_ends_headless_play_with_the_save_closed(tmp_path, signum):
    save = tmp_path / "game.jsonl"
    lock = save.with_name(save.name + ".lock")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    process = subprocess.Popen(
        [str(STORYLOOM), "play", "--headless", "--commands", "-", "--save", str(save)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None
    process.stdin.write(b"look\n")
    process.stdin.flush()  # ... and stdin stays open: the script is still feeding commands
    end = time.monotonic() + 30
    while time.monotonic() < end and not (save.exists() and b"turn_committed" in save.read_bytes()):
        time.sleep(0.05)
    process.send_signal(signum)
    try:
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, err
    assert f"stopped by {signal.Signals(signum).name}; the story so far is saved to {save}".encode() in err
    assert b"Traceback" not in err
    assert not lock.exists() and verify_save(save).sound
    tally("faults: SIGTERM / SIGHUP to headless play")
