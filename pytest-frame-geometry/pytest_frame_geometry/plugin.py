"""The pytest plugin (entry point `frame_geometry`): the `frame_recorder` and `frame_baselines` fixtures.

Loading it never fails and changes nothing for tests that do not use its fixtures: it imports no
Textual (the recorder is imported by the first test that asks for `frame_recorder`). On a Textual
outside the tested range its fixtures skip the test, with a reason that names the range.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_frame_geometry import _textual
from pytest_frame_geometry.baselines import UPDATE_ENV, FrameBaselines

if TYPE_CHECKING:  # the recorder imports Textual: only a test that asks for `frame_recorder` loads it
    from pytest_frame_geometry.recorder import FrameRecorder, Target


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("frame-geometry")
    group.addoption(
        "--frames-update",
        action="store_true",
        default=False,
        help=f"rewrite frame-geometry baselines instead of comparing (or set {UPDATE_ENV}=1)",
    )
    parser.addini(
        "frame_baselines",
        "directory of frame-geometry JSON baselines, relative to the rootdir",
        default="snapshots/frames",
    )


def _skip_unless_supported() -> None:
    reason = _textual.unsupported()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture
def frame_baselines_dir(request: pytest.FixtureRequest) -> Path:
    """Where `frame_baselines` reads and writes: the ini option `frame_baselines` under the rootdir.

    Override it in a conftest to keep a folder's baselines beside its tests.
    """
    config = request.config
    return Path(config.rootpath) / str(config.getini("frame_baselines"))


@pytest.fixture
def frame_baselines(request: pytest.FixtureRequest, frame_baselines_dir: Path) -> FrameBaselines:
    """The project's frame baselines: `frame_baselines.check(name, data)`."""
    _skip_unless_supported()
    update = bool(request.config.getoption("--frames-update")) or os.environ.get(UPDATE_ENV, "") not in ("", "0")
    return FrameBaselines(frame_baselines_dir, update)


@pytest.fixture
def frame_recorder() -> Iterator[Callable[..., FrameRecorder]]:
    """A factory: `frame_recorder(app, regions={...}, texts={...}, screen=False)` starts recording that app's frames.

    Call it inside `async with app.run_test()`; every recorder it made stops at the end of the test.
    """
    _skip_unless_supported()
    from pytest_frame_geometry.recorder import FrameRecorder

    recorders: list[FrameRecorder] = []

    def make(
        app: Any,
        *,
        regions: Mapping[str, Target] | None = None,
        texts: Mapping[str, Target] | None = None,
        screen: bool = False,
        press_marks: bool = True,
    ) -> FrameRecorder:
        recorder = FrameRecorder(app, dict(regions or {}), dict(texts or {}), screen=screen, press_marks=press_marks)
        recorders.append(recorder.start())
        return recorder

    yield make
    for recorder in recorders:
        recorder.stop()
