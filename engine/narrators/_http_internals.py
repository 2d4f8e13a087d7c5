"""The one module that touches private parts of the HTTP libraries the narrators run on.

Two things here have no public API: pacing the socket reads of a streamed answer needs a network
backend on the connection pool httpx builds (httpcore takes one, httpx does not pass it through),
and the anthropic SDK does not say which httpx package it is built on (its own fork, httpx2,
since 2.x; httpx before). Each is guarded: if a later release builds its pool differently the
transport is returned unpaced, and the SDK's package is found from its default client's class,
falling back to httpx. tests/test_narrator_anthropic.py and test_recorded_streams.py run both.
"""

from __future__ import annotations

import importlib
import time
from types import ModuleType
from typing import Any


def sdk_http_package(client_class: type) -> ModuleType:
    """The httpx package an SDK's client class is built on (the anthropic SDK's
    `DefaultAsyncHttpxClient`: httpx2 in current releases, httpx before)."""
    bases = client_class.__mro__
    name = bases[1].__module__.partition(".")[0] if len(bases) > 1 else "httpx"
    return importlib.import_module(name if name in {"httpx", "httpx2"} else "httpx")


READ_INTERVAL = 1 / 100
"""Seconds: the least time between two reads of a model's streamed answer from its socket."""


def frame_paced_transport(package: str = "httpx") -> Any:
    """An httpx transport that reads a streamed answer from the socket at most once a frame.

    A model sends a token every few milliseconds, each its own server-sent event; read as
    they come, every token costs a wake-up and a trip through httpx, httpcore, h11 and
    anyio (about a fifth of the UI's CPU while a turn streams). Waiting until a frame's
    worth of time has passed since the last read lets the socket gather them, so one read
    brings every token the next frame will show. It adds at most one frame (16 ms) of lag.

    Args:
        package: "httpx", or the fork a client library uses ("httpx2" for the anthropic SDK).

    httpx takes no network backend, so this one is set on the pool it builds; if a later
    httpx builds its pool differently, the transport is returned as httpx made it.
    """
    transport = importlib.import_module(package).AsyncHTTPTransport()
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is not None:
        setattr(pool, "_network_backend", _PacedBackend(backend))  # noqa: B010 (a private attribute of httpcore)
    return transport


class _PacedBackend:
    """httpcore's network backend, its streams read at most once per `READ_INTERVAL`."""

    def __init__(self, inner: Any):
        self._inner = inner

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
        return _PacedStream(await self._inner.connect_tcp(*args, **kwargs), self._inner)

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
        return _PacedStream(await self._inner.connect_unix_socket(*args, **kwargs), self._inner)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _PacedStream:
    def __init__(self, inner: Any, backend: Any):
        self._inner = inner
        self._backend = backend
        self._last = 0.0

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        wait = self._last + READ_INTERVAL - time.monotonic()
        if wait > 0:
            await self._backend.sleep(wait)
        data: bytes = await self._inner.read(max_bytes, timeout)
        self._last = time.monotonic()
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, *args: Any, **kwargs: Any) -> Any:
        return _PacedStream(await self._inner.start_tls(*args, **kwargs), self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)
