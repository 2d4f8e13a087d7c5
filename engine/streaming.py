"""How the engine reads a narrator's stream: one chunk at a time, in the turn's own task, stoppable.

A turn's reads stay in the task that plays it: an HTTP client's reads enter timeout scopes bound
to the task that entered them (httpcore through anyio), and they see a stop as a real cancel of
that task, not as an error thrown in by hand. A chunk that is ready at once (a replay, a network
read that brought several) is taken at once, with no task, wait or timer of its own; nothing is
read ahead, so a cancel lands after exactly the chunks the turn consumed.

Stopping is `asyncio.timeout`'s: a `Reader` holds one timeout scope for an attempt, unarmed. The
player's cancel or the attempt's deadline arms it (`reschedule` to now) only while the turn waits
on the narrator, so the task is cancelled there and nowhere else (never while the turn's events
are with the front end); otherwise the next read stops before it starts. Whatever the narrator
makes of the cancel (its own error, or nothing at all), the read ends `Cancelled` or `Expired`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from types import TracebackType
from typing import TypeVar

from storyloom.engine.narration import Chunk

LOOP_TURN_SECONDS = 0.01
"""A narrator that never waits (a replay at full speed) is read this long at most before the event
loop gets a turn, so a key pressed meanwhile still cancels mid-attempt."""
T = TypeVar("T")


class Stopped(Exception):
    """The read was stopped before the narrator finished."""


class Cancelled(Stopped):
    """The player cancelled the turn."""


class Expired(Stopped):
    """The attempt's deadline passed."""


class Reader:
    """One attempt's reads of a narrator, stopped by the player's `cancel` or after `seconds`.

    Use as `async with Reader(cancel, seconds) as reader:`, then `await reader.next(stream)` per
    chunk or `await reader.wait(awaitable)` for anything else; each raises `Cancelled` or
    `Expired` once stopped.
    """

    def __init__(self, cancel: asyncio.Future[None], seconds: float):
        self._cancel = cancel
        self._seconds = seconds
        self._loop = asyncio.get_running_loop()
        self._scope = asyncio.timeout(None)
        self._stopped: type[Stopped] | None = None
        self._waiting = False
        self._timer: asyncio.TimerHandle | None = None
        self._loop_turn = 0.0
        self._task_cancels = 0

    async def __aenter__(self) -> Reader:
        await self._scope.__aenter__()
        task = asyncio.current_task()
        assert task is not None  # the scope refuses to be entered outside a task
        self._task_cancels = task.cancelling()
        if self._cancel.done():
            self._stopped = Cancelled
        self._cancel.add_done_callback(self._on_cancel)
        if self._seconds != float("inf"):
            self._timer = self._loop.call_later(self._seconds, self._stop, Expired)
        self._loop_turn = self._loop.time() + LOOP_TURN_SECONDS
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._cancel.remove_done_callback(self._on_cancel)
        if self._timer is not None:
            self._timer.cancel()
        await self._scope.__aexit__(kind, error, trace)

    def _on_cancel(self, _: object) -> None:
        self._stop(Cancelled)

    def _stop(self, why: type[Stopped]) -> None:
        if self._stopped is None:
            self._stopped = why
            if self._waiting:  # the task waits on the narrator: cancel it there, as a timeout would
                self._scope.reschedule(self._loop.time())

    async def next(self, stream: AsyncIterator[Chunk]) -> Chunk | None:
        """The stream's next chunk, or None once it is over."""
        if self._loop.time() >= self._loop_turn:
            await asyncio.sleep(0)
            self._loop_turn = self._loop.time() + LOOP_TURN_SECONDS
        self._check()
        self._waiting = True
        try:
            chunk = await anext(stream)
        except StopAsyncIteration:
            chunk = None
        except BaseException as exc:
            reason = self._reason(exc)
            if reason is exc:
                raise
            raise reason from None
        finally:
            self._waiting = False
        if self._stopped is not None:
            self._finished_all_the_same()
        return chunk

    async def wait(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable` in this task unless the read is stopped first."""
        try:
            self._check()
        except Stopped:
            close = getattr(awaitable, "close", None)
            if close is not None:
                close()
            raise
        self._waiting = True
        try:
            result = await awaitable
        except BaseException as exc:
            reason = self._reason(exc)
            if reason is exc:
                raise
            raise reason from None
        finally:
            self._waiting = False
        if self._stopped is not None:
            self._finished_all_the_same()
        return result

    def _check(self) -> None:
        if self._stopped is None and self._cancel.done():  # its callback may not have run yet
            self._stopped = Cancelled
        if self._stopped is not None:
            raise self._stopped

    def _reason(self, exc: BaseException) -> BaseException:
        """What to raise for `exc`, which the awaited narrator ended with: the stop, if it was
        stopped (whatever it made of the cancel), else `exc` itself (a cancel from outside too)."""
        if self._stopped is None or isinstance(exc, GeneratorExit):
            return exc
        if isinstance(exc, asyncio.CancelledError) and (not self._scope.expired() or self._cancelled_from_outside()):
            return exc
        if not isinstance(exc, Exception | asyncio.CancelledError):
            return exc
        return self._stopped()

    def _finished_all_the_same(self) -> None:
        """The awaited narrator finished although the read was stopped: the scope's cancel, if it is
        still to come, is not wanted."""
        assert self._stopped is not None
        if not self._scope.expired():
            self._scope.reschedule(None)
        raise self._stopped

    def _cancelled_from_outside(self) -> bool:
        task = asyncio.current_task()
        return task is not None and task.cancelling() > self._task_cancels + 1
