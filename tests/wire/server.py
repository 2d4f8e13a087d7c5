"""A scripted HTTP/1.1 server on 127.0.0.1, for testing narrators against real bytes.

Each request the server receives is recorded (method, path, headers, JSON body) and
answered with the next scripted `Reply`: a streamed event list (chunked transfer
encoding, as the real APIs send it), an error status, a reset connection, or a stream
that stalls until the client gives up. The server notes when a client closes a
connection it was still streaming to, so a test can measure how fast a cancel
reaches the wire.

With `rechunk=seed` every streamed body is delivered as a real network might deliver it:
a seeded random choice cuts events anywhere or joins several into one piece, and cuts on
purpose inside multi-byte UTF-8 characters and between a CR and its LF, pausing there longer
than the client's read pacing so the two halves arrive in separate reads. With `bytewise=True`
every byte of the body is a chunk of its own, which the client's HTTP reader hands on as its
own piece: every event, character and CRLF arrives a byte at a time.
"""

from __future__ import annotations

import json
import random
import re
import select
import socket
import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Received:
    """One request as the server read it."""

    method: str
    path: str
    headers: dict[str, str]
    raw_body: bytes

    @property
    def body(self) -> Any:
        return json.loads(self.raw_body)


@dataclass(frozen=True)
class Stream:
    """A 200 text/event-stream answer: `events` (raw SSE bytes) sent one chunk at a time.

    Attributes:
        delay: seconds between events (lets a test act mid-stream).
        then: "end" finishes the body; "stall" sends nothing more until the client leaves;
            "reset" aborts the connection (TCP RST) after the events.
    """

    events: Sequence[bytes]
    delay: float = 0.0
    then: str = "end"


@dataclass(frozen=True)
class Status:
    """A complete non-streamed answer, usually an error."""

    code: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Silent:
    """Read the request, then answer nothing at all (not even headers) until the client leaves."""


@dataclass(frozen=True)
class Reset:
    """Abort the connection as soon as the request is read, before any answer."""


Reply = Stream | Status | Silent | Reset
_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    413: "Payload Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
    529: "Site Overloaded",
}


