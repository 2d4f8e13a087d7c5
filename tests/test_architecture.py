"""The parts import only what docs/architecture.md says they may, always under the `storyloom`
namespace they install as, and no module imports itself back; and no module grows past 600 lines.

Read from the source with `ast` (nothing is imported), so a wrong import fails here even when
no test happens to run the code path that has it. Imports under `if TYPE_CHECKING:` are left out:
they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("engine", "saves", "tui")
ALLOWED = {
    "engine": {"engine"},
    "saves": {"engine", "saves"},
    "tui": {"engine", "saves", "tui"},
}
"""Which of the project's parts each part may import."""
NEVER = {
    "engine": {"textual", "rich", "platformdirs"},
    "saves": {"textual", "rich", "anthropic", "httpx", "httpx_sse"},
}
"""Libraries a part must not import: the engine knows no screen and no files' places; saves no screen
and no network."""


def _modules() -> dict[str, Path]:
    found = {}
    for part in PARTS:
        for path in sorted((ROOT / part).rglob("*.py")):
            relative = path.relative_to(ROOT).with_suffix("")
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _project_name(name: str) -> str | None:
    """The project module an imported name means (`storyloom.engine.x`), or None for anything else."""
    head = name.split(".")[0]
    if head == "storyloom":
        name = name.partition(".")[2]
        head = name.split(".")[0]
    return name if head in PARTS else None


def _imports(path: Path) -> list[tuple[str, int]]:
    """(imported name, line) for every import that runs (not those under `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    out = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.append((full if _project_name(full) in MODULES else node.module, node.lineno))
    return out


@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_part_imports_only_what_it_may(module: str) -> None:
    part = module.split(".")[0]
    wrong = []
    for name, line in _imports(MODULES[module]):
        project = _project_name(name)
        if project is not None and project.split(".")[0] not in ALLOWED[part]:
            wrong.append(f"line {line}: {name}")
        if name.split(".")[0] in PARTS:  # works in the repository only: installed, it is storyloom.<part>
            wrong.append(f"line {line}: {name} (import it as storyloom.{name})")
        if name.split(".")[0] in NEVER.get(part, ()):
            wrong.append(f"line {line}: {name}")
    assert not wrong, f"{module} imports what {part}/ may not: {wrong}"


def test_no_module_imports_itself_back() -> None:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        targets = set()
        for name, _ in _imports(path):
            project = _project_name(name)
            while project is not None and project not in MODULES:
                project = project.rpartition(".")[0] or None
            if project is not None and project != module and not module.startswith(project + "."):
                targets.add(project)  # a package's own __init__ is not a cycle
        graph[module] = targets
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append(stack[stack.index(target) :] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in cycles)


FRONT = ("tui.screens", "tui.widgets")
"""The screens and widgets: they render events and send the player's intents to the `PlaySession`."""
INTENTS = {"play", "retry", "regenerate", "choose", "undo", "branch", "switch", "cancel", "restore"}
"""What changes a story: only the `PlaySession` may ask the engine's `Session` for these (it records first)."""


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(FRONT)))
def test_screens_never_hold_the_engines_session_nor_change_it_but_through_the_play_session(module: str) -> None:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    wrong = []
    for node in ast.walk(tree):  # under TYPE_CHECKING too: a screen is not even typed with the engine's Session
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("engine.lifecycle"):
            wrong += [f"line {node.lineno}: imports Session" for alias in node.names if alias.name == "Session"]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in INTENTS:
            target = ast.unparse(node.func.value)
            if target.endswith(("session", ".story")):
                wrong.append(f"line {node.lineno}: {target}.{node.func.attr}() (send it through the PlaySession)")
    assert not wrong, f"{module}: {wrong}"


def test_the_front_end_check_sees_what_it_forbids() -> None:
    """The check above reads calls and imports as written (so it cannot pass by looking at nothing)."""
    tree = ast.parse("from storyloom.engine.lifecycle import Session\nself.play.story.undo()\nself.play.undo()")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    assert [ast.unparse(c.func.value) for c in calls if c.func.attr in INTENTS] == ["self.play.story", "self.play"]
    assert any(m.startswith(FRONT) for m in MODULES)


MODULE_MAX_LINES = 600
"""A module the next person can read whole: past this, split it along a seam (issue 25)."""


def test_every_module_is_at_most_600_lines() -> None:
    long = {
        module: lines
        for module, path in MODULES.items()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_MAX_LINES
    }
    assert len(MODULES) > 50  # every part's modules were found (a wrong root would pass vacuously)
    assert not long, f"modules over {MODULE_MAX_LINES} lines (split along a seam): {long}"
