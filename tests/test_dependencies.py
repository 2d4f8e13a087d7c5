"""Every third-party module the installed package imports is declared in pyproject.toml.

A module that is only present because something else pulled it in (jsonpointer under jsonpatch,
typing_extensions under pydantic) works here and breaks the day that other package stops needing
it. Read from the source with `ast`, like tests/test_architecture.py: an import in a code path no
test runs is checked too. The pytest plugins in `tui/testing/` may also use the `test` extra.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("engine", "saves", "tui")


def _requirement_names(requirements: list[str]) -> set[str]:
    return {_normal(re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0]) for requirement in requirements}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _imported(path: Path) -> set[str]:
    """The top-level modules a file imports (absolute imports only)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def _third_party(names: set[str]) -> set[str]:
    return {name for name in names if name not in sys.stdlib_module_names and name not in {"storyloom", "__future__"}}


def test_every_imported_third_party_module_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = _requirement_names(project["dependencies"])
    extras = project["optional-dependencies"]
    for_tests = declared | _requirement_names(extras["test"]) | _requirement_names(extras["test-base"])
    distributions = packages_distributions()
    undeclared = []
    for part in PARTS:
        for path in sorted((ROOT / part).rglob("*.py")):
            allowed = for_tests if path.parent.name == "testing" else declared
            for module in sorted(_third_party(_imported(path))):
                owners = {_normal(name) for name in distributions.get(module, [module])}
                if not owners & allowed:
                    undeclared.append(f"{path.relative_to(ROOT)}: {module} ({', '.join(sorted(owners))})")
    assert not undeclared, "imported but not declared in pyproject.toml:\n" + "\n".join(undeclared)


def test_the_check_sees_an_undeclared_import(tmp_path: Path) -> None:
    """The check reads imports the way the package has them: `import a.b`, `from a.b import c`."""
    source = tmp_path / "m.py"
    source.write_text("import os\nimport jsonpointer.x\nfrom typing_extensions import Self\nfrom . import y\n")
    assert _third_party(_imported(source)) == {"jsonpointer", "typing_extensions"}
