"""HTTP/1.1 on kept-alive connections, for the client's small JSON requests (writes, reads, Events).

A scheduler sends a few small requests per binding; with aiohttp each one cost several hundred
microseconds of Python around the bytes (URL and header objects, request and response objects,
timers, tracing hooks), more than the JSON it carried. This sends one prebuilt request head plus
the body on a pooled connection and reads the answer with a small ``asyncio.Protocol``:
the status line, the three headers that frame the body (Content-Length, Transfer-Encoding,
Connection) and the body, plain or chunked. Nothing else is interpreted. Watches keep aiohttp
(``KubeClient.stream``): a stream is one long request, where per-request cost does not matter.

Connections: at most ``limit`` at once, idle ones reused last-in first-out; one the server closed
while idle is dropped before use. A GET whose reused connection closes before any byte of the
answer is sent again once on a new one (as Go's transport does for idempotent requests); any
other connection failure raises ``ConnectionError`` and a request past ``timeout`` raises
``TimeoutError``, so callers retry as they decide. No I/O beyond the one server; no Kubernetes.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024
# The headers that frame a body, found in the lower-cased head in one pass.
_FRAMING = re.compile(rb"\r\n(content-length|transfer-encoding|connection)[ \t]*:[ \t]*([^\r]*)")


# (protocol factory, host, port) -> the connected transport and protocol
Dial = Callable[[Callable[[], "_Connection"], str, int], Awaitable[tuple[Any, "_Connection"]]]


@dataclass(slots=True)
class Response:
    status: int
    reason: str
    body: bytes


class _Stale(ConnectionError):
    """The connection closed before any byte of the answer arrived."""


class _Connection(asyncio.Protocol):
    """One connection: at most one request in flight, its answer parsed as it arrives."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self.waiter: asyncio.Future[Response] | None = None
        self._buffer = bytearray()
        self._reset()

    def _reset(self) -> None:
        self._head_end = -1
        self._status = 0
        self._reason = ""
        self._length: int | None = None
        self._chunked = False
        self._cursor = 0
        self._parts: list[bytes] = []
        self.keep_alive = True

    # -- asyncio.Protocol ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's TLS transport is no subclass
        self.loop = asyncio.get_running_loop()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            detail = f": {exc}" if exc else ""
            if not self._buffer and self._head_end < 0:
                waiter.set_exception(_Stale(f"connection closed before an answer{detail}"))
            elif self._length is None and not self._chunked and self._head_end >= 0:
                # No framing header: the body ran until the close.
                self._finish(bytes(self._buffer[self._head_end :]), len(self._buffer))
            else:
                waiter.set_exception(ConnectionError(f"connection closed mid-answer{detail}"))

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        waiter = self.waiter
        if waiter is None or waiter.done():
            return  # nothing asked: the connection is not reused (see ``reusable``)
        try:
            self._parse()
        except ValueError as exc:
            self.keep_alive = False
            waiter.set_exception(ConnectionError(f"malformed HTTP answer: {exc}"))

    # -- parsing -------------------------------------------------------------------------------

    def _parse(self) -> None:
        buffer = self._buffer
        if self._head_end < 0:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > MAX_HEAD:
                    raise ValueError("header too long")
                return
            self._head_end = end + 4
            self._read_head(bytes(buffer[:end]))
            if self._status < 200:  # 1xx: an interim answer, the real one follows
                del buffer[: self._head_end]
                self._reset()
                self._parse()
                return
            self._cursor = self._head_end
        if self._chunked:
            self._parse_chunks()
        elif self._length is not None:
            end = self._head_end + self._length
            if len(buffer) >= end:
                self._finish(bytes(buffer[self._head_end : end]), end)

    def _read_head(self, head: bytes) -> None:
        status_line = head.partition(b"\r\n")[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise ValueError(f"bad status line {status_line[:80]!r}")
        self._status = int(parts[1])
        self._reason = parts[2] if len(parts) > 2 else ""
        self.keep_alive = parts[0] == "HTTP/1.1"
        for name, raw in _FRAMING.findall(head.lower()):
            value = raw.strip().decode("latin-1")
            if name == b"content-length":
                self._length = int(value)
            elif name == b"transfer-encoding":
                self._chunked = "chunked" in value
            else:
                self.keep_alive = value == "keep-alive" or (self.keep_alive and value != "close")
        if self._chunked:
            self._length = None
        elif self._status in (204, 304):
            self._length = 0
        if self._length is None and not self._chunked:
            self.keep_alive = False  # the body runs until the server closes

    def _parse_chunks(self) -> None:
        buffer = self._buffer
        while True:
            line_end = buffer.find(b"\r\n", self._cursor)
            if line_end < 0:
                return
            size = int(bytes(buffer[self._cursor : line_end]).split(b";", 1)[0].strip() or b"0", 16)
            data_start = line_end + 2
            if size == 0:
                if buffer[data_start : data_start + 2] == b"\r\n":
                    end = data_start + 2
                else:  # trailers
                    trailer_end = buffer.find(b"\r\n\r\n", data_start)
                    if trailer_end < 0:
                        return
                    end = trailer_end + 4
                self._finish(b"".join(self._parts), end)
                return
            if len(buffer) < data_start + size + 2:
                return
            self._parts.append(bytes(buffer[data_start : data_start + size]))
            self._cursor = data_start + size + 2

    def _finish(self, body: bytes, end: int) -> None:
        response = Response(self._status, self._reason, body)
        keep_alive = self.keep_alive
        del self._buffer[:end]
        self._reset()
        self.keep_alive = keep_alive
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(response)

    @property
    def reusable(self) -> bool:
        return (
            self.keep_alive
            and not self.closed
            and not self._buffer
            and self.transport is not None
            and not self.transport.is_closing()
        )

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class Http1Pool:
    """Requests to one server (``https://host:port[/prefix]``); see the module docstring."""

    def __init__(
        self,
        server: str,
        *,
        ssl_context: ssl.SSLContext | None,
        headers: dict[str, str],
        limit: int = 100,
        timeout: float = 60.0,
        connect_timeout: float = 10.0,
        dial: Dial | None = None,
    ) -> None:
        """``dial(protocol_factory, host, port)`` opens a connection instead of the loop's
        ``create_connection`` with ``ssl_context`` (the credentials' dialer: proxy, TLS server name)."""
        url = urlsplit(server)
        self.dial = dial
        self.host = url.hostname or "localhost"
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.ssl_context = ssl_context if url.scheme == "https" else None
        self.prefix = url.path.rstrip("/")
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._headers = {"Host": url.netloc.rpartition("@")[2], **headers}
        self._static = "".join(f"{k}: {v}\r\n" for k, v in self._headers.items())
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(limit)
        self._open: set[_Connection] = set()

    def set_header(self, name: str, value: str | None) -> None:
        """Send ``name: value`` with every request from now on (None: no longer send it)."""
        if value is None:
            self._headers.pop(name, None)
        else:
            self._headers[name] = value
        self._static = "".join(f"{k}: {v}\r\n" for k, v in self._headers.items())

    def drop_idle(self) -> None:
        """Close the idle connections (their TLS setup is out of date); busy ones finish their request."""
        for connection in self._idle:
            connection.close()
            self._open.discard(connection)
        self._idle.clear()

    async def request(
        self, method: str, target: str, body: bytes | None = None, content_type: str = "application/json"
    ) -> Response:
        """``target`` is the path with its query, already encoded."""
        head = f"{method} {self.prefix}{target} HTTP/1.1\r\n{self._static}"
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        elif method in ("POST", "PUT", "PATCH"):
            head += "Content-Length: 0\r\n"
        data = (head + "\r\n").encode("latin-1")
        if body:
            data += body
        async with self._slots:
            for attempt in range(2):
                connection, reused = await self._connection()
                try:
                    return await self._exchange(connection, data)
                except _Stale:
                    if not (reused and attempt == 0 and method == "GET"):
                        raise
            raise AssertionError("unreachable")

    async def _connection(self) -> tuple[_Connection, bool]:
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable:
                return connection, True
            connection.close()
            self._open.discard(connection)
        loop = asyncio.get_running_loop()
        opening = (
            self.dial(_Connection, self.host, self.port)
            if self.dial is not None
            else loop.create_connection(
                _Connection,
                self.host,
                self.port,
                ssl=self.ssl_context,
                server_hostname=self.host if self.ssl_context is not None else None,
            )
        )
        try:
            _, protocol = await asyncio.wait_for(opening, self.connect_timeout)
        except TimeoutError:
            raise TimeoutError(f"connecting to {self.host}:{self.port} timed out") from None
        self._open.add(protocol)
        return protocol, False

    async def _exchange(self, connection: _Connection, data: bytes) -> Response:
        loop = connection.loop
        assert loop is not None
        waiter: asyncio.Future[Response] = loop.create_future()
        connection.waiter = waiter
        assert connection.transport is not None
        connection.transport.write(data)
        timer = loop.call_later(self.timeout, _expire, waiter, self.timeout)
        try:
            response = await waiter
        except BaseException:
            connection.close()  # its state is unknown now (an error, a timeout, a cancellation)
            self._open.discard(connection)
            raise
        finally:
            timer.cancel()
        if connection.reusable:
            self._idle.append(connection)
        else:
            connection.close()
            self._open.discard(connection)
        return response

    async def close(self) -> None:
        for connection in list(self._open):
            connection.close()
        self._open.clear()
        self._idle.clear()


def _expire(waiter: asyncio.Future[Response], timeout: float) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError(f"no answer within {timeout:g}s"))
