"""Figure 1, the whole path: the installed `storyloom` in a pseudo-terminal, fed by a loopback model server.

What a player runs, measured from outside the process:

- the `storyloom` command from this interpreter's `bin` folder, in a pty we open
  (TERM=xterm-256color, 120x40), its output drained continuously; the reader
  answers Textual's query for synchronized output, so each painted frame is one
  `ESC[?2026h … ESC[?2026l` pair in the stream, counted as it arrives;
- a loopback HTTP server on 127.0.0.1 streaming one turn of 2,000 tokens at 200
  tokens/s as server-sent events: OpenAI chat-completions tool-call deltas for
  `--narrator openai --base-url`, Anthropic `input_json_delta` events for
  `--narrator anthropic --base-url` (the real `anthropic` SDK reads them);
- 0 turns of history (a new game) and 1,000 (a resumed save played on the offline
  narrator, copied fresh for each run).

Measured per case: CPU of the storyloom process (every thread, from
/proc/PID/task/*/schedstat, nanoseconds) from the server's first token until the
last token's text is in the terminal output; frames/s over that window; and lag,
the time from the server sending the last token (a word found nowhere else) to
that word appearing in the pty output. The CPU figure is the median of five
windows of 400 tokens each (the last runs until the reply is on screen), so a
burst of someone else's work on a shared machine moves one window, not the
figure; the total over the stream is in the notes.

Baseline in the same run, through the same pty and the same server: a bare
Textual app that reads the OpenAI stream with httpx and puts the text so far
into one `Static` (`Static.update` per token) at the end of an anchored
`VerticalScroll` holding one `Static` per earlier turn.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import os
import pty
import shutil
import signal
import struct
import sys
import termios
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchmarks._common import Figure, Row, median, play_session, scratch_dir

RATE = 200.0
TOKENS = 2000
COLUMNS, LINES = 120, 40
MARKER = "Zqxjvk."
"""The last token's word: in no story text, so its first appearance in the terminal output is the last token shown."""
WINDOWS = 5
KINDS = ("openai", "anthropic", "bare")
SYNC_END = b"\x1b[?2026l"
SYNC_QUERY = b"\x1b[?2026$p"
SYNC_SUPPORTED = b"\x1b[?2026;2$y"
"""The DECRPM answer of a terminal that supports synchronized output (as kitty, WezTerm, iTerm2, foot do)."""
WORDS = ("the", "sea", "is", "wet", "and", "you", "go", "up", "old", "rod", "oil", "fog", "cod", "net", "far", "dim")


def prose_tokens(count: int = TOKENS) -> list[str]:
    """`count` pieces of prose of about 1.9 characters (model tokens as tool-call deltas are often shorter
    than a word), paragraphs of about 600 characters, the last piece the marker word; under the engine's
    4,000-character narrative limit."""
    words, length, index = [], 0, 0
    budget = int((count - 1) * 1.9)
    while length < budget:
        word = WORDS[(index * 7 + index // 3) % len(WORDS)]
        piece = word.capitalize() if index == 0 else ("\n\n" + word.capitalize() if index % 120 == 0 else " " + word)
        words.append(piece)
        length += len(piece)
        index += 1
    text = "".join(words)[:budget]
    cuts = [round(i * len(text) / (count - 1)) for i in range(count)]
    return [text[a:b] for a, b in zip(cuts, cuts[1:], strict=False)] + [" " + MARKER]


def _openai_events(pieces: list[str]) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """(head, one event per token, tail) of a chat-completions stream whose tool call's arguments are the turn."""

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None, choices: bool = True) -> bytes:
        body = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1718000000,
            "model": "bench",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}] if choices else [],
            "usage": usage,
        }
        return f"data: {json.dumps(body)}\n\n".encode()

    def arguments(text: str) -> bytes:
        return chunk({"tool_calls": [{"index": 0, "function": {"arguments": text}}]})

    head = [
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_bench",
                        "type": "function",
                        "function": {"name": "report_turn", "arguments": ""},
                    }
                ],
            }
        ),
        arguments('{"narrative": "'),
    ]
    body = [arguments(json.dumps(piece)[1:-1]) for piece in pieces]
    tail = [
        arguments('", "state_patch": [], "suggestions": ["look"]}'),
        chunk({}, "tool_calls"),
        chunk({}, usage={"prompt_tokens": 1500, "completion_tokens": len(pieces), "total_tokens": 0}, choices=False),
        b"data: [DONE]\n\n",
    ]
    return head, body, tail


