"""The frame-geometry plugin, as storyloom's tests have always imported it.

It is its own distribution now, `pytest-frame-geometry` (folder `pytest-frame-geometry/`, package
`pytest_frame_geometry`), usable by any Textual app's test suite; this module re-exports it.
"""

from pytest_frame_geometry import (
    SUPPORTED,
    Find,
    Frame,
    FrameBaselines,
    FrameRecorder,
    Line,
    RegionTuple,
    State,
    Target,
    assert_no_shift,
)

__all__ = [
    "SUPPORTED",
    "Find",
    "Frame",
    "FrameBaselines",
    "FrameRecorder",
    "Line",
    "RegionTuple",
    "State",
    "Target",
    "assert_no_shift",
]
