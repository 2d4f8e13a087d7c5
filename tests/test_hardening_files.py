"""Damaged story packs and saves: success or a clear message, never a traceback, and never a write.

Every input goes through the real command line (`storyloom.tui.cli.main`): `check-story` (and a short
headless play when the pack passes) for packs; `verify`, `export --format md|json` and
`replay --headless` for saves; a resume that is refused must leave the save as it was.
The file's bytes and modification time are compared before and after every reading command.
Default suite: a few hundred inputs per kind; `-m slow`: thousands.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storyloom.engine.narration import TransientNarratorError
from storyloom.engine.narrators.offline import OfflineNarrator
from storyloom.engine.packs import load_pack
from storyloom.saves.reader import load_save
from storyloom.saves.resume import start_new
from storyloom.tui.cli import main
from storyloom.tui.cli.headless import play_commands
from storyloom.tui.session import PlaySession
from tests.conftest import SHORE_PACK, Reply, ScriptedNarrator, structured, turn_json
from tests.hardening.corpus import assert_inert
from tests.hardening.figures import tally
from tests.hardening.mutate import damaged_pack, damaged_save
from tests.hardening.play import shore_file

PACKS = {
    "example": (Path(__file__).parent / "packs" / "example.toml").read_text(encoding="utf-8"),
    "shore": SHORE_PACK,
    "lighthouse": (Path(__file__).parents[1] / "engine" / "stories" / "lighthouse.toml").read_text(encoding="utf-8"),
}
DEFAULT = settings(
    max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True
)
"""The default suite draws the same inputs every run (CI stays reproducible); the slow one explores."""
SLOW = settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("bad-files")


@pytest.fixture(scope="module", autouse=True)
def private_dirs(folder):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_DATA_HOME", str(folder / "data"))
        patch.setenv("XDG_CONFIG_HOME", str(folder / "config"))
        patch.setenv("XDG_CACHE_HOME", str(folder / "cache"))  # before the per-test one: the module's saves
        yield


@pytest.fixture(scope="module")
def good_save(folder) -> bytes:
    """A real save with corrections, a failure, a retry and an undo (offline narrator, seed 8, faults 0.5)."""
    pack = load_pack("lighthouse")
    path = folder / "good.jsonl"
    session, journal = start_new(pack, OfflineNarrator(pack, seed=8, faults=0.5), path=path)

    async def play() -> None:
        with journal:
            await play_commands(
                PlaySession.around(session, journal),
                ["look", "examine the boat"],
                out=open(os.devnull, "w"),
                err=open(os.devnull, "w"),
            )
            async for event in session.retry() if session.pending else session.play("take rope"):
                journal.record(event)
            async for event in session.play("take rope"):
                journal.record(event)
            journal.record(session.undo())

    asyncio.run(play())
    assert main(["verify", str(path)]) == 0
    return path.read_bytes()


@pytest.fixture(scope="module")
def faulty_save(folder) -> bytes:
    """A real save with a transient narrator fault mid-stream, a cancel with prose shown, and a retry."""
    pack_path = shore_file(folder)
    pack = load_pack(str(pack_path))
    path = folder / "faulty.jsonl"
    good = structured("You lift the brass lamp.", [{"op": "replace", "path": "/items/lamp", "value": "player"}])
    narrator = ScriptedNarrator(
        [
            Reply(structured=good.structured, raise_after=TransientNarratorError("overloaded")),
            good,
            Reply(structured=turn_json("You climb north to the Cliff Path."), hang=True),
            structured("You climb north to the Cliff Path.", [{"op": "replace", "path": "/location", "value": "path"}]),
        ]
    )

    async def no_sleep(_: float) -> None:
        return None

    session, journal = start_new(pack, narrator, source=str(pack_path), path=path, sleep=no_sleep)

    async def play() -> None:
        with journal:
            async for event in session.play("take lamp"):
                journal.record(event)
            async for event in session.play("north"):
                journal.record(event)
                if event.event == "prose_delta":
                    session.cancel()
            async for event in session.retry():
                journal.record(event)

    asyncio.run(play())
    kinds = [r.kind for r in load_save(path).records]
    assert {"narrator_retrying", "turn_cancelled"} <= set(kinds) and kinds.count("turn_committed") == 2
    assert main(["verify", str(path)]) == 0
    return path.read_bytes()


def run(argv: list[str], capsys) -> tuple[int, str]:
    """Run one command; a crash (any exception but argparse's exit) fails the test, with the input kept."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse only
        code = exc.code
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "Traceback" not in text, text[-2000:]
    assert_inert(text, " ".join(argv[:2]))
    return code, text


def unchanged(path: Path, blob: bytes, stat: os.stat_result) -> None:
    assert path.read_bytes() == blob, "a reading command changed the file"
    assert path.stat().st_mtime_ns == stat.st_mtime_ns, "a reading command touched the file"


def check_pack(folder: Path, blob: bytes, capsys) -> None:
    path = folder / "pack.toml"
    path.write_bytes(blob)
    stat = path.stat()
    code, text = run(["check-story", str(path)], capsys)
    assert code in (0, 2)
    if code == 2:
        assert "problem" in text
    else:
        commands = folder / "commands.txt"
        commands.write_text("look\nnorth\ntake lamp\ninventory\n", encoding="utf-8")
        save = folder / "played.jsonl"
        save.unlink(missing_ok=True)
        played, _ = run(
            [
                "play",
                "--headless",
                "--story",
                str(path),
                "--commands",
                str(commands),
                "--save",
                str(save),
                "--faults",
                "0.3",
            ],
            capsys,
        )
        assert played in (0, 3)
    unchanged(path, blob, stat)


def check_save(folder: Path, blob: bytes, capsys) -> None:
    path = folder / "damaged.jsonl"
    path.write_bytes(blob)
    stat = path.stat()
    verified, text = run(["verify", str(path)], capsys)
    assert verified in (0, 1, 2)
    for fmt in ("md", "json"):
        exported, _ = run(["export", str(path), "--format", fmt], capsys)
        assert exported in (0, 1, 2)
    replayed, _ = run(["replay", str(path), "--headless", "--speed", "inf"], capsys)
    assert replayed in (0, 1, 2)
    unchanged(path, blob, stat)
    if verified != 0:
        commands = folder / "one.txt"
        commands.write_text("look\n", encoding="utf-8")
        resumed, _ = run(["play", "--headless", "--commands", str(commands), "--resume", str(path)], capsys)
        if resumed == 2:  # refused: the file is left exactly as it was
            unchanged(path, blob, stat)


@pytest.mark.parametrize("name", list(PACKS))
def test_damaged_story_packs_get_a_clear_answer_and_stay_unchanged(name, folder, capsys):
    @DEFAULT
    @given(st.data())
    def fuzz(data):
        check_pack(folder, data.draw(damaged_pack(PACKS[name])), capsys)
        tally("bad files: damaged story packs")

    fuzz()


@pytest.mark.parametrize("base", ["good_save", "faulty_save"])
def test_damaged_saves_get_a_clear_answer_and_stay_unchanged(base, folder, request, capsys):
    blob = request.getfixturevalue(base)

    @settings(DEFAULT, max_examples=150)
    @given(st.data())
    def fuzz(data):
        check_save(folder, data.draw(damaged_save(blob)), capsys)
        tally("bad files: damaged saves")

    fuzz()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PACKS))
