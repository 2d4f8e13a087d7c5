"""This project's own conftest: its frame baselines live beside its tests (the plugin is installed;
nothing else from the repository around it is used)."""

from pathlib import Path

import pytest


@pytest.fixture
def frame_baselines_dir() -> Path:
    return Path(__file__).parent / "baselines"
