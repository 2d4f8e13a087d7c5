"""Figure 9: input latency through a pseudo-terminal, against a bare Textual app with one `Input`.

What a player feels when typing, measured from outside the process as in figure 1's whole
path (`benchmarks/terminal.py`): the installed `storyloom` in a pty we open (120x40,
TERM=xterm-256color, answering the query for synchronized output), its narrator the
OpenAI wire against a loopback server on 127.0.0.1, at 0 turns (a new game) and 1,000
(a resumed save, copied fresh for each run). We write bytes to the pty as a terminal does
when a key is pressed and read the output stream on a thread of our own, noting when each
piece arrived:

- key → painted: write `Q` into the empty command line; the time until the frame that
  carries the `Q` is closed (its `ESC[?2026l`). Then a backspace, and a pause of 40-90 ms
  (varied, so presses do not lock to the app's refresh timer) before the next;
- Enter → echo: type a command no screen holds (`QZ007`), then Enter; the time until the
  frame carrying `› QZ007` (the transcript's echo of it) is closed. The loopback model answers
  these turns in ten tokens, and the next round waits until the reply is on screen;
- the same key presses while a turn streams (2,000 tokens at 200/s); and Enter then, whose
  answer is the input line's own "a turn is still being written" note.

Baseline in the same run, through the same pty and server: a bare Textual app of one
`Input` under an anchored `VerticalScroll` holding one `Static` per earlier turn; Enter mounts
`› command` at the end of it and clears the line; `look` streams the same server's turn into
one `Static` with `Static.update` per token, as figure 1's bare app does. A ratio above 1 is
storyloom slower to answer.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import terminal
from benchmarks._common import Figure, Row, median, percentile, scratch_dir

KEY = b"Q"
BACKSPACE = b"\x7f"
BUSY = b"still being written"
SHORT = 10
"""Tokens of the reply to each echo round's command."""
PRESSES = 40
ECHOES = 8
FRAME_MEDIAN, FRAME_P99 = 0.017, 0.033
"""One frame at 60 Hz, and two."""

BARE = r"""
import json, sys
import httpx
from textual.app import App
from textual.containers import VerticalScroll
from textual.widgets import Input, Static

URL, PRIOR, OLD = sys.argv[1], int(sys.argv[2]), sys.argv[3]

class Bare(App):
    BINDINGS = [("ctrl+q", "quit", "quit")]
    CSS = "VerticalScroll { height: 1fr; }"

    def compose(self):
        with VerticalScroll(id="transcript"):
            for turn in range(1, PRIOR + 1):
                yield Static(f"> look\n\nTurn {turn}. {OLD}", markup=False)
        yield Input(id="command")

    def on_mount(self):
        self.query_one(VerticalScroll).anchor()
        self.query_one(Input).focus()

    async def on_input_submitted(self, event):
        text = event.value.strip()
        event.input.clear()
        transcript = self.query_one(VerticalScroll)
        await transcript.mount(Static("\u203a " + text, markup=False))
        live = Static("", markup=False)
        await transcript.mount(live)
        self.run_worker(self.read(live))

    async def read(self, live):
        text = ""
        async with httpx.AsyncClient(timeout=60) as client:
            async with client.stream("POST", URL + "/v1/chat/completions", json={"stream": True}) as response:
                async for line in response.aiter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    choices = json.loads(line[6:]).get("choices") or [{}]
                    for call in choices[0].get("delta", {}).get("tool_calls") or []:
                        try:
                            text += json.loads('"' + call["function"]["arguments"] + '"')
                        except ValueError:
                            continue
                        live.update(text)

Bare().run()
"""