class WireServer:
    """Serve scripted replies on 127.0.0.1 (a free port), one thread per connection.

    Use as a context manager; `url` is the base address, `requests` what was received,
    `closed_at` the monotonic times at which clients dropped a stream mid-way.
    """

    def __init__(self, replies: Sequence[Reply] = (), *, rechunk: int | None = None, bytewise: bool = False):
        self.rechunk = rechunk
        """The seed of the re-chunking mode (see the module docstring), or None to send one event per chunk."""
        self.bytewise = bytewise
        """Send every byte of a streamed body as its own chunk (see the module docstring)."""
        self.replies: list[Reply] = list(replies)
        self.requests: list[Received] = []
        self.closed_at: list[float] = []
        self.streams_started = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def __enter__(self) -> WireServer:
        thread = threading.Thread(target=self._accept, name="wire-accept", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in list(self._threads):
            thread.join(timeout=2)
        self._listener.close()

    def wait_closed(self, timeout: float = 2.0) -> float | None:
        """The time a client dropped a stream, waiting up to `timeout` for it to happen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.closed_at:
                return self.closed_at[0]
            time.sleep(0.002)
        return None

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), name="wire-conn", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.05)
        buffer = b""
        try:
            while not self._stop.is_set():
                request, buffer = self._read_request(conn, buffer)
                if request is None:
                    return
                with self._lock:
                    self.requests.append(request)
                    reply = self.replies.pop(0) if self.replies else Status(500, {"error": "no reply scripted"})
                if not self._answer(conn, reply):
                    return
        except OSError:
            return
        finally:
            conn.close()

    def _read_request(self, conn: socket.socket, buffer: bytes) -> tuple[Received | None, bytes]:
        while b"\r\n\r\n" not in buffer:
            chunk = self._recv(conn)
            if chunk is None:
                return None, b""
            buffer += chunk
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(buffer) < length:
            chunk = self._recv(conn)
            if chunk is None:
                return None, b""
            buffer += chunk
        return Received(method, path, headers, buffer[:length]), buffer[length:]

    def _recv(self, conn: socket.socket) -> bytes | None:
        """Bytes from the client, or None once it has closed (or the server stops)."""
        while not self._stop.is_set():
            try:
                data = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return None
            return data or None
        return None

    def _answer(self, conn: socket.socket, reply: Reply) -> bool:
        """Send one reply; False when the connection is finished with."""
        if isinstance(reply, Reset):
            _reset(conn)
            return False
        if isinstance(reply, Silent):
            self._client_left(conn, 30.0)
            return False
        if isinstance(reply, Status):
            body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            headers = {"content-type": "application/json", "content-length": str(len(body)), **reply.headers}
            conn.sendall(_head(reply.code, headers) + body)
            return True
        conn.sendall(
            _head(
                200,
                {
                    "content-type": "text/event-stream; charset=utf-8",
                    "cache-control": "no-cache",
                    "transfer-encoding": "chunked",
                },
            )
        )
        self.streams_started.set()
        if self.bytewise:
            body = b"".join(reply.events)
            pieces = [(0.0, body[at : at + 1]) for at in range(len(body))]
        elif self.rechunk is None:
            pieces = [(reply.delay if index else 0.0, event) for index, event in enumerate(reply.events)]
        else:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each piece its own segment
            pieces = rechunked(b"".join(reply.events), random.Random(self.rechunk))
        for wait, piece in pieces:
            if wait and self._client_left(conn, wait):
                return False
            try:
                conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            except OSError:
                self.closed_at.append(time.monotonic())
                return False
        if reply.then == "reset":
            _reset(conn)
            return False
        if reply.then == "stall":
            self._client_left(conn, 30.0)
            return False
        conn.sendall(b"0\r\n\r\n")
        return True

    def _client_left(self, conn: socket.socket, seconds: float) -> bool:
        """Wait up to `seconds`; True (and the time noted) if the client closed meanwhile."""
        deadline = time.monotonic() + seconds
        while not self._stop.is_set() and time.monotonic() < deadline:
            readable, _, _ = select.select([conn], [], [], 0.002)
            if readable:
                try:
                    data = conn.recv(65536, socket.MSG_PEEK)
                except OSError:
                    data = b""
                if not data:
                    self.closed_at.append(time.monotonic())
                    return True
                time.sleep(0.002)  # a pipelined request; not expected while streaming
        return False


PACED_PAUSE = (0.015, 0.03)
"""Seconds of a pause at a deliberate cut: longer than the client's least time between reads (10 ms)."""
MAX_PACED_PAUSES = 8
"""Deliberate pauses per stream, so that a long recording does not slow the suite down."""


def rechunked(body: bytes, rng: random.Random) -> list[tuple[float, bytes]]:
    """The body in pieces, each with the wait before it is sent: the re-chunking mode.

    Each event (up to its blank line) ends its piece or, one time in three, is joined to the
    next; up to three random cuts fall inside it; and about half the places where a cut splits
    a UTF-8 character (before a continuation byte) or a CRLF (between CR and LF) are cut, with a
    pause longer than the client's read pacing before the second half, up to `MAX_PACED_PAUSES`.
    Joined again, the pieces are the body byte for byte.
    """
    cuts: dict[int, float] = {}
    start = 0
    for end in [*(m.end() for m in _EVENT_END.finditer(body)), len(body)]:
        if end <= start:
            continue
        for _ in range(rng.randrange(4)):
            cuts.setdefault(rng.randrange(start, end) or 1, 0.0)
        if rng.random() >= 1 / 3:
            cuts.setdefault(end, 0.0)
        start = end
    paced = 0
    for at in range(1, len(body)):
        splits = 0x80 <= body[at] < 0xC0 or body[at - 1 : at + 1] == b"\r\n"
        if splits and paced < MAX_PACED_PAUSES and rng.random() < 0.5:
            cuts[at] = rng.uniform(*PACED_PAUSE)
            paced += 1
    pieces: list[tuple[float, bytes]] = []
    last, wait = 0, 0.0
    for at in sorted(cut for cut in cuts if 0 < cut < len(body)):
        pieces.append((wait, body[last:at]))
        last, wait = at, cuts[at]
    pieces.append((wait, body[last:]))
    return [(w, piece) for w, piece in pieces if piece]


_EVENT_END = re.compile(rb"\r\n\r\n|\n\n")


def _head(code: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {code} {_REASONS.get(code, 'Status')}", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _reset(conn: socket.socket) -> None:
    """Close with SO_LINGER 0, so the client sees a connection reset, not a clean end."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()
