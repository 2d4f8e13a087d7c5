"""The frame-geometry plugin, as storyloom's tests have always imported it.

It is its own distribution now, `pytest-frame-geometry` (folder `pytest-frame-geometry/`, package
`pytest_frame_geometry`), usable by any Textual app's test suite; this module re-exports all of it.
A check module added to the package is exported here through the package's `__all__`.
"""

import pytest_frame_geometry
from pytest_frame_geometry import *  # noqa: F403

__all__ = list(pytest_frame_geometry.__all__)
