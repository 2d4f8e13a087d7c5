"""The README's commands work in a new shell after its quick start."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from random import Random

import pytest

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


def _quick_start() -> str:
    return README.split("## Quick start", 1)[1].split("\n## ", 1)[0]


def test_the_quick_start_is_still_two_commands():
    blocks = re.findall(r"```sh\n(.*?)```", _quick_start(), re.S)
    assert [b.strip().split(" && ")[0] for b in blocks[:2]] == ["python3 -m venv .venv"] * 2


def test_before_the_first_bare_storyloom_command_the_readme_says_how_to_reach_it():
    """`storyloom play …` after the quick start is `command not found` unless the venv is active."""
    after = README.split("## Quick start", 1)[1]
    first_bare = re.search(r"^storyloom\b", after, re.M)
    assert first_bare is not None
    before = after[: first_bare.start()]
    assert ". .venv/bin/activate" in before
    assert ".venv/bin/storyloom play" in before


# -- every example runs as written ------------------------------------------------------------

ROOT = Path(__file__).parents[1]
PLAYED = README.split("## Playing", 1)[1].split("\n## For maintainers", 1)[0]
"""The player's part of the README: from Playing to the story-pack and rules sections."""

NEEDS_A_SERVER = ("--narrator anthropic", "--narrator openai")
PLACEHOLDERS = {
    "SAVE|latest": "latest",
    "SAVE": "latest",
    "md|json": "md",
    "path/to/pack.toml": str(ROOT / "tests" / "packs" / "example.toml"),
    "PATH": str(ROOT / "tests" / "packs" / "example.toml"),
}
"""What an example's placeholder stands for when the test runs it (the first of `a|b` choices)."""


def _examples() -> list[str]:
    """Every storyloom command line the README shows a player: in `sh` blocks and inline."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", PLAYED, re.S):
        found += [line.split("  #")[0].strip() for line in block.splitlines() if "storyloom" in line]
    found += re.findall(r"`((?:printf [^`]*\| )?storyloom [^`]*)`", PLAYED)
    return [e for e in dict.fromkeys(found) if e and not e.startswith("#")]


def _runnable(example: str) -> tuple[str, str]:
    """The example as a headless command line, and the commands it is given on stdin.

    A command that opens the game gets `--headless --commands -` and the commands the README
    types into it; optional `[…]` parts are left out; placeholders get a value."""
    line = re.sub(r"\s*\[[^\]]*\]", "", example)
    for placeholder, value in PLACEHOLDERS.items():
        line = re.sub(rf"(?<![\w/.-]){re.escape(placeholder)}(?![\w/.-])", value, line)
    typed = "look\n"
    if "--seed 5" in line:
        typed = "look\ntake rope\nnorth\n"
    words = line.split()
    opens_the_game = (
        "|" not in line and (words[1:2] in ([], ["play"]) or words[1].startswith("--")) and "--headless" not in line
    )
    if opens_the_game:
        line += " --headless --commands -"
    if words[1:2] == ["replay"] and "--headless" not in line:
        line += " --headless"
    return line, typed


def _shell(line: str, typed: str, tmp_path: Path, venv_bin: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "LANG": "C.UTF-8",
    }
    return subprocess.run(
        ["bash", "-c", line], cwd=tmp_path, input=typed, capture_output=True, text=True, env=env, timeout=120
    )


def test_the_readme_shows_the_examples_this_test_runs():
    examples = _examples()
    assert "storyloom play --story glasshouse" in examples
    assert "storyloom --faults 0.5 --seed 5" in examples
    assert "storyloom check-story PATH" in examples
    assert len(examples) >= 15


SERVES = "storyloom serve"
"""An example that runs until stopped: it must start serving the game, then it is stopped."""


def _serves(line: str, tmp_path: Path, venv_bin: Path) -> None:
    """Run a `storyloom serve` example on a free loopback port until the game's page answers."""
    import socket
    import time
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    env |= {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    server = subprocess.Popen(
        ["bash", "-c", f"exec {line} --port {port}"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
                    assert page.status == 200
                    return
            except OSError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "storyloom serve never answered"
                time.sleep(0.2)
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize("example", [e for e in _examples() if not any(s in e for s in NEEDS_A_SERVER)])
def test_every_example_command_in_the_readme_runs_as_written(example: str, tmp_path: Path) -> None:
    venv_bin = Path(sys.executable).parent
    (tmp_path / "walk.txt").write_text("look\ntake rope\n")  # the player's own file of commands
    first = _shell("printf 'look\\ntake rope\\n' | storyloom play --headless --commands -", "", tmp_path, venv_bin)
    assert first.returncode == 0, first.stderr  # a save for the examples that name one
    if example.startswith(SERVES):
        _serves(example, tmp_path, venv_bin)
        return
    line, typed = _runnable(example)
    done = _shell(line, typed, tmp_path, venv_bin)
    expected = 3 if "--seed 8" in line else 0  # the README's own example of a budget running out
    assert done.returncode == expected, (line, done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    if "--seed 5" in line:
        assert "turn 2: the correction keeps the prose" in done.stderr
        assert "turn 3: the correction rewrites the prose" in done.stderr
    if "--seed 8" in line:
        assert "turn 1, attempt 3 rejected" in done.stderr and "failed after its correction budget" in done.stderr


def _game_commands() -> list[str]:
    """The commands the README's Playing section says to type, for the default story."""
    paragraph = PLAYED.split("Type what you do:", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"`([^`]+)`", paragraph)


def test_every_command_the_readme_says_to_type_does_something_in_the_default_story() -> None:
    """`fill can` was refused in every state of The Lighthouse Keeper: the can is what fills."""
    from storyloom.engine.narrators.offline.world import write_turn
    from storyloom.engine.packs import load_pack
    from storyloom.engine.state import initial_state
    from tests.test_offline_state_prose import _step

    pack = load_pack("lighthouse")
    walk = (ROOT / "tests" / "walkthroughs" / "lighthouse.txt").read_text().splitlines()
    states, state = [initial_state(pack)], initial_state(pack)
    for line in (line for line in walk if line and not line.startswith("#")):
        _, state = _step(pack, state, line)
        states.append(state)
    commands = _game_commands()
    assert {"look", "take key", "light lamp"} <= set(commands)
    for command in commands:
        if command.split()[0] in ("look", "examine", "inventory", "wait", "help", "or"):
            continue
        changes = [s for s in states if write_turn(pack, s, (), command, Random(0))["state_patch"]]
        assert changes, f"{command!r} changes nothing in any state of the walk-through"


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "activate").exists(), reason="no .venv in the clone's folder")
@pytest.mark.parametrize(
    "line",
    [
        ". .venv/bin/activate && storyloom play --story glasshouse --headless --commands -",
        ".venv/bin/storyloom play --story glasshouse --headless --commands -",
    ],
)
def test_in_a_new_shell_the_readmes_two_ways_reach_storyloom(line: str, tmp_path: Path) -> None:
    """What the README says to do in a new shell works from the clone's folder, with nothing else set up."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    done = subprocess.run(["sh", "-c", line], cwd=ROOT, input="look\n", capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "The Winter Glasshouse" in done.stdout
