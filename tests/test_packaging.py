"""storyloom installs under one name: `storyloom.engine`, `storyloom.saves`, `storyloom.tui`, never a
generic top-level `engine` or `tui` that would collide with another project's."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("engine", "saves", "tui")


def test_every_package_folder_is_installed_under_the_storyloom_namespace() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    found = {
        "storyloom." + ".".join(init.parent.relative_to(ROOT).parts)
        for part in PARTS
        for init in (ROOT / part).rglob("__init__.py")
    }
    assert set(config["packages"]) == found
    assert config["package-dir"] == {f"storyloom.{part}": part for part in PARTS}


def test_the_installed_package_lives_under_storyloom_alone() -> None:
    import storyloom.tui

    location = Path(storyloom.tui.__file__).resolve()
    if location.parent == ROOT / "tui":
        pytest.skip("an editable install maps the folders in place: nothing is copied")
    site = location.parents[2]
    assert location == site / "storyloom" / "tui" / "__init__.py"
    assert not [path.name for path in site.iterdir() if path.name in PARTS]
    assert (site / "storyloom/engine/stories/lighthouse.toml").is_file()
    assert (site / "storyloom/engine/narrators/prompts/player.md").is_file()
    assert (site / "storyloom/tui/app.tcss").is_file()


def test_the_command_and_the_pytest_plugin_are_entry_points_of_the_storyloom_package() -> None:
    scripts = metadata.entry_points(group="console_scripts")
    assert scripts["storyloom"].value == "storyloom.tui.cli:main"
    plugins = {ep.name: ep.value for ep in metadata.entry_points(group="pytest11")}
    assert plugins["frame_geometry"] == "storyloom.tui.testing.frames"
