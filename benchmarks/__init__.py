"""storyloom's performance figures, each measured beside a naive baseline in the same run.

These machines are shared and noisy: absolute times drift, ratios hold. Run all
of them with `python -m benchmarks` (see `benchmarks/__main__.py`); each module
has `run(quick: bool) -> Figure`.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

FIGURES: dict[int, str] = {
    1: "streaming",
    2: "correction",
    3: "journal",
    4: "startup",
    5: "memory",
    6: "replay",
    7: "validation",
    8: "scale",
    9: "latency",
}
"""Figure number -> module name under `benchmarks`."""


def figure_module(number: int) -> ModuleType:
    """The module that measures figure `number`."""
    return import_module(f"benchmarks.{FIGURES[number]}")
