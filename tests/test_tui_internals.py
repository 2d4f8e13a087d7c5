"""The private Textual parts storyloom uses are reached through one module, used only on the tested releases."""

from __future__ import annotations

import ast
from pathlib import Path

from textual.screen import Screen

from storyloom.tui import _textual_internals
from storyloom.tui._textual_internals import TESTED_TEXTUAL, RowCroppedCompositor, crop_repaints_to_rows, is_tested
from storyloom.tui.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_the_tested_range_is_the_dependency_and_the_installed_textual_is_within_it():
    assert TESTED_TEXTUAL == ("7.0.0", "8.2.8")
    assert is_tested() and _textual_internals.TESTED
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"textual>=7.0,<9"' in pyproject  # the game accepts the range, and falls back outside the tested releases
    assert [is_tested(v) for v in ("6.12.0", "7.0.0", "7.5.0", "8.2.8", "8.2.9", "8.3.0rc1", "9.0.0")] == [
        False, True, True, True, False, False, False
    ]  # fmt: skip


def test_outside_the_tested_releases_the_game_repaints_with_textuals_own_compositor_and_config_says_so_once(
    monkeypatch, capsys, tmp_path
):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    screen = Screen()
    crop_repaints_to_rows(screen)
    assert isinstance(screen._compositor, RowCroppedCompositor)
    assert main(["config"]) == 0
    assert "outside the releases" not in capsys.readouterr().out

    monkeypatch.setattr(_textual_internals, "TESTED", False)
    monkeypatch.setattr(_textual_internals, "installed_textual_version", lambda: "9.0.0")
    screen = Screen()
    crop_repaints_to_rows(screen)
    assert not isinstance(screen._compositor, RowCroppedCompositor)
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert out.count("textual 9.0.0 is outside the releases storyloom was tested with (7.0.0 to 8.2.8)") == 1
    assert "Textual's own compositor (slower, still correct)" in out


def private_textual_uses(path: Path) -> list[str]:
    """Private Textual modules imported, and private attributes named, in one source file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("textual."):
            if any(part.startswith("_") for part in node.module.split(".")):
                found.append(node.module)
        if isinstance(node, ast.Attribute) and node.attr in _PRIVATE_TEXTUAL_NAMES:
            found.append(node.attr)
    return found


_PRIVATE_TEXTUAL_NAMES = {
    "_compositor",
    "_get_renders",
    "_layout_updates",
    "_clear_arrangement_cache",
    "_display",
    "_batch_count",
    "_refresh_layout",
    "_layout_required",
}


def test_no_other_product_module_touches_textual_internals():
    offenders = {
        str(path.relative_to(ROOT)): uses
        for path in sorted((ROOT / "tui").rglob("*.py"))
        if path.name != "_textual_internals.py" and (uses := private_textual_uses(path))
    }
    assert offenders == {}
