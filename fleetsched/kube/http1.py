"""HTTP/1.1 on kept-alive connections, for the client's small JSON requests (writes, reads, Events).

A scheduler sends a few small requests per binding; with aiohttp each one cost several hundred
microseconds of Python around the bytes (URL and header objects, request and response objects,
timers, tracing hooks), more than the JSON it carried (``bench/kube_client.py`` measures both). This
sends one prebuilt request head plus the body on a pooled connection and reads the answer with a
small ``asyncio.Protocol``: the status line, the headers that frame the body (Content-Length,
Transfer-Encoding, Connection), Retry-After, and the body, plain or chunked. Nothing else is
interpreted. Watches keep aiohttp (``KubeClient.stream``): a stream is one long request, where
per-request cost does not matter.

Strict and bounded, because whatever answers is not trusted to be a well-behaved apiserver (a proxy,
a load balancer, a broken middlebox). An answer is refused with ``ProtocolError`` (a
``ConnectionError``, so every caller's retry path takes it), and its connection closed, when:

- its status line is not ``HTTP/1.x NNN`` with NNN in 100-599, or it is 101 (no upgrade is asked);
- it sends more than ``Limits.interim`` 1xx answers before the final one (a ``100 Continue`` flood);
- Content-Length is not a plain decimal, two of them differ, or it comes with Transfer-Encoding;
  a transfer coding other than one ``chunked`` (no other is asked for);
- a chunk-size line is not hex (with optional extensions) or longer than ``Limits.chunk_line``,
  or chunk data is not followed by CRLF;
- its head is over ``Limits.head``, or the answer as sent (framing included) over the request's
  ``max_body`` (``AnswerTooLarge``): 16 MiB for one object by default, five times the apiserver's
  own request limit of 3 MiB (``--max-request-bytes``; etcd holds 1.5 MiB objects), so a genuine
  object always fits; the client asks for more only for LIST pages (see ``client.py``);
- every connection's unfinished answers together hold over ``Limits.in_flight`` (256 MiB): with
  the scheduler's 32 workers, 32 hostile 16 MiB answers alone would be 512 MiB of a 1 GiB pod.

A request has one deadline (``timeout``, connecting included): a server dripping a byte a second
ends in ``TimeoutError`` like one that never answers. Connections: at most ``limit`` at once, idle
ones reused last-in first-out; one the server closed while idle is dropped before use, and one that
sends bytes nobody asked for is closed. A GET whose reused connection closes before any byte of the
answer is sent again once on a new one (as Go's transport does for idempotent requests); any other
failure raises, so callers retry as they decide. No I/O beyond the one server; no Kubernetes.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

MiB = 1024 * 1024

# The headers that frame a body (and Retry-After), found in the lower-cased head in one pass.
_FRAMING = re.compile(rb"\r\n(content-length|transfer-encoding|connection|retry-after)[ \t]*:[ \t]*([^\r]*)")
_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([1-5][0-9][0-9])(?: ([^\r\n]*))?")
_DIGITS = re.compile(rb"[0-9]{1,18}")
_COMPACT = 256 * 1024  # parsed chunk bytes kept in the buffer before they are dropped
_NO_BODY = bytearray()  # never written to: _parse_chunks appends to a bytearray of the answer's own
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})[ \t]*(?:;[^\r\n]*)?")


@dataclass(frozen=True, slots=True)
class Limits:
    """What one answer may use; see the module docstring for why each is what it is."""

    head: int = 64 * 1024  # status line and headers (of each 1xx answer too), and the trailers
    body: int = 16 * MiB  # the answer as sent, framing included; a request may ask for more
    interim: int = 8  # 1xx answers before the final one
    chunk_line: int = 1024  # one chunk-size line with its extensions
    in_flight: int = 256 * MiB  # every connection's unfinished answers together


# (protocol factory, host, port) -> the connected transport and protocol
Dial = Callable[[Callable[[], "_Connection"], str, int], Awaitable[tuple[Any, "_Connection"]]]


@dataclass(slots=True)
class Response:
    status: int
    reason: str
    body: bytes | bytearray
    retry_after: str | None = None


class ProtocolError(ConnectionError):
    """The answer broke HTTP/1.1 framing or one of the client's limits; its connection is closed."""


