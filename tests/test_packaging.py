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


def test_the_command_is_storyloom_s_and_the_pytest_plugin_a_distribution_of_its_own() -> None:
    scripts = metadata.entry_points(group="console_scripts")
    assert scripts["storyloom"].value == "storyloom.tui.cli:main"
    plugins = {ep.name: ep for ep in metadata.entry_points(group="pytest11")}
    assert plugins["frame_geometry"].value == "pytest_frame_geometry.plugin"
    assert plugins["frame_geometry"].dist is not None and plugins["frame_geometry"].dist.name == "pytest-frame-geometry"
    assert "frame_geometry" not in {ep.name for ep in metadata.distribution("storyloom").entry_points}


def test_the_plugin_needs_only_textual_and_pytest_and_storyloom_tests_with_it() -> None:
    """A Textual developer adding the plugin gets no game, no anthropic, no httpx."""
    requires = metadata.requires("pytest-frame-geometry") or []
    assert sorted(req.split(">")[0].split("=")[0].split("<")[0] for req in requires) == ["pytest", "textual"]
    plugin = tomllib.loads((ROOT / "pytest-frame-geometry/pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert f'pytest-frame-geometry=={plugin["version"]}; extra == "test-base"' in (metadata.requires("storyloom") or [])