class _Terminal(terminal.Terminal):
    """The pty of figure 1, noting when each piece of output arrived (offset of its end, time)."""

    def _drain(self) -> None:
        self.arrivals: list[tuple[int, float]] = []
        answered = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            now = time.perf_counter()
            start = len(self.text)
            self.text += data
            self.arrivals.append((len(self.text), now))
            self.bytes += len(data)
            self.last_output = now
            if not answered and terminal.SYNC_QUERY in self.text[max(0, start - 16) :]:
                os.write(self.fd, terminal.SYNC_SUPPORTED)
                answered = True
            ends = self.text.count(terminal.SYNC_END, max(0, start - 16))
            if ends:
                self.frames.append(now)
            if self.found_at is None and self.marker in self.text[max(0, start - 16) :]:
                self.found_at = now

    def mark(self) -> int:
        return len(self.text)

    def painted(self, needle: bytes, since: int, limit: float = 5.0) -> float:
        """When the frame that first carries `needle` after offset `since` was closed."""
        deadline = time.perf_counter() + limit
        while time.perf_counter() < deadline:
            at = self.text.find(needle, since)
            if at >= 0:
                end = self.text.find(terminal.SYNC_END, at)
                if end >= 0:
                    done = end + len(terminal.SYNC_END)
                    return next(t for offset, t in list(self.arrivals) if offset >= done)
            time.sleep(0.0005)
        raise RuntimeError(f"{needle!r} never painted:\n{terminal._screen_text(self.text)}")


def _pause(index: int) -> None:
    time.sleep(0.04 + (index * 37 % 50) / 1000)


def _keys(screen: _Terminal, count: int, until: float | None = None) -> list[float]:
    """Latencies of `count` key presses (fewer if the time `until` passes), each typed into an empty line."""
    found = []
    for index in range(count):
        if until is not None and time.perf_counter() > until:
            break
        since = screen.mark()
        sent = time.perf_counter()
        os.write(screen.fd, KEY)
        found.append(screen.painted(KEY, since) - sent)
        since = screen.mark()
        os.write(screen.fd, BACKSPACE)
        screen.painted(terminal.SYNC_END, since)
        _pause(index)
    return found


def _echoes(screen: _Terminal, server: terminal.ModelServer, count: int) -> list[float]:
    found = []
    for index in range(count):
        command = f"QZ{index:03d}"
        since = screen.mark()
        os.write(screen.fd, command.encode())
        screen.painted(command.encode(), since)
        _pause(index)
        since = screen.mark()
        sent = time.perf_counter()
        os.write(screen.fd, b"\r")
        found.append(screen.painted(f"\u203a {command}".encode(), since) - sent)
        screen.painted(terminal.MARKER.encode(), since, limit=30)
        time.sleep(0.3)
    return found


def one_case(
    which: str, prior: int, saves: dict[int, Path], home: Path, presses: int = PRESSES, echoes: int = ECHOES
) -> dict[str, list[float]]:
    """Start a program in the pty, settle it, then time key presses and echoes at rest and while a turn streams."""
    env = terminal._env(home)
    short = terminal._openai_events(terminal.prose_tokens(SHORT))
    long = terminal._openai_events(terminal.prose_tokens(terminal.TOKENS))
    with terminal.ModelServer("openai", terminal.prose_tokens(SHORT)) as server:
        server._http.handle_error = lambda *_: None  # type: ignore[method-assign]  # a client closing mid-turn
        if which == "bare":
            argv = [sys.executable, "-c", BARE, server.url, str(prior), terminal._old_prose()]
        else:
            argv = [terminal._storyloom_bin(), "play", "--narrator", "openai", "--base-url", server.url + "/v1"]
            argv += ["--model", "bench"]
            if prior:
                copy = home / f"resume-{prior}.jsonl"
                shutil.copyfile(saves[prior], copy)
                argv += ["--resume", str(copy)]
        screen = _Terminal(argv, env)
        try:
            if which != "bare":
                deadline = time.perf_counter() + 120
                while terminal.GAME_READY not in screen.text and time.perf_counter() < deadline:
                    time.sleep(0.01)
            screen.wait_settled(1.0, 120)
            result: dict[str, list[float]] = {"key": _keys(screen, presses)}
            server.events = short
            spy = _profiler(screen.pid, which, prior)
            result["echo"] = _echoes(screen, server, echoes)
            if spy is not None:
                spy.wait()
            server.events = long
            since = screen.mark()
            os.write(screen.fd, b"look\r")
            screen.painted(b"\x1b", since)
            time.sleep(0.5)  # the stream is under way
            ends = time.perf_counter() + terminal.TOKENS / terminal.RATE - 2.5
            result["key_streaming"] = _keys(screen, presses, until=ends)
            result["enter_streaming"] = []
            if which != "bare":  # the bare app has no notion of a turn being written; the note shows once a turn
                since = screen.mark()
                os.write(screen.fd, b"QZ")
                screen.painted(b"QZ", since)
                _pause(1)
                since = screen.mark()
                sent = time.perf_counter()
                os.write(screen.fd, b"\r")
                result["enter_streaming"].append(screen.painted(BUSY, since) - sent)
        finally:
            screen.close()
    return result