def _anthropic_events(pieces: list[str]) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """(head, one event per token, tail) of a Messages stream with one tool_use block."""

    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    def partial(text: str) -> bytes:
        return event(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": text}},
        )

    message = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-bench",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 1500,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
        },
    }
    head = [
        event("message_start", {"type": "message_start", "message": message}),
        event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_bench", "name": "report_turn", "input": {}},
            },
        ),
        partial('{"narrative": "'),
    ]
    body = [partial(json.dumps(piece)[1:-1]) for piece in pieces]
    tail = [
        partial('", "state_patch": [], "suggestions": ["look"]}'),
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": len(pieces)},
            },
        ),
        event("message_stop", {"type": "message_stop"}),
    ]
    return head, body, tail


class ModelServer:
    """A loopback server streaming the turn at `RATE` tokens/s to every POST, in one wire format.

    `on_token(index)` is called in the server thread just after token `index` is sent (the
    benchmark samples the client's CPU there); `sent` holds the send time of each token.
    """

    def __init__(self, wire: str, pieces: list[str]):
        self.events = _openai_events(pieces) if wire == "openai" else _anthropic_events(pieces)
        self.sent: list[float] = []
        self.on_token: Any = None
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                server.requests += 1
                self.send_response(200)
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                self.send_header("cache-control", "no-cache")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                server.stream(self.wfile)

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"

    def stream(self, out: Any) -> None:
        def send(event: bytes) -> None:
            out.write(b"%x\r\n%s\r\n" % (len(event), event))
            out.flush()

        head, body, tail = self.events
        for event in head:
            send(event)
        started = time.perf_counter()
        for index, event in enumerate(body):
            delay = started + index / RATE - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            send(event)
            self.sent.append(time.perf_counter())
            if self.on_token is not None:
                self.on_token(index)
        for event in tail:
            send(event)
        out.write(b"0\r\n\r\n")
        out.flush()

    def __enter__(self) -> ModelServer:
        threading.Thread(target=self._http.serve_forever, name="bench-model", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()


class Terminal:
    """A child process in a pty we read continuously: byte and frame counts, and when a word first appeared."""

    def __init__(self, argv: list[str], env: dict[str, str], marker: bytes = MARKER.encode()):
        self.frames: list[float] = []
        self.marker = marker
        self.bytes = 0
        self.found_at: float | None = None
        self.last_output = time.perf_counter()
        self.text = bytearray()
        """Everything written so far (for the error message when a case goes wrong)."""
        pid, fd = pty.fork()
        if pid == 0:  # the child: size the terminal, then become the program
            with contextlib.suppress(Exception):
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
            os.execve(argv[0], argv, env)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
        self._reader = threading.Thread(target=self._drain, name="bench-pty", daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        tail = b""
        marker = self.marker
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            now = time.perf_counter()
            self.last_output = now
            self.bytes += len(data)
            self.text += data
            seen = tail + data
            if SYNC_QUERY in seen and SYNC_QUERY not in tail:
                os.write(self.fd, SYNC_SUPPORTED)
            self.frames += [now] * (seen.count(SYNC_END) - tail.count(SYNC_END))
            if self.found_at is None and marker in seen:
                self.found_at = now
            tail = seen[-16:]

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def wait_settled(self, quiet: float, limit: float, after: float = 0.0) -> float:
        """Wait until the program paints at most a blinking cursor's frames (3) in `quiet` seconds.

        Returns when the last busy frame was painted."""
        deadline = time.perf_counter() + limit
        while time.perf_counter() < deadline:
            now = time.perf_counter()
            recent = [t for t in self.frames[-4:] if t > now - quiet]
            if self.frames and now - max(self.frames[0], after) > quiet and len(recent) <= 3:
                busy = [t for t in self.frames if t <= now - quiet]
                return busy[-1] if busy else self.frames[0]
            time.sleep(0.02)
        raise RuntimeError(f"the program never settled:\n{_screen_text(self.text)}")

    def quit(self, limit: float = 30) -> float:
        """Press ctrl+q and wait for the program to end; the seconds that took (what a player waits for,
        the save closed and its resume record written, before the shell is theirs again)."""
        pressed = time.perf_counter()
        self.type("\x11")
        deadline = pressed + limit
        while time.perf_counter() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.pid = 0
                return time.perf_counter() - pressed
            time.sleep(0.002)
        raise RuntimeError(f"the program did not end within {limit} s of ctrl+q:\n{_screen_text(self.text)}")

    def close(self) -> None:
        if not self.pid:  # it ended already (`quit`)
            with contextlib.suppress(OSError):
                os.close(self.fd)
            return
        with contextlib.suppress(OSError):
            self.type("\x11")  # ctrl+q
        deadline = time.perf_counter() + 5
        while time.perf_counter() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of `pid` so far, in seconds (nanosecond counters from schedstat)."""
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        with contextlib.suppress(OSError), open(path, encoding="ascii") as stat:
            total += int(stat.read().split()[0])
    return total / 1e9


PROFILE_ENV = "STORYLOOM_BENCH_PYSPY"
"""Set to a folder to sample each case's streaming window with py-spy (collapsed stacks, `<case>.txt`);
py-spy must be on PATH and allowed to attach (ptrace)."""


def _profiler(pid: int, which: str, prior: int, count: int) -> Any:
    folder = os.environ.get(PROFILE_ENV)
    if not folder:
        return None
    import subprocess

    out = os.path.join(folder, f"whole-{which}-{prior}.txt")
    seconds = str(int(count / RATE))
    return subprocess.Popen(
        ["py-spy", "record", "--pid", str(pid), "-d", seconds, "-r", "200", "-t", "-f", "raw", "-o", out],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


CPROFILE_ENV = "STORYLOOM_BENCH_CPROFILE"
"""Set to a folder to profile the storyloom process's event-loop thread (where the app, the narrator and
the engine all run) with cProfile over each case's streaming window, `<folder>/whole-<case>-<prior>.prof`,
where py-spy cannot attach. The CPU figures then include the profiler's overhead: read the shares."""

_CPROFILE_HOOK = """
import os, signal, sys

_state = {}


def _toggle(*_):
    if "profile" not in _state:
        import cProfile

        _state["profile"] = cProfile.Profile()
        _state["profile"].enable()
    else:
        _state["profile"].disable()
        _state["profile"].dump_stats(os.environ["STORYLOOM_BENCH_CPROFILE_OUT"])


if os.environ.get("STORYLOOM_BENCH_CPROFILE_OUT"):
    signal.signal(signal.SIGUSR1, _toggle)
"""


def _cprofile_env(env: dict[str, str], home: Path, which: str, prior: int) -> bool:
    """With `CPROFILE_ENV` set, a `sitecustomize` in `home` that starts and stops cProfile on SIGUSR1."""
    folder = os.environ.get(CPROFILE_ENV)
    if not folder or which == "bare":
        return False
    hook = home / "cprofile-hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(_CPROFILE_HOOK, encoding="utf-8")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hook), env.get("PYTHONPATH", "")) if p)
    env["STORYLOOM_BENCH_CPROFILE_OUT"] = os.path.abspath(os.path.join(folder, f"whole-{which}-{prior}.prof"))
    return True


def _screen_text(raw: bytes | bytearray) -> str:
    return raw[-2000:].decode("utf-8", "replace").replace("\x1b", "^[")


BARE = r"""
import json, sys
import httpx
from textual.app import App
from textual.containers import VerticalScroll
from textual.widgets import Static

URL, PRIOR = sys.argv[1], int(sys.argv[2])
OLD = sys.argv[3]

class Bare(App):
    BINDINGS = [("enter", "stream", "stream"), ("ctrl+q", "quit", "quit")]

    def compose(self):
        with VerticalScroll(id="transcript"):
            for turn in range(1, PRIOR + 1):
                yield Static(f"> look\n\nTurn {turn}. {OLD}", markup=False)

    def on_mount(self):
        self.query_one(VerticalScroll).anchor()

    async def action_stream(self):
        live = Static("", markup=False)
        await self.query_one(VerticalScroll).mount(live)
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


def _old_prose() -> str:
    return "".join(prose_tokens(400)[:-1])


def _storyloom_bin() -> str:
    found = Path(sys.executable).with_name("storyloom")
    if not found.exists():
        raise RuntimeError(f"no installed storyloom command beside {sys.executable} (pip install -e . first)")
    return str(found)


def one_case(which: str, prior: int, saves: dict[int, Path], home: Path, count: int = TOKENS) -> dict[str, Any]:
    """Run one case: start the program in a pty, let it settle, send a command, stream the turn, measure."""
    pieces = prose_tokens(count)
    wire = "anthropic" if which == "anthropic" else "openai"
    env = _env(home)
    profiled = _cprofile_env(env, home, which, prior)
    with ModelServer(wire, pieces) as server:
        if which == "bare":
            argv = [sys.executable, "-c", BARE, server.url, str(prior), _old_prose()]
        else:
            base = server.url + "/v1" if wire == "openai" else server.url
            argv = [_storyloom_bin(), "play", "--narrator", wire, "--base-url", base, "--model", "bench"]
            if prior:
                copy = home / f"resume-{prior}.jsonl"
                shutil.copyfile(saves[prior], copy)
                argv += ["--resume", str(copy)]
        started = time.perf_counter()
        terminal = Terminal(argv, env)
        try:
            if which != "bare":  # a resumed save opens on a preview; the game screen names the narrator
                deadline = time.perf_counter() + 120
                while GAME_READY not in terminal.text and time.perf_counter() < deadline:
                    time.sleep(0.01)
            settled = terminal.wait_settled(1.0, 120) - started
            samples: dict[int, float] = {}
            edges = {round(i * count / WINDOWS) for i in range(WINDOWS)}
            server.on_token = lambda index: (
                samples.__setitem__(index, cpu_seconds(terminal.pid)) if index in edges else None
            )
            if profiled:
                os.kill(terminal.pid, signal.SIGUSR1)  # the profile starts before the first token is sent
            spy = _profiler(terminal.pid, which, prior, count)
            terminal.type("look\r")
            deadline = time.perf_counter() + count / RATE + 60
            while terminal.found_at is None and time.perf_counter() < deadline:
                time.sleep(0.005)
            if terminal.found_at is None:
                raise RuntimeError(
                    f"{which} {prior}: the last token never reached the screen:\n{_screen_text(terminal.text)}"
                )
            end_cpu = cpu_seconds(terminal.pid)
            if profiled:
                os.kill(terminal.pid, signal.SIGUSR1)
            if spy is not None:
                spy.wait()
            time.sleep(0.3)
            bytes_at_end = terminal.bytes
        finally:
            terminal.close()
    first, last, shown = server.sent[0], server.sent[-1], terminal.found_at
    starts = sorted(samples)
    cpus = [samples[i] for i in starts] + [end_cpu]
    counts = [b - a for a, b in zip(starts, [*starts[1:], count], strict=False)]
    window_rates = [(cpus[i + 1] - cpus[i]) / counts[i] * 1000 for i in range(len(starts))]
    frames = [t for t in terminal.frames if first <= t <= shown]
    return {
        "cpu_per_1000": median(window_rates),
        "cpu_total_per_1000": (end_cpu - cpus[0]) / count * 1000,
        "windows": window_rates,
        "fps": len(frames) / (shown - first),
        "lag_s": max(0.0, shown - last),  # the server notes a token's time after writing it: a fast reader can be first
        "tokens_per_s": (len(server.sent) - 1) / (last - first),
        "settled_s": settled,
        "bytes_per_s": bytes_at_end / max(1e-9, time.perf_counter() - started),
    }


def make_saves(priors: list[int], folder: Path) -> dict[int, Path]:
    """A save of `prior` turns played on the offline narrator, for each prior above 0."""
    saves = {}
    for prior in priors:
        if prior:
            saves[prior] = folder / f"history-{prior}.jsonl"
            play_session(prior, save_path=saves[prior], fsync=False)
    return saves


def measure(
    priors: list[int], runs: int = 1, kinds: tuple[str, ...] = KINDS, count: int = TOKENS
) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Every case `runs` times, interleaved (each run of a case in a fresh process and a fresh copy of its save)."""
    folder = scratch_dir("terminal")
    try:
        saves = make_saves(priors, folder)
        results: dict[tuple[str, int], list[dict[str, Any]]] = {(k, p): [] for p in priors for k in kinds}
        for _ in range(runs):
            for prior in priors:
                for which in kinds:
                    home = folder / f"home-{which}-{prior}"
                    shutil.rmtree(home, ignore_errors=True)
                    home.mkdir()
                    results[(which, prior)].append(one_case(which, prior, saves, home, count))
        return results
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _merged(found: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs of one case: the median of each figure."""
    return {
        key: median(run[key] for run in found)
        for key in ("cpu_per_1000", "cpu_total_per_1000", "fps", "lag_s", "tokens_per_s", "settled_s", "bytes_per_s")
    }


def rows(figure: Figure, priors: list[int], runs: int = 1, count: int = TOKENS) -> None:
    """Add the whole-path rows (both narrators at each history length, beside the bare app) to `figure`."""
    measured = measure(priors, runs, KINDS, count)
    results = {case: _merged(found) for case, found in measured.items()}
    for narrator in ("openai", "anthropic"):
        for prior in priors:
            ours, bare = results[(narrator, prior)], results[("bare", prior)]
            ratio = ours["cpu_per_1000"] / bare["cpu_per_1000"]
            figure.add(
                Row(
                    f"whole path, {narrator}: CPU s per 1,000 tokens, {prior:,} turns",
                    ours["cpu_per_1000"],
                    bare["cpu_per_1000"],
                    target="ratio <= 0.3",
                    met=ratio <= 0.3,
                ),
                Row(
                    f"whole path, {narrator}: frames/s, {prior:,} turns",
                    ours["fps"],
                    bare["fps"],
                    target=">= 50",
                    met=ours["fps"] >= 50,
                    better="higher",
                ),
                Row(
                    f"whole path, {narrator}: s behind the last token, {prior:,} turns",
                    ours["lag_s"],
                    bare["lag_s"],
                    target="<= 0.1",
                    met=ours["lag_s"] <= 0.1,
                ),
            )
        if len(priors) > 1:
            growth = results[(narrator, priors[-1])]["cpu_per_1000"] / results[(narrator, priors[0])]["cpu_per_1000"]
            naive = results[("bare", priors[-1])]["cpu_per_1000"] / results[("bare", priors[0])]["cpu_per_1000"]
            figure.add(
                Row(
                    f"whole path, {narrator}: CPU growth, {priors[-1]:,} / {priors[0]:,} turns (x)",
                    growth,
                    naive,
                    target="<= 1.2",
                    met=growth <= 1.2,
                )
            )
    figure.notes.append(
        f"whole path: {count:,} tokens at {RATE:.0f}/s per case, {runs} run(s); CPU is the median of {WINDOWS} "
        "windows of the stream; per case (CPU s/1,000 tokens median | whole stream, frames/s, lag s, terminal kB/s, "
        "s to settle at start): "
        + "; ".join(
            f"{which} {prior}: {r['cpu_per_1000']:.2f} | {r['cpu_total_per_1000']:.2f}, {r['fps']:.0f}, "
            f"{r['lag_s']:.2f}, {r['bytes_per_s'] / 1000:.0f}, {r['settled_s']:.1f}"
            for (which, prior), r in results.items()
        )
    )


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="the whole-path streaming cases alone")
    parser.add_argument("--priors", type=int, nargs="+", default=[0, 1000])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS))
    parser.add_argument("--tokens", type=int, default=TOKENS)
    args = parser.parse_args()
    measured = measure(args.priors, args.runs, tuple(args.kinds), args.tokens)
    for (which, prior), found in measured.items():
        for run in found:
            shown = {k: (round(v, 3) if isinstance(v, float) else [round(x, 2) for x in v]) for k, v in run.items()}
            print(which, prior, json.dumps(shown))


def _peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


GAME_READY = "narrator · bench".encode()
"""In the header once the game screen is up with a model narrator (`--model bench`)."""
GAME_LABEL = b"offline narrator"
"""In the header once the game screen has taken the opening's place (the save is loaded and checked)."""

BARE_START = r"""
from textual.app import App
from textual.widgets import Static


class Bare(App):
    BINDINGS = [("ctrl+q", "quit", "quit")]

    def compose(self):
        yield Static("Hello")


Bare().run()
"""


def open_case(which: str, save: Path | None, home: Path, cache: Path | None = None) -> dict[str, float]:
    """Start a program in the pty; time its first frame, when it is usable (storyloom: the game screen is up,
    the save read and checked; the bare app: its first frame) and when it stops painting but a cursor's
    blink (storyloom: the older turns of the story folded in behind); its peak RSS; then how long it takes
    to end after ctrl+q.

    Args:
        cache: a cache folder to copy into `home` as its `XDG_CACHE_HOME` (the save's resume record, as
            playing it on this machine left it); none: an empty one (a save from elsewhere).
    """
    if cache is not None:
        shutil.copytree(cache, home / "cache")
    env = _env(home)
    if which == "bare":
        argv = [sys.executable, "-c", BARE_START]
    else:
        assert save is not None
        copy = home / save.name
        shutil.copyfile(save, copy)
        _on_disk(copy)
        _settled(copy)
        argv = [_storyloom_bin(), "play", "--narrator", "offline", "--resume", str(copy)]
    started = time.perf_counter()
    terminal = Terminal(argv, env, GAME_LABEL)
    try:
        deadline = started + 300
        while which != "bare" and terminal.found_at is None and time.perf_counter() < deadline:
            time.sleep(0.01)
        settled = terminal.wait_settled(1.0, 300, after=terminal.found_at or 0.0)
        usable = (terminal.found_at or settled) - started
        first = terminal.frames[0] - started
        peak = _peak_rss_mb(terminal.pid)
        ended = terminal.quit()
    finally:
        terminal.close()
    return {
        "first_frame_s": first,
        "usable_s": usable,
        "settled_s": settled - started,
        "peak_rss_mb": peak,
        "quit_s": ended,
    }


def _on_disk(path: Path) -> None:
    """Write the copy of a save to the disk before the program starts, as a player's save is (written in
    the session that played it, long before it is resumed): resuming fsyncs the save's `resumed` record,
    and with the copy's bytes still in the page cache that fsync wrote the whole copy (about 50 ms of a
    50,000-turn save's resume; within the noise at 5,000 turns), timing the benchmark's own copy."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _settled(path: Path) -> None:
    """Wait until the copy of a save was last written over a second ago, as a player's save was: a resume
    trusts the hash a thread took of a save's first bytes while the program started only for a file not
    written within the last second (`storyloom.saves.chain.SETTLED_NS`); the benchmark's fresh copy would
    otherwise time a save just written."""
    from storyloom.saves.chain import SETTLED_NS

    written = os.stat(path)
    left = (max(written.st_mtime_ns, written.st_ctime_ns) + SETTLED_NS) / 1e9 + 0.05 - time.time()
    if left > 0:
        time.sleep(left)


def _env(home: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key in ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "VIRTUAL_ENV", "TMPDIR")
    }
    env.update(
        TERM="xterm-256color",
        COLORTERM="truecolor",
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CACHE_HOME=str(home / "cache"),
        ANTHROPIC_API_KEY="sk-ant-bench",
        COLUMNS=str(COLUMNS),
        LINES=str(LINES),
    )
    return env


RESUME_RUNS = 3
RESUME_TURNS = int(os.environ.get("STORYLOOM_BENCH_RESUME_TURNS", "5000") or 5000)
"""The long save's turns (`STORYLOOM_BENCH_RESUME_TURNS=50000` for the flatness up to 50,000 turns:
about 3 minutes more to play it)."""


def remembered(save: Path, cache: Path) -> None:
    """Leave `save`'s resume record in `cache` (as `XDG_CACHE_HOME`), as closing the session that played
    it on this machine does (`PlaySession.close`)."""
    from storyloom.engine.packs import load_pack
    from storyloom.saves.resume import remember

    was = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    try:
        remember(save, load_pack("lighthouse"), new=True)
    finally:
        if was is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = was
    if not list(cache.rglob("*.resume")):
        raise RuntimeError(f"playing {save.name} left no resume record")


def resume_rows(figure: Figure, large: int = 5000, small: int = 10, runs: int = RESUME_RUNS) -> None:
    """Resume-to-usable of a `large`-turn save played with corrections (offline narrator, faults 0.3)
    beside a bare app's start-up, in the same pty; and peak RSS of a small and a large resumed save.

    What a player does: the saves are played and closed on this machine (which leaves their resume
    records), then resumed. The same large save resumed with no record (a save from elsewhere, or
    after an update) is measured too: the full check every commit gets then."""
    folder = scratch_dir("resume")
    try:
        saves, cache = {}, folder / "cache"
        for turns in (small, large):
            saves[turns] = folder / f"resume-{turns}.jsonl"
            play_session(turns, save_path=saves[turns], faults=0.3, fsync=False)
            remembered(saves[turns], cache)
        found: dict[str, list[dict[str, float]]] = {"bare": [], "small": [], "large": [], "uncached": []}
        cases = (("bare", None), ("small", saves[small]), ("large", saves[large]), ("uncached", saves[large]))
        for _ in range(runs):
            for which, save in cases:
                home = folder / f"home-{which}"
                shutil.rmtree(home, ignore_errors=True)
                home.mkdir()
                kind = "bare" if which == "bare" else "storyloom"
                found[which].append(open_case(kind, save, home, cache if which in ("small", "large") else None))
        result = {k: {m: median(r[m] for r in v) for m in v[0]} for k, v in found.items()}
        size_mb = saves[large].stat().st_size / 1e6
        records = sum(1 for _ in saves[large].open("rb"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    usable, bare = result["large"]["usable_s"], result["bare"]["usable_s"]
    figure.add(
        Row(
            f"s from start to a usable screen, {large:,}-turn save resumed (pty)",
            usable,
            bare,
            target="ratio <= 1.5",
            met=usable / bare <= 1.5,
        ),
        Row(
            f"s from start to a usable screen, {large:,}-turn save resumed vs {small}-turn (pty)",
            usable,
            result["small"]["usable_s"],
            target="flat (ratio <= 1.2)",
            met=usable <= 1.2 * result["small"]["usable_s"],
        ),
        Row(
            f"s from start to a usable screen, {large:,}-turn save from elsewhere (no resume record, pty)",
            result["uncached"]["usable_s"],
            bare,
        ),
        Row(
            f"s to the first frame, {large:,}-turn save resumed (pty)",
            result["large"]["first_frame_s"],
            result["bare"]["first_frame_s"],
        ),
        Row(
            f"s from ctrl+q to the program's end, {large:,}-turn save resumed (pty)",
            result["large"]["quit_s"],
            result["bare"]["quit_s"],
        ),
        Row(
            f"MB peak resident, {large:,}-turn save resumed vs {small}-turn",
            result["large"]["peak_rss_mb"],
            result["small"]["peak_rss_mb"],
            target="ratio <= 1.5 (bounded)",
            met=result["large"]["peak_rss_mb"] / result["small"]["peak_rss_mb"] <= 1.5,
        ),
        Row(
            f"MB peak resident, {large:,}-turn save from elsewhere vs {small}-turn",
            result["uncached"]["peak_rss_mb"],
            result["small"]["peak_rss_mb"],
        ),
    )
    figure.notes.append(
        f"resume: the {large:,}-turn save is {size_mb:.1f} MB, {records:,} records (offline narrator, faults 0.3); "
        f"both saves played and closed on this machine first (their resume records in the resumed program's "
        f"XDG_CACHE_HOME), then resumed; 'from elsewhere' is the same save with an empty cache (a full check); "
        f"median of {runs} runs in a pty; usable = the game screen is up (the save read and checked), bare app: "
        f"its first frame, {result['bare']['usable_s']:.2f} s; {small}-turn save usable after "
        f"{result['small']['usable_s']:.2f} s; from elsewhere {result['uncached']['usable_s']:.2f} s"
    )


if __name__ == "__main__":
    main()
