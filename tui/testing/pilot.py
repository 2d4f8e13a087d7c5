"""Waiting for an app state in tests without timing: pump the app until a condition holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


async def until(pilot: Any, condition: Callable[[], bool], limit: int = 400) -> None:
    """Let the app process messages (`pilot.pause()`) until `condition()` is true.

    Raises:
        AssertionError: the condition still failed after `limit` rounds.
    """
    for _ in range(limit):
        if condition():
            return
        await pilot.pause()
    raise AssertionError("the app never reached the expected state")
