"""storyloom installs under one name: `storyloom.engine`, `storyloom.saves`, `storyloom.tui`, never a
generic top-level `engine` or `tui` that would collide with another project's."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

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


def test_the_installed_files_all_live_under_storyloom() -> None:
    files = [str(f) for f in metadata.files("storyloom") or ()]
    assert files, "storyloom is not installed"
    outside = [
        f
        for f in files
        if not f.startswith(("storyloom/", "storyloom-"))
        and "/" in f
        and ".dist-info" not in f
        and not f.startswith("../")
    ]
    assert not outside, outside[:5]
    assert any(f.endswith("storyloom/engine/stories/lighthouse.toml") for f in files) or _editable(files)


def test_the_command_and_the_pytest_plugin_are_entry_points_of_the_storyloom_package() -> None:
    scripts = metadata.entry_points(group="console_scripts")
    assert scripts["storyloom"].value == "storyloom.tui.cli:main"
    plugins = {ep.name: ep.value for ep in metadata.entry_points(group="pytest11")}
    assert plugins["frame_geometry"] == "storyloom.tui.testing.frames"


def _editable(files: list[str]) -> bool:
    """An editable install lists a path finder, not the package's files."""
    return any("__editable__" in f for f in files)
