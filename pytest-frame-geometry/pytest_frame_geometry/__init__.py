"""Frame geometry for Textual apps: record every frame an app paints and check that nothing jumps.

A pytest plugin (entry point `frame_geometry`) with the `frame_recorder` and `frame_baselines`
fixtures; the pure checks over recorded frames (`assert_no_shift`, `assert_calm`, and any further
check module beside them) are exported here. See docs/frame-geometry.md.

The names below are imported when first asked for: loading the plugin, which pytest does in every
run of an environment that has it installed, imports no Textual, so a suite that never uses the
fixtures pays nothing for them and a Textual whose modules moved cannot break its test runs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_frame_geometry._textual import SUPPORTED, unsupported
    from pytest_frame_geometry.baselines import FrameBaselines
    from pytest_frame_geometry.calm import (
        Sheet,
        Violation,
        assert_calm,
        calm_violations,
        count_by_rule,
        sheets_of,
    )
    from pytest_frame_geometry.lines import Line
    from pytest_frame_geometry.recorder import Find, Frame, FrameRecorder, RegionTuple, State, Target
    from pytest_frame_geometry.rules import assert_no_shift

_MODULE_OF = {
    "SUPPORTED": "_textual",
    "unsupported": "_textual",
    "FrameBaselines": "baselines",
    "Sheet": "calm",
    "Violation": "calm",
    "assert_calm": "calm",
    "calm_violations": "calm",
    "count_by_rule": "calm",
    "sheets_of": "calm",
    "Line": "lines",
    "Find": "recorder",
    "Frame": "recorder",
    "FrameRecorder": "recorder",
    "RegionTuple": "recorder",
    "State": "recorder",
    "Target": "recorder",
    "assert_no_shift": "rules",
}

__all__ = [
    "SUPPORTED",
    "Find",
    "Frame",
    "FrameBaselines",
    "FrameRecorder",
    "Line",
    "RegionTuple",
    "Sheet",
    "State",
    "Target",
    "Violation",
    "assert_calm",
    "assert_no_shift",
    "calm_violations",
    "count_by_rule",
    "sheets_of",
    "unsupported",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_frame_geometry' has no attribute {name!r}")
    value = getattr(import_module(f"pytest_frame_geometry.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