class AnswerTooLarge(ProtocolError):
    """The answer (or every answer in flight together) is over its size limit."""


class _Stale(ConnectionError):
    """The connection closed before any byte of the answer arrived."""


class _Budget:
    """Bytes held by unfinished answers over all of a pool's connections."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0


class _Connection(asyncio.Protocol):
    """One connection: at most one request in flight, its answer parsed as it arrives."""

    def __init__(self, limits: Limits | None = None, budget: _Budget | None = None, peer: str = "") -> None:
        self.limits = limits or Limits()
        self.budget = budget or _Budget(self.limits.in_flight)
        self.peer = peer
        self.transport: asyncio.Transport | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self.waiter: asyncio.Future[Response] | None = None
        self.max_body = self.limits.body
        self._buffer = bytearray()
        self._interim = 0
        self._held = 0  # bytes of the current answer counted in the budget
        self._reset()

    def _reset(self) -> None:
        self._head_done = False
        self._status = 0
        self._reason = ""
        self._retry_after: str | None = None
        self._length: int | None = None
        self._chunked = False
        self._body = _NO_BODY  # a bytearray of its own once an answer is chunked
        self._in_trailers = False
        self._cursor = 0  # where _parse_chunks goes on in the buffer
        self.keep_alive = True

    def expect(self, waiter: asyncio.Future[Response], max_body: int) -> None:
        """Wait for the answer to a request about to be written."""
        self.waiter = waiter
        self.max_body = max_body
        self._interim = 0

    # -- asyncio.Protocol ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's TLS transport is no subclass
        self.loop = asyncio.get_running_loop()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            detail = f": {exc}" if exc else ""
            if not self._buffer and not self._head_done and not self._held:
                waiter.set_exception(_Stale(f"{self.peer} closed the connection before an answer{detail}"))
            elif self._head_done and self._length is None and not self._chunked:
                # No framing header: the body ran until the close.
                self._finish(bytes(self._buffer))
            else:
                waiter.set_exception(ConnectionError(f"{self.peer} closed the connection mid-answer{detail}"))
        self._release()
        self._buffer.clear()
        self._body = _NO_BODY

    def data_received(self, data: bytes) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():
            # Bytes nobody asked for: the connection is out of step (or flooding); drop it.
            self._buffer.clear()
            self.close()
            return
        self._buffer += data
        self._held += len(data)
        self.budget.used += len(data)
        try:
            if self._held > self.max_body:
                raise AnswerTooLarge(f"answer over {_size(self.max_body)}")
            if self.budget.used > self.budget.limit:
                raise AnswerTooLarge(f"answers in flight over {_size(self.budget.limit)} together")
            self._parse()
        except (ProtocolError, ValueError) as exc:
            self.keep_alive = False
            if isinstance(exc, AnswerTooLarge):
                waiter.set_exception(AnswerTooLarge(f"refused HTTP answer from {self.peer}: {exc}"))
            else:
                waiter.set_exception(ProtocolError(f"malformed HTTP answer from {self.peer}: {exc}"))
            self._buffer.clear()
            self._body = _NO_BODY
            self._release()
            self.close()

    def _release(self) -> None:
        self.budget.used -= self._held
        self._held = 0

    # -- parsing -------------------------------------------------------------------------------

    def _parse(self) -> None:
        buffer = self._buffer
        while not self._head_done:
            end = buffer.find(b"\r\n\r\n", 0, self.limits.head + 4)
            if end < 0:
                if len(buffer) > self.limits.head:
                    raise ProtocolError(f"head over {_size(self.limits.head)}")
                return
            self._read_head(bytes(buffer[:end]))
            del buffer[: end + 4]
            if self._status >= 200:
                self._head_done = True
                break
            # 1xx: an interim answer, the real one follows
            self._interim += 1
            if self._interim > self.limits.interim:
                raise ProtocolError(f"more than {self.limits.interim} interim (1xx) answers")
            self._reset()
        if self._chunked:
            self._parse_chunks()
        elif self._length is not None and len(buffer) >= self._length:
            with memoryview(buffer) as view:
                body = bytes(view[: self._length])
            del buffer[: self._length]
            self._finish(body)

    def _read_head(self, head: bytes) -> None:
        status_line = head.partition(b"\r\n")[0]
        match = _STATUS_LINE.fullmatch(status_line)
        if match is None:
            raise ProtocolError(f"bad status line {status_line[:80]!r}")
        status = self._status = int(match[2])
        if status == 101:
            raise ProtocolError("101 Switching Protocols, and no upgrade was asked for")
        self._reason = (match[3] or b"").decode("latin-1")
        self.keep_alive = match[1] == b"1"
        length: int | None = None
        codings: list[bytes] = []
        for name, raw in _FRAMING.findall(head.lower()):
            value = raw.strip()
            if name == b"content-length":
                found = int(value) if value.isdigit() and len(value) <= 18 else _listed_length(value)
                if length is not None and found != length:
                    raise ProtocolError(f"conflicting Content-Length values {length} and {found}")
                length = found
            elif name == b"transfer-encoding":
                codings.extend(c.strip() for c in value.split(b","))
            elif name == b"retry-after":
                self._retry_after = value.decode("latin-1")
            else:
                text = value.decode("latin-1")
                self.keep_alive = text == "keep-alive" or (self.keep_alive and text != "close")
        if status < 200:
            return  # an interim answer has no body
        if codings:
            if length is not None:
                raise ProtocolError("both Content-Length and Transfer-Encoding")
            if codings != [b"chunked"]:
                raise ProtocolError(f"unsupported Transfer-Encoding {b', '.join(codings)[:60]!r}")
            self._chunked = True
            self._body = bytearray()
        elif length is not None:
            if length > self.max_body:
                raise AnswerTooLarge(f"Content-Length {length} over {_size(self.max_body)}")
            self._length = length
        if status == 204 or status == 304:
            self._length, self._chunked = 0, False
        if self._length is None and not self._chunked:
            self.keep_alive = False  # the body runs until the server closes

    def _parse_chunks(self) -> None:
        """From ``_cursor`` on; parsed bytes are dropped from the buffer at the end of the answer,
        or once they are over ``_COMPACT`` (dropping each chunk at once costs a copy of the rest)."""
        buffer = self._buffer
        limit = self.limits.chunk_line
        cursor = self._cursor
        chunk_size = _CHUNK_SIZE.fullmatch
        try:
            while True:
                if self._in_trailers:
                    if buffer.startswith(b"\r\n", cursor):
                        end = cursor + 2
                    else:
                        end = buffer.find(b"\r\n\r\n", cursor, cursor + self.limits.head + 4)
                        if end < 0:
                            if len(buffer) - cursor > self.limits.head:
                                raise ProtocolError(f"trailers over {_size(self.limits.head)}")
                            return
                        end += 4
                    del buffer[:end]
                    cursor = 0
                    self._finish(self._body)
                    return
                line_end = buffer.find(b"\r\n", cursor, cursor + limit + 2)
                if line_end < 0:
                    if len(buffer) - cursor > limit:
                        raise ProtocolError(f"chunk-size line over {limit} bytes")
                    return
                match = chunk_size(buffer, cursor, line_end)
                if match is None:
                    shown = bytes(buffer[cursor : min(line_end, cursor + 40)])
                    raise ProtocolError(f"bad chunk-size line {shown!r}")
                size = int(match[1], 16)
                if size == 0:
                    cursor = line_end + 2
                    self._in_trailers = True
                    continue
                if len(self._body) + size > self.max_body:
                    raise AnswerTooLarge(f"chunked body over {_size(self.max_body)}")
                data_start = line_end + 2
                data_end = data_start + size
                if len(buffer) < data_end + 2:
                    return
                if not buffer.startswith(b"\r\n", data_end):
                    raise ProtocolError("chunk data not followed by CRLF")
                with memoryview(buffer) as view:
                    self._body += view[data_start:data_end]
                cursor = data_end + 2
        finally:
            if cursor > _COMPACT:
                del buffer[:cursor]
                cursor = 0
            self._cursor = cursor

    def _finish(self, body: bytes | bytearray) -> None:
        response = Response(self._status, self._reason, body, self._retry_after)
        keep_alive = self.keep_alive
        self._release()
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


def _listed_length(value: bytes) -> int:
    """A Content-Length that is a list (``42, 42``): its one value, or ProtocolError."""
    found: set[int] = set()
    for item in value.split(b","):
        item = item.strip()
        if not _DIGITS.fullmatch(item):
            raise ProtocolError(f"bad Content-Length {value[:40]!r}")
        found.add(int(item))
    if len(found) > 1:
        raise ProtocolError(f"conflicting Content-Length values {' and '.join(map(str, sorted(found)))}")
    return found.pop()


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n % MiB == 0 else f"{n // 1024} KiB" if n % 1024 == 0 else f"{n} bytes"


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
        limits: Limits | None = None,
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
        self.limits = limits or Limits()
        self._budget = _Budget(self.limits.in_flight)
        self._peer = f"{self.host}:{self.port}"
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
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        content_type: str = "application/json",
        *,
        max_body: int | None = None,
    ) -> Response:
        """``target`` is the path with its query, already encoded; ``max_body`` overrides
        ``Limits.body`` for this answer (a LIST page)."""
        head = f"{method} {self.prefix}{target} HTTP/1.1\r\n{self._static}"
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        elif method in ("POST", "PUT", "PATCH"):
            head += "Content-Length: 0\r\n"
        data = (head + "\r\n").encode("latin-1")
        if body:
            data += body
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        async with self._slots:
            for attempt in range(2):
                connection, reused = await self._connection(deadline)
                try:
                    return await self._exchange(connection, data, deadline, max_body or self.limits.body)
                except _Stale:
                    if not (reused and attempt == 0 and method == "GET"):
                        raise
            raise AssertionError("unreachable")

    async def _connection(self, deadline: float) -> tuple[_Connection, bool]:
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable:
                return connection, True
            connection.close()
            self._open.discard(connection)
        loop = asyncio.get_running_loop()
        wait = min(self.connect_timeout, deadline - loop.time())

        def protocol_factory() -> _Connection:
            return _Connection(self.limits, self._budget, self._peer)

        opening = (
            self.dial(protocol_factory, self.host, self.port)
            if self.dial is not None
            else loop.create_connection(
                protocol_factory,
                self.host,
                self.port,
                ssl=self.ssl_context,
                server_hostname=self.host if self.ssl_context is not None else None,
            )
        )
        try:
            _, protocol = await asyncio.wait_for(opening, max(wait, 0))
        except TimeoutError:
            raise TimeoutError(f"connecting to {self._peer} timed out after {wait:.3g}s") from None
        self._open.add(protocol)
        return protocol, False

    async def _exchange(
        self, connection: _Connection, data: bytes, deadline: float, max_body: int
    ) -> Response:
        loop = connection.loop
        assert loop is not None
        waiter: asyncio.Future[Response] = loop.create_future()
        connection.expect(waiter, max_body)
        assert connection.transport is not None
        connection.transport.write(data)
        timer = loop.call_at(deadline, _expire, waiter, f"no complete answer from {self._peer} within "
                             f"{self.timeout:g}s")
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


def _expire(waiter: asyncio.Future[Response], message: str) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError(message))
