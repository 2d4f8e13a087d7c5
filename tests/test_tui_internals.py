"""The private Textual parts storyloom uses are reached through one module that refuses another Textual."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from storyloom.tui import _textual_internals
from storyloom.tui._textual_internals import TESTED_TEXTUAL, TextualVersionError, check_textual_version

ROOT = Path(__file__).resolve().parent.parent


def test_the_installed_textual_is_the_tested_one_and_the_pin_says_so():
    assert _textual_internals.installed_textual_version() == TESTED_TEXTUAL
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert pyproject.count(f'"textual=={TESTED_TEXTUAL}"') == 2  # the runtime dependency and the test extra


def test_another_textual_is_refused_with_a_message_naming_the_tested_release():
    with pytest.raises(TextualVersionError, match=f"needs Textual {TESTED_TEXTUAL}.*Textual 8.3.0 is installed"):
        check_textual_version("8.3.0")
    assert issubclass(TextualVersionError, ImportError)


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
