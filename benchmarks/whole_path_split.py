"""Where the whole path's CPU goes outside the UI: the narrators, the engine and the save, with no screen.

Figure 1's whole-path rows measure the installed `storyloom` in a pty, so they cannot say how much of
their CPU is the screen and how much everything before it. This runs the rest of that path alone, in
a fresh interpreter per case, against the same loopback server streaming the same 2,000 tokens at
200 tokens/s (`benchmarks.terminal.ModelServer`):

- `openai`, `anthropic`: the real narrator (the anthropic SDK's client; httpx and httpx-sse), the
  engine's `Session` (prose parsed from the partial JSON, judged, committed) and the save's
  `Journal` recording every event, as `storyloom play` runs them, minus the screen;
- `read`: the floor under the narrators: httpx reading the same response's bytes through the same
  paced transport (`frame_paced_transport`), and nothing else;
- `bare`: the bare app's own read loop from figure 1 (httpx `aiter_lines`, `json.loads` per event,
  the text joined), without its screen: the naive client's share of its own figure.

CPU is the main thread's (every part of the path runs on the event loop's thread; the server's thread
is not counted), from the server's first token to the end of the turn, per 1,000 tokens; the median
of `--runs`. `--profile DIR` writes each case's cProfile (`split-<case>.prof`; then read the shares,
not the times). Run: `python -m benchmarks.whole_path_split`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import median
from benchmarks.terminal import TOKENS, ModelServer, prose_tokens

CASES = ("openai", "anthropic", "read", "bare")


async def _narrated(wire: str, server: ModelServer) -> None:
    """One turn through the real narrator, engine and save."""
    from storyloom.engine.events import TurnCommitted
    from storyloom.engine.packs import load_pack
    from storyloom.saves.resume import start_new

    narrator: Any
    if wire == "openai":
        from storyloom.engine.narrators.openai import OpenAINarrator

        narrator = OpenAINarrator(base_url=server.url + "/v1", model="bench")
    else:
        from storyloom.engine.narrators.anthropic import AnthropicNarrator

        narrator = AnthropicNarrator(api_key="sk-ant-bench", base_url=server.url, model="bench")
    with tempfile.TemporaryDirectory() as folder:
        session, journal = start_new(load_pack("lighthouse"), narrator, path=Path(folder) / "split.jsonl")
        with journal:
            async for event in session.play("look"):
                journal.record(event)
    assert isinstance(event, TurnCommitted), f"the streamed turn did not commit: {event}"


async def _read(server: ModelServer) -> None:
    import httpx

    from storyloom.engine.narrators._http_internals import frame_paced_transport

    async with (
        httpx.AsyncClient(transport=frame_paced_transport()) as client,
        client.stream("POST", server.url + "/v1/chat/completions", json={"stream": True}) as response,
    ):
        async for _ in response.aiter_bytes():
            pass


async def _bare(server: ModelServer) -> None:
    """The bare app's `read` from `benchmarks.terminal.BARE`, its `live.update(text)` left out."""
    import httpx

    text = ""
    async with (
        httpx.AsyncClient(timeout=60) as client,
        client.stream("POST", server.url + "/v1/chat/completions", json={"stream": True}) as response,
    ):
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choices = json.loads(line[6:]).get("choices") or [{}]
            for call in choices[0].get("delta", {}).get("tool_calls") or []:
                try:
                    text += json.loads('"' + call["function"]["arguments"] + '"')
                except ValueError:
                    continue


def one_case(which: str, count: int, profile: str | None) -> float:
    """CPU seconds of this thread per 1,000 tokens, from the first token sent to the end of the turn."""
    wire = "anthropic" if which == "anthropic" else "openai"
    started: dict[str, float] = {}
    with ModelServer(wire, prose_tokens(count)) as server:
        main = asyncio.new_event_loop()
        # the server's thread notes the first token; the CPU is read on this thread when the loop next runs
        server.on_token = lambda index: main.call_soon_threadsafe(_mark, started) if index == 0 else None
        work = {"read": _read, "bare": _bare}[which](server) if which in ("read", "bare") else _narrated(wire, server)
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        try:
            main.run_until_complete(work)
        finally:
            main.close()
        ended = time.thread_time()
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(os.path.join(profile, f"split-{which}.prof"))
    return (ended - started["cpu"]) / count * 1000


def _mark(started: dict[str, float]) -> None:
    started.setdefault("cpu", time.thread_time())


def measure(runs: int = 3, count: int = TOKENS, profile: str | None = None) -> dict[str, list[float]]:
    """Every case `runs` times, interleaved, each in a fresh interpreter."""
    found: dict[str, list[float]] = {case: [] for case in CASES}
    for _ in range(runs):
        for case in CASES:
            argv = [sys.executable, "-m", "benchmarks.whole_path_split", "--case", case, "--tokens", str(count)]
            done = subprocess.run(
                argv + (["--profile", profile] if profile else []), capture_output=True, text=True, timeout=300
            )
            if done.returncode != 0:
                raise RuntimeError(f"split case {case} failed:\n{done.stderr[-3000:]}")
            found[case].append(float(done.stdout.strip().splitlines()[-1]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description="the whole path's CPU outside the UI, per part")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=TOKENS)
    parser.add_argument("--profile", help="a folder for each case's cProfile")
    parser.add_argument("--case", choices=CASES, help="run one case in this process (used by the runs)")
    args = parser.parse_args()
    if args.case:
        print(one_case(args.case, args.tokens, args.profile))
        return
    found = measure(args.runs, args.tokens, args.profile)
    floor = median(found["read"])
    print(f"CPU s per 1,000 tokens, main thread, median of {args.runs} ({args.tokens:,} tokens at 200/s):")
    for case, cpus in found.items():
        runs = ", ".join(f"{cpu:.3f}" for cpu in cpus)
        print(f"  {case:10} {median(cpus):.3f}  ({median(cpus) / floor:.2f}x the paced read alone; runs {runs})")


if __name__ == "__main__":
    main()
