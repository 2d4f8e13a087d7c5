"""Figure 1: streaming a turn at 200 tokens/s with 10 and 1,000 turns already on screen.

Headless (`App.run_test`) at 120x40, as in /work/shared/notes/streaming-in-textual.md.
Each case runs in its own subprocess so one case's garbage and widgets do not
tax the next:

- storyloom: the real app (`StoryloomApp`) around a `Session` whose narrator
  streams the turn's JSON at 200 tokens/s (about 4 characters a token, a blank
  line every 60 tokens); the command is typed and sent like a player's. The
  earlier turns are `TurnMessage` widgets with committed prose, as playing them
  leaves the transcript. The measured CPU includes the engine's own work
  (partial JSON parsing of the stream), which the baseline does not have.
- baseline: Textual's `MarkdownStream` (`Markdown.get_stream`) writing the same
  tokens into a new `Markdown` at the end of an anchored `VerticalScroll` of one
  plain `Markdown` widget per earlier turn.

CPU is process time per 1,000 tokens over the streaming window; frames are
counted at the app's display step (`storyloom.tui.testing.frames.FrameRecorder`). Each case
runs three times (`RUNS`) and the run with the median CPU is reported, with all three.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import time
from typing import Any

from benchmarks import terminal
from benchmarks._common import Figure, Row, fill_transcript, storyloom_app

RATE = 200.0
SIZE = (120, 40)
WORDS = (
    "the",
    "sea",
    "is",
    "wet",
    "and",
    "you",
    "go",
    "up",
    "old",
    "rod",
    "oil",
    "fog",
    "cod",
    "net",
    "far",
    "dim",
    "low",
    "red",
    "of",
    "in",
)
"""Short words: with the leading space a token is 3.6 characters, so 1,000 tokens fit the 4,000-character turn."""
PARAGRAPH_TOKENS = 60


def tokens(count: int) -> list[str]:
    """`count` prose tokens of about 4 characters, a paragraph break every 60."""
    out = []
    for index in range(count):
        word = WORDS[(index * 7 + index // 3) % len(WORDS)]
        if index == 0:
            out.append(word.capitalize())
        elif index % PARAGRAPH_TOKENS == 0:
            out.append("\n\n" + word.capitalize())
        else:
            out.append(" " + word)
    return out


def old_prose(turn: int) -> str:
    """The committed prose of an earlier turn: three short paragraphs."""
    text = "".join(tokens(150))
    return f"Turn {turn}. {text}"


async def _paced(count: int, write: Any) -> tuple[float, int]:
    """Call `write(token)` for each token on a 200/s schedule; returns (seconds, tokens written)."""
    started = time.perf_counter()
    for index, token in enumerate(tokens(count)):
        delay = started + index / RATE - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await write(token)
    return time.perf_counter() - started, count


class _PacedNarrator:
    """Streams one turn's JSON, token by token, at 200 tokens/s."""

    name = "bench"
    model = "paced-200"

    def __init__(self, count: int):
        self.count = count
        self.finished_at = 0.0

    async def narrate(self, request: Any):
        from storyloom.engine.narration import Finish, StructuredDelta

        queue: list[str] = ['{"narrative": "']
        yield StructuredDelta(queue.pop())
        started = time.perf_counter()
        for index, token in enumerate(tokens(self.count)):
            delay = started + index / RATE - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            yield StructuredDelta(json.dumps(token)[1:-1])
        self.finished_at = time.perf_counter()
        yield StructuredDelta('", "state_patch": [], "suggestions": ["look"]}')
        yield Finish("tool_use")


async def _storyloom(prior: int, count: int) -> dict[str, float]:
    from storyloom.engine.lifecycle import Session
    from storyloom.engine.packs import load_pack
    from storyloom.tui.testing.frames import FrameRecorder
    from storyloom.tui.testing.pilot import until

    pack = load_pack("lighthouse")
    narrator = _PacedNarrator(count)
    session = Session(pack, narrator, next_turn=prior + 1)
    app = storyloom_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        started = time.perf_counter()
        await fill_transcript(app, ((turn, "look", old_prose(turn)) for turn in range(1, prior + 1)), session.state)
        filled = time.perf_counter() - started
        for _ in range(5):
            await pilot.pause()
        gc.collect()
        recorder = FrameRecorder(app).start()
        await pilot.press(*"look")
        profiler = _profiler()
        frames0, cpu0, wall0 = len(recorder.frames), time.process_time(), time.perf_counter()
        await pilot.press("enter")
        while not narrator.finished_at:  # not `pilot.pause()`: it visits every widget on each call
            await asyncio.sleep(0.05)
        cpu, wall, frames = time.process_time() - cpu0, narrator.finished_at - wall0, len(recorder.frames) - frames0
        _dump(profiler, "storyloom", prior)
        await until(pilot, lambda: not app.game.running, limit=10**9)
        recorder.stop()
        shown = app.game.message(prior + 1)
        assert shown is not None and shown.outcome == "committed", "the streamed turn did not commit"
    return {"cpu_per_1000": cpu / count * 1000, "fps": frames / wall, "tokens_per_s": count / wall, "fill_s": filled}


