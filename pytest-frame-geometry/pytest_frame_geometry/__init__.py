"""Frame geometry for Textual apps: record every frame an app paints and check that nothing jumps.

A pytest plugin (entry point `frame_geometry`) with the `frame_recorder` and `frame_baselines`
fixtures; the pure checks over recorded frames (`assert_no_shift`, and any further check module
beside it) are exported here. See docs/frame-geometry.md.
"""

from pytest_frame_geometry._textual import SUPPORTED, unsupported
from pytest_frame_geometry.baselines import FrameBaselines
from pytest_frame_geometry.calm import Sheet, Violation, assert_calm, calm_violations, count_by_rule, sheets_of
from pytest_frame_geometry.lines import Line
from pytest_frame_geometry.recorder import Find, Frame, FrameRecorder, RegionTuple, State, Target
from pytest_frame_geometry.rules import assert_no_shift

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
