"""The README's commands work in a new shell after its quick start."""

from __future__ import annotations

import re
from pathlib import Path

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