async def _baseline(prior: int, count: int) -> dict[str, float]:
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll
    from textual.widgets import Markdown

    from storyloom.tui.testing.frames import FrameRecorder

    class Chat(App[None]):
        def compose(self) -> ComposeResult:
            yield VerticalScroll(id="transcript")

    app = Chat()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one(VerticalScroll)
        transcript.anchor()
        await transcript.mount_all([Markdown(f"**› look**\n\n{old_prose(turn)}") for turn in range(1, prior + 1)])
        for _ in range(5):
            await pilot.pause()
        gc.collect()
        recorder = FrameRecorder(app).start()
        live = Markdown("**› look**\n\n")
        await transcript.mount(live)
        stream = Markdown.get_stream(live)
        profiler = _profiler()
        frames0, cpu0, wall0 = len(recorder.frames), time.process_time(), time.perf_counter()
        seconds, _ = await _paced(count, stream.write)
        await stream.stop()
        cpu, frames = time.process_time() - cpu0, len(recorder.frames) - frames0
        _dump(profiler, "baseline", prior)
        wall = time.perf_counter() - wall0
        recorder.stop()
    return {
        "cpu_per_1000": cpu / count * 1000,
        "fps": frames / wall,
        "tokens_per_s": count / seconds,
        "catch_up_s": wall - seconds,
    }


PROFILE_ENV = "STORYLOOM_BENCH_PROFILE"
"""Set to a folder to profile each case's streaming window with cProfile (then the CPU figures include
the profiler's overhead; read the proportions, not the times)."""


def _profiler() -> Any:
    if not os.environ.get(PROFILE_ENV):
        return None
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    return profiler


def _dump(profiler: Any, which: str, prior: int) -> None:
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(os.path.join(os.environ[PROFILE_ENV], f"streaming-{which}-{prior}.prof"))


def _case(which: str, prior: int, count: int) -> dict[str, float]:
    """Run one case in a fresh interpreter and read its JSON line."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.streaming", which, str(prior), str(count)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"streaming case {which} {prior} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


RUNS = 3
"""Each case runs this many times (interleaved, each in a fresh process); the run with the median CPU is reported.

One run of a 5-second window on a shared 2-core machine varies by ±15%; the median of three is steadier."""


def _median_run(runs: list[dict[str, float]]) -> dict[str, float]:
    ordered = sorted(runs, key=lambda run: run["cpu_per_1000"])
    return {**ordered[len(ordered) // 2], "cpu_runs": [run["cpu_per_1000"] for run in runs]}


def run(quick: bool = False) -> Figure:
    """Both transcripts at both sizes; the 1,000-turn case is 50 turns and one run in quick mode."""
    small, large, count = (2, 50, 60) if quick else (10, 1000, 1000)
    runs = 1 if quick else RUNS
    figure = Figure(1, "streaming", "Textual MarkdownStream into a transcript of plain Markdown widgets")
    cases = [(which, prior) for prior in (small, large) for which in ("storyloom", "baseline")]
    measured: dict[tuple[str, int], list[dict[str, float]]] = {case: [] for case in cases}
    for _ in range(runs):
        for which, prior in cases:
            measured[(which, prior)].append(_case(which, prior, count))
    results = {case: _median_run(found) for case, found in measured.items()}
    for prior, limit in ((small, 0.4), (large, 0.25)):  # ratios: absolute CPU seconds differ between machines
        ours, theirs = results[("storyloom", prior)], results[("baseline", prior)]
        ratio = ours["cpu_per_1000"] / theirs["cpu_per_1000"]
        figure.add(
            Row(
                f"CPU s per 1,000 tokens, {prior:,} turns",
                ours["cpu_per_1000"],
                theirs["cpu_per_1000"],
                target=f"ratio <= {limit}",
                met=ratio <= limit,
            )
        )
        figure.add(
            Row(
                f"frames/s at 200 tokens/s, {prior:,} turns",
                ours["fps"],
                theirs["fps"],
                target=">= 50",
                met=ours["fps"] >= 50,
                better="higher",
            )
        )
    growth = results[("storyloom", large)]["cpu_per_1000"] / results[("storyloom", small)]["cpu_per_1000"]
    naive_growth = results[("baseline", large)]["cpu_per_1000"] / results[("baseline", small)]["cpu_per_1000"]
    figure.add(
        Row(f"CPU growth, {large:,} / {small:,} turns (x)", growth, naive_growth, target="<= 1.2", met=growth <= 1.2)
    )
    cheaper = results[("baseline", large)]["cpu_per_1000"] / results[("storyloom", large)]["cpu_per_1000"]
    figure.add(
        Row(
            f"times cheaper than the baseline at {large:,} turns",
            cheaper,
            None,
            target=">= 4",
            met=cheaper >= 4,
            better="higher",
        )
    )
    figure.notes.append(
        f"{count} tokens per case, median of {runs} runs; CPU s per 1,000 tokens of each run: "
        + "; ".join(
            f"{which} {prior}: " + ", ".join(f"{cpu:.2f}" for cpu in r["cpu_runs"])
            for (which, prior), r in results.items()
        )
    )
    figure.notes.append(
        "achieved tokens/s: "
        + ", ".join(f"{which} {prior}: {r['tokens_per_s']:.0f}" for (which, prior), r in results.items())
    )
    figure.notes += [
        f"baseline {prior} turns: the MarkdownStream caught up {r['catch_up_s']:.2f} s after the last token"
        for (which, prior), r in results.items()
        if which == "baseline"
    ]
    terminal.rows(figure, [0, 5] if quick else [0, 1000], count=200 if quick else terminal.TOKENS)
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description="one streaming case (used by `python -m benchmarks`)")
    parser.add_argument("which", choices=("storyloom", "baseline"))
    parser.add_argument("prior", type=int)
    parser.add_argument("tokens", type=int)
    args = parser.parse_args()
    case = _storyloom if args.which == "storyloom" else _baseline
    print(json.dumps(asyncio.run(case(args.prior, args.tokens))))


if __name__ == "__main__":
    main()