def test_thousands_of_damaged_story_packs(name, folder, capsys):
    @SLOW
    @given(st.data())
    def fuzz(data):
        check_pack(folder, data.draw(damaged_pack(PACKS[name])), capsys)
        tally("bad files: damaged story packs")

    fuzz()


@pytest.mark.slow
@pytest.mark.parametrize("base", ["good_save", "faulty_save"])
def test_thousands_of_damaged_saves(base, folder, request, capsys):
    blob = request.getfixturevalue(base)

    @settings(SLOW, max_examples=500)
    @given(st.data())
    def fuzz(data):
        check_save(folder, data.draw(damaged_save(blob)), capsys)
        tally("bad files: damaged saves")

    fuzz()


@pytest.fixture
def odd_files(tmp_path):
    """A named pipe no one writes to (every read waits forever) and an endless device."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    return {"a named pipe (FIFO)": fifo, "a character device": Path("/dev/zero")}


@contextlib.contextmanager
def _within(seconds: int):
    """A hang becomes a failure (SIGALRM interrupts a blocked open or read) instead of a stuck suite."""

    def timed_out(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, timed_out)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_pipe_or_a_device_given_as_a_save_a_story_or_the_config_is_refused_at_once(
    tmp_path, monkeypatch, capsys, odd_files
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    commands = tmp_path / "c.txt"
    commands.write_text("look\n", encoding="utf-8")
    for kind, odd in odd_files.items():
        for words in (
            ["verify", str(odd)],
            ["export", str(odd)],
            ["export", str(odd), "--format", "json"],
            ["replay", "--headless", str(odd)],
            ["play", "--headless", "--commands", str(commands), "--resume", str(odd)],
            ["check-story", str(odd)],
            ["play", "--headless", "--commands", str(commands), "--story", str(odd)],
        ):
            with _within(10):
                code = main(words)
            captured = capsys.readouterr()
            assert code == 2, (words, captured)
            assert f"this is {kind}, not a regular file" in captured.out + captured.err, words
            assert "Traceback" not in captured.err
            tally("bad files: a pipe or a device as a save or a story")
    config = tmp_path / "config" / "storyloom" / "config.toml"
    config.parent.mkdir(parents=True)
    os.mkfifo(config)
    for words in (["config"], ["play", "--headless", "--commands", str(commands)]):
        with _within(10):
            assert main(words) == 2
        captured = capsys.readouterr()
        assert "this is a named pipe (FIFO), not a regular file" in captured.out + captured.err
    tally("bad files: a pipe as the config file", 2)


def test_a_story_pack_nested_too_deeply_is_a_problem_not_a_traceback(tmp_path, capsys):
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 3000 + "]" * 3000 + "\n", encoding="utf-8")
    assert main(["check-story", str(deep)]) == 2
    assert "nested too deeply" in capsys.readouterr().err