def _profiler(pid: int, which: str, prior: int) -> Any:
    """py-spy over the echo rounds when `STORYLOOM_BENCH_PYSPY` names a folder (as figure 1's whole path)."""
    folder = os.environ.get(terminal.PROFILE_ENV)
    if not folder:
        return None
    import subprocess

    out = os.path.join(folder, f"echo-{which}-{prior}.txt")
    return subprocess.Popen(
        ["py-spy", "record", "--pid", str(pid), "-d", "5", "-r", "500", "-f", "raw", "-o", out],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def measure(
    priors: list[int], runs: int, presses: int = PRESSES, echoes: int = ECHOES
) -> dict[tuple[str, int], dict[str, list[float]]]:
    folder = scratch_dir("latency")
    try:
        saves = terminal.make_saves(priors, folder)
        results: dict[tuple[str, int], dict[str, list[float]]] = {}
        for _ in range(runs):
            for prior in priors:
                for which in ("storyloom", "bare"):
                    home = folder / f"home-{which}-{prior}"
                    shutil.rmtree(home, ignore_errors=True)
                    home.mkdir()
                    found = one_case(which, prior, saves, home, presses, echoes)
                    merged = results.setdefault((which, prior), {})
                    for key, values in found.items():
                        merged.setdefault(key, []).extend(values)
        return results
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(quick: bool = False) -> Figure:
    """Both programs at 0 and 1,000 turns (5 in quick mode); median and p99 of every press."""
    priors = [0, 5] if quick else [0, 1000]
    runs = 1 if quick else 3  # Enter while a turn streams is one sample a run (its note stays until the turn ends)
    figure = Figure(9, "input latency", "a bare Textual app with one Input, in the same pty")
    results = measure(priors, runs, *((10, 2) if quick else (PRESSES, ECHOES)))
    ms = 1000.0
    for prior in priors:
        ours, bare = results[("storyloom", prior)], results[("bare", prior)]
        for key, words in (
            ("key", "key → character painted"),
            ("echo", "Enter → command echo painted"),
            ("key_streaming", "key → character painted while a turn streams"),
        ):
            for name, stat, goal in (("median", 50, FRAME_MEDIAN), ("p99", 99, FRAME_P99)):
                value = percentile(ours[key], stat)
                figure.add(
                    Row(
                        f"ms {words}, {prior:,} turns ({name})",
                        value * ms,
                        percentile(bare[key], stat) * ms,
                        target=f"<= {goal * ms:.0f} ms",
                        met=value <= goal,
                    )
                )
        if ours["enter_streaming"]:
            figure.add(
                Row(
                    f"ms Enter while a turn streams → 'still being written' painted, {prior:,} turns (median)",
                    median(ours["enter_streaming"]) * ms,
                    None,
                    target=f"<= {FRAME_MEDIAN * ms:.0f} ms",
                    met=median(ours["enter_streaming"]) <= FRAME_MEDIAN,
                )
            )
    figure.notes.append(
        f"{runs} run(s) per case; samples per case (storyloom | bare): "
        + "; ".join(
            f"{kind} {prior}: " + " | ".join(str(len(results[(w, prior)][kind])) for w in ("storyloom", "bare"))
            for prior in priors
            for kind in ("key", "echo", "key_streaming")
        )
    )
    return figure


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="the input-latency cases alone")
    parser.add_argument("--priors", type=int, nargs="+", default=[0, 1000])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for (which, prior), found in measure(args.priors, args.runs).items():
        shown = {k: [round(v * 1000, 1) for v in vs] for k, vs in found.items()}
        print(which, prior, json.dumps({k: (median(v), percentile(v, 99), v) for k, v in shown.items()}))


if __name__ == "__main__":
    main()
