"""The HTTPS edge of the webhook: aiohttp routes around ``review.handle``.

Decode, call one pure function, encode: every admission path reads the body (bounded), passes
it to ``review.handle`` and writes the AdmissionReview it returns with HTTP 200, as
controller-runtime does (the outcome, including errors, is in ``response.status``). Health and
Prometheus metrics are served here too. The serving certificate is re-read when its files
change, so a rotated Secret needs no restart.

A peer cannot hold the server's memory, its connections or its capacity (``Limits``):

- the TLS handshake and the request headers must arrive within ``header_timeout``, the body within
  ``body_timeout``; a body over 7 MiB is refused from its Content-Length, unread;
- a body still arriving ``SLOT_GRACE`` (0.1 s) after its headers holds a *reading* slot, never a
  processing one (the API server's arrives within the grace, so no number of slow clients, even
  from its own address, can keep it out): at most ``max_reading`` bodies arrive at once, at most
  ``max_reading_per_client`` of them from one client address. When a body needs a slot and finds
  none, the body that has been arriving longest (from the client with the most bodies arriving,
  or, past the per-client limit, from the same client) gives its slot up if it is older than
  ``evict_after``: it is answered 408 and closed. Only when every slot is held by a younger body
  is the request refused (429);
- a request whose body has arrived takes one of ``max_in_flight`` processing slots, and of those at
  most ``max_large_in_flight`` for a body over ``LARGE_BODY_BYTES`` (held from the headers: those
  are decoded on their own threads, so small reviews keep being answered on the event loop
  meanwhile; a large request waits up to ``large_wait`` for one, and an older large body still
  arriving gives its slot up as above);
- ``/readyz`` fails (503, with the reason) once requests have been refused for capacity and no slot
  has been freed for ``saturation_window``; it is ready again as soon as one is. ``/healthz`` is
  not affected: a saturated server needs its traffic spread, not a restart.

- open connections are counted from the TCP accept, before the TLS handshake: at most
  ``max_connections`` in all and ``max_connections_per_client`` from one client address. A
  connection past either is closed at once, before any TLS work, unless another can give way. Past
  the total, a client holding more connections than the newcomer's gives its oldest one not
  answering a request up (fair shares: a client with few connections, as the API server's, always
  gets in, however many addresses the others come from); failing that, and past the per-client
  limit, the oldest connection (of the same client, or of the client with the most) that is older
  than ``evict_after`` and not answering a request does. A request being read or answered is never
  closed for a newcomer; the reading and in-flight limits above bound those. Each connection's TLS read
  buffer is ``TLS_READ_BUFFER`` (32 KiB; asyncio's is 256 KiB, allocated and zeroed per connection),
  so the connection limit bounds the memory held by peers (docs/webhook.md, "Limits").

A request past a limit is answered at once with a 429 AdmissionReview. Every request that ends
early is one ``admission_aborted`` JSON log line with its reason, never a traceback.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import ctypes.util
import json
import os
import ssl
import time
from asyncio import sslproto
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import prometheus_client
import structlog
from aiohttp import web, web_protocol

from fleetsched import buildinfo
from fleetsched.webhook import budget, conversion, review

__all__ = ["LARGE_BODY_BYTES", "Limits", "Metrics", "ServerConfig", "build_app", "build_probe_app",
           "serve_https", "ssl_context", "tune_allocator", "watch_certificate"]

log = structlog.get_logger("fleetsched.webhook")

# A body over this is "large": read and decoded under the large-request limit, on its own thread.
LARGE_BODY_BYTES = 256 * 1024
# Idle keep-alive connections are closed after this; longer than Go's http.Transport default
# (IdleConnTimeout 90 s) so the API server, not the webhook, closes an idle connection first.
IDLE_TIMEOUT = 120.0
_READ_CHUNK = 64 * 1024
# A body has this long from its headers to arrive before it needs a reading slot: the API server's
# arrives within it (with its headers, or a few writes later), so no number of slow clients, even
# from its own address, can keep a review out. Bodies in their grace are not counted; each holds
# at most 256 KiB (a larger one holds a large-request slot from its headers).
SLOT_GRACE = 0.1
# After an early answer (413, 408, 429) the rest of the body is read and dropped for at most this
# long, so the client can read the answer before the connection closes (aiohttp's default is 10 s
# spent decrypting a body nobody wants; with much less, a client still sending gets a reset).
LINGER = 1.0
# Bytes read from a TLS connection at a time (asyncio's SSLProtocol allocates and zeroes 256 KiB per
# connection, which made N slow clients cost N x 256 KiB before any limit applied). A TLS record is at
# most 16 KiB, so reads stay whole records.
TLS_READ_BUFFER = 32 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    """What one peer may cost the server (flags of ``fleetsched webhook``)."""

    header_timeout: float = 5.0  # TLS handshake + request line and headers
    body_timeout: float = 10.0  # the whole body, from the end of the headers
    max_in_flight: int = 64  # admission requests being answered (their body has arrived)
    max_large_in_flight: int = 2  # requests with a body over LARGE_BODY_BYTES, headers to answer
    large_wait: float = 1.0  # how long a large request waits for a slot before a 429
    max_reading: int = 128  # request bodies being received at once
    max_reading_per_client: int = 64  # of those, from one client address
    evict_after: float = 1.0  # a body arriving for longer gives its slot to a new request
    saturation_window: float = 5.0  # refusing with no slot freed this long: /readyz fails
    max_connections: int = 256  # open connections, counted from the TCP accept (before TLS)
    max_connections_per_client: int = 192  # of those, from one client address

TLS_VERSIONS = {
    "1.0": ssl.TLSVersion.TLSv1,
    "1.1": ssl.TLSVersion.TLSv1_1,
    "1.2": ssl.TLSVersion.TLSv1_2,
    "1.3": ssl.TLSVersion.TLSv1_3,
}


@dataclass(frozen=True, slots=True)
class ServerConfig:
    cert_file: Path
    key_file: Path
    tls_min_version: str = "1.3"
    settings: review.Settings = field(default_factory=review.Settings)
    limits: Limits = field(default_factory=Limits)
    client_ca_file: Path | None = None  # when set, a client certificate signed by it is required


class Metrics:
    """controller-runtime's webhook metric names, so existing dashboards keep working."""

    def __init__(self, registry: prometheus_client.CollectorRegistry | None = None) -> None:
        self.registry = registry or prometheus_client.CollectorRegistry()
        self.requests = prometheus_client.Counter(
            "controller_runtime_webhook_requests_total", "Admission requests by webhook path and code.",
            ["webhook", "code"], registry=self.registry)
        self.latency = prometheus_client.Histogram(
            "controller_runtime_webhook_latency_seconds", "Time to answer an admission request.",
            ["webhook"], registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5))
        self.in_flight = prometheus_client.Gauge(
            "controller_runtime_webhook_requests_in_flight", "Admission requests being answered.",
            ["webhook"], registry=self.registry)
        self.decisions = prometheus_client.Counter(
            "fleetsched_webhook_admission_decisions_total", "Admission answers by path and decision.",
            ["webhook", "allowed"], registry=self.registry)
        self.aborted = prometheus_client.Counter(
            "fleetsched_webhook_requests_aborted_total",
            "Requests ended before a review: timeouts, disconnects, oversized bodies, limits.",
            ["reason"], registry=self.registry)
        buildinfo.register(self.registry)

    def render(self) -> bytes:
        return prometheus_client.generate_latest(self.registry)


def ssl_context(config: ServerConfig) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = TLS_VERSIONS[config.tls_min_version]
    try:
        context.load_cert_chain(str(config.cert_file), str(config.key_file))
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"serving certificate {config.cert_file} / {config.key_file}: "
                         f"{exc.strerror or exc}") from None
    if config.client_ca_file is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        try:
            context.load_verify_locations(cafile=str(config.client_ca_file))
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"--client-ca-file {config.client_ca_file}: {exc.strerror or exc}") from None
    return context


async def watch_certificate(context: ssl.SSLContext, config: ServerConfig, *, interval: float = 10.0) -> None:
    """Reload the key pair into the live context when either file changes."""

    def stamp() -> tuple[float, float]:
        return (os.stat(config.cert_file).st_mtime, os.stat(config.key_file).st_mtime)

    last = stamp()
    while True:
        await asyncio.sleep(interval)
        try:
            current = stamp()
            if current != last:
                context.load_cert_chain(str(config.cert_file), str(config.key_file))
                last = current
                log.info("serving_certificate_reloaded", cert=str(config.cert_file))
        except (OSError, ssl.SSLError) as exc:
            log.warning("serving_certificate_reload_failed", error=str(exc))


class _Aborted(Exception):
    """A request that ends before it can be reviewed; ``reason`` is the log and metric label."""

    def __init__(self, reason: str, message: str, *, code: int = 400, close: bool = True,
                 size: int = 0, head: bytes = b"") -> None:
        super().__init__(message)
        self.reason = reason
        self.code = code
        self.close = close
        self.size = size  # body bytes read before the end
        self.head = head  # the first bytes of a body read whole, for its uid


def _abort_log(reason: str, request: web.Request | None, metrics: Metrics, **fields: Any) -> None:
    metrics.aborted.labels(reason).inc()
    if request is not None:
        fields.setdefault("path", request.path)
        peer = request.transport.get_extra_info("peername") if request.transport is not None else None
        if peer:
            fields.setdefault("peer", f"{peer[0]}:{peer[1]}")
    log.warning("admission_aborted", reason=reason, **fields)


async def _read_body(request: web.Request, deadline: float,
                     take_slot: Callable[[], _Reader] | None = None) -> bytearray:
    """The body, at most ``MAX_REQUEST_BYTES``, by ``deadline`` (loop time); raises ``_Aborted``.

    With ``take_slot``, the body has ``SLOT_GRACE`` to arrive without a reading slot (a fast
    client's always does); one still arriving then calls it for a slot (which may refuse with
    ``_Aborted``) and goes on under it, and ends when that slot is evicted (its timeout moved to now).

    With a Content-Length the buffer is allocated once at its final size (growing it would copy,
    holding two buffers for a moment)."""
    loop = asyncio.get_running_loop()
    length = request.content_length
    body = bytearray(length or 0)
    size = 0
    reader: _Reader | None = None

    async def fill() -> None:
        nonlocal body, size
        if length is not None:
            with memoryview(body) as view:
                while size < length:
                    chunk = await request.content.read(min(_READ_CHUNK, length - size))
                    if not chunk:
                        break
                    view[size:size + len(chunk)] = chunk
                    size += len(chunk)
            if size < length:
                raise _Aborted("client_disconnected", f"the body ended after {size} of {length} bytes",
                               size=size)
        else:
            while chunk := await request.content.read(_READ_CHUNK):
                body += chunk
                size = len(body)
                if size > review.MAX_REQUEST_BYTES:
                    raise _Aborted("body_too_large", f"request entity is too large; limit is "
                                   f"{review.MAX_REQUEST_BYTES} bytes", code=413, size=size)

    phase_end = deadline if take_slot is None else min(deadline, loop.time() + SLOT_GRACE)
    try:
        while True:
            try:
                async with asyncio.timeout_at(phase_end) as timeout:
                    if reader is not None:
                        reader.timeout = timeout
                    await fill()
                break
            except TimeoutError:
                if take_slot is None or reader is not None or phase_end >= deadline:
                    raise
                try:
                    reader = take_slot()  # still arriving after the grace: from now on under a slot
                except _Aborted as exc:
                    exc.size, exc.head = size, bytes(body[:min(size, 4096)])  # for its uid
                    raise
                phase_end = deadline
    except TimeoutError:
        if reader is not None and reader.evicted:
            raise _Aborted("body_evicted", f"the request body was still arriving after "
                           f"{reader.evicted:.1f}s and its slot was given to a new request "
                           f"({size} of {length if length is not None else '?'} bytes read, "
                           f"--slow-body-evict-after); retry", code=408, size=size) from None
        raise _Aborted("body_timeout", f"the request body did not arrive within the body timeout "
                       f"({size} of {length if length is not None else '?'} bytes read)",
                       code=408, size=size) from None
    except (aiohttp.ClientError, ConnectionError, asyncio.IncompleteReadError) as exc:
        raise _Aborted("client_disconnected", f"the client went away after {size} of "
                       f"{length if length is not None else '?'} body bytes ({type(exc).__name__})",
                       size=size) from None
    finally:
        if reader is not None:
            reader.timeout = None
    return body


def _refusal_response(uid: str, exc: _Aborted) -> web.Response:
    reasons = {408: "Timeout", 413: "RequestEntityTooLarge", 429: "TooManyRequests"}
    answer = review.refusal(uid, exc.code, reasons.get(exc.code, "BadRequest"), str(exc))
    response = web.Response(body=json.dumps(answer, separators=(",", ":")).encode(),
                            content_type="application/json")
    if exc.close:
        response.force_close()  # the rest of the body is not worth reading
    return response


class _Reader:
    """One request body being received: who sends it, since when, and its read deadline (which
    eviction moves to now)."""

    __slots__ = ("client", "evicted", "large", "started", "timeout")

    def __init__(self, client: str, started: float, large: bool) -> None:
        self.client = client
        self.started = started
        self.large = large
        self.timeout: asyncio.Timeout | None = None
        self.evicted = 0.0  # seconds it had been arriving when evicted; 0 while it is not


class _Gate:
    """The slots (module docstring): reading slots with eviction of the oldest slow body,
    processing slots, large-body slots, and the saturation clock behind ``/readyz``."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.in_flight = 0
        self.large_in_flight = 0
        self.large = asyncio.Semaphore(limits.max_large_in_flight)
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=limits.max_large_in_flight, thread_name_prefix="webhook-review")
        self.readers: dict[_Reader, None] = {}  # insertion order: oldest first
        self.reading_by_client: dict[str, int] = {}
        self.saturated_since: float | None = None  # first capacity refusal since a slot was last freed
        self.saturated_by = ""  # the flag of the limit that refused
        self.reported_unready = False

    # -- reading slots ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def reading(self, client: str, large: bool) -> Iterator[_Reader]:
        limits = self.limits
        now = asyncio.get_running_loop().time()
        if self.reading_by_client.get(client, 0) >= limits.max_reading_per_client \
                and not self._evict(now, client=client):
            raise _Aborted("too_many_bodies_from_client", f"too many request bodies arriving from "
                           f"{client} (limit {limits.max_reading_per_client}, "
                           f"--max-requests-reading-per-client); retry", code=429)
        if len(self.readers) >= limits.max_reading and not self._evict(now):
            self._refused(now, "--max-requests-reading")
            raise _Aborted("too_many_bodies", f"too many request bodies arriving (limit "
                           f"{limits.max_reading}, --max-requests-reading); retry", code=429)
        reader = _Reader(client, now, large)
        self.readers[reader] = None
        self.reading_by_client[client] = self.reading_by_client.get(client, 0) + 1
        self._freed()  # a slot was found: whatever was refused before, this one is served
        try:
            yield reader
        finally:
            if self._drop(reader):
                self._freed()

    def _drop(self, reader: _Reader) -> bool:
        if self.readers.pop(reader, 0) is not None:
            return False  # already dropped (evicted)
        left = self.reading_by_client[reader.client] - 1
        if left:
            self.reading_by_client[reader.client] = left
        else:
            del self.reading_by_client[reader.client]
        return True

    def _evict(self, now: float, *, client: str | None = None, large: bool = False) -> bool:
        """Free a reading slot (or a large slot) by cutting the body arriving for longest, if that
        is over ``evict_after``: from ``client`` if given, else from the client with the most bodies
        arriving (the oldest of those). True if one was cut."""
        cutoff = now - self.limits.evict_after
        best: _Reader | None = None
        for reader in self.readers:
            if reader.started > cutoff:
                break  # the rest are younger still
            if (client is not None and reader.client != client) or (large and not reader.large) \
                    or reader.timeout is None or reader.timeout.expired():
                continue  # not a candidate, or its read is ending anyway
            if best is None or self.reading_by_client[reader.client] > self.reading_by_client[best.client]:
                best = reader
                if client is not None or large:
                    break
        if best is None:
            return False
        best.evicted = max(now - best.started, 0.001)
        assert best.timeout is not None
        best.timeout.reschedule(now)  # its read ends with TimeoutError at the next loop turn
        self._drop(best)
        return True

    # -- large-body slots -------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def large_slot(self) -> AsyncIterator[None]:
        if self.large.locked():
            self._evict(asyncio.get_running_loop().time(), large=True)
        try:
            async with asyncio.timeout(self.limits.large_wait):
                await self.large.acquire()
        except TimeoutError:
            raise _Aborted("too_many_large_requests", f"too many large admission requests in flight "
                           f"(limit {self.limits.max_large_in_flight} over {LARGE_BODY_BYTES} bytes, "
                           f"--max-large-requests-in-flight); retry", code=429) from None
        self.large_in_flight += 1
        try:
            yield
        finally:
            self.large_in_flight -= 1
            self.large.release()
            if self.large_in_flight == 0:  # the last large one is done
                _release_free_memory()

    # -- processing slots ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def reviewing(self, body: bytearray) -> Iterator[None]:
        if self.in_flight >= self.limits.max_in_flight:
            self._refused(asyncio.get_running_loop().time(), "--max-requests-in-flight")
            raise _Aborted("too_many_requests", f"too many admission requests in flight (limit "
                           f"{self.limits.max_in_flight}, --max-requests-in-flight); retry", code=429,
                           head=bytes(body[:4096]))
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            self._freed()

    # -- saturation ---------------------------------------------------------------------------------
    def _refused(self, now: float, flag: str) -> None:
        if self.saturated_since is None:
            self.saturated_since = now
            self.saturated_by = flag

    def _freed(self) -> None:
        self.saturated_since = None

    def unready_reason(self) -> str | None:
        """Why ``/readyz`` fails now, or None: requests refused for capacity, no slot freed since,
        for ``saturation_window``. Flips are logged once each."""
        since = self.saturated_since
        now = asyncio.get_running_loop().time()
        if since is None or now - since < self.limits.saturation_window:
            if self.reported_unready:
                self.reported_unready = False
                log.info("admission_ready_again")
            return None
        reason = (f"saturated: requests refused for capacity ({self.saturated_by}) and no slot freed "
                  f"for {now - since:.1f}s")
        if not self.reported_unready:
            self.reported_unready = True
            log.warning("admission_saturated", limit=self.saturated_by, seconds=round(now - since, 1),
                        reading=len(self.readers), in_flight=self.in_flight)
        return reason


def tune_allocator() -> None:
    """Serve every large buffer from its own mapping (glibc's M_MMAP_THRESHOLD fixed at 128 KiB),
    so it goes back to the OS when freed: left dynamic, the threshold rises after the first large
    free and later bodies stay in the heap, which is why RSS did not fall after a burst."""
    if _LIBC is not None and hasattr(_LIBC, "mallopt"):
        with contextlib.suppress(Exception):
            _LIBC.mallopt(_M_MMAP_THRESHOLD, 128 * 1024)


_M_MMAP_THRESHOLD = -3


def _release_free_memory() -> None:
    """Give freed heap back to the OS (glibc keeps it otherwise), so RSS falls after a burst."""
    if _LIBC is not None:
        with contextlib.suppress(Exception):
            _LIBC.malloc_trim(0)


def _load_libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


_LIBC = _load_libc()


def _client_of(request: web.Request) -> str:
    """The client's address (no port): the unit of per-client fairness."""
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    return str(peer[0]) if peer else "unknown"


async def _guarded(request: web.Request, gate: _Gate, metrics: Metrics, *, path: str,
                   work: Callable[[bytearray, str | None], Any]) -> tuple[Any, int]:
    """Read under a reading slot, then run ``work(body, content_type)`` under a processing slot,
    on a thread for a large body. Returns (result, body size); raises ``_Aborted`` (already logged)
    for a request cut short."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + gate.limits.body_timeout
    length = request.content_length
    size = 0
    try:
        if length is not None and length > review.MAX_REQUEST_BYTES:
            raise _Aborted("body_too_large", f"request entity is too large; limit is "
                           f"{review.MAX_REQUEST_BYTES} bytes (Content-Length {length})", code=413)
        large = length is None or length > LARGE_BODY_BYTES
        async with contextlib.AsyncExitStack() as stack:
            if large:
                await stack.enter_async_context(gate.large_slot())
            with contextlib.ExitStack() as reading:
                client = _client_of(request)
                body = await _read_body(request, deadline,
                                        lambda: reading.enter_context(gate.reading(client, large)))
            size = len(body)
            content_type = request.headers.get("Content-Type")
            with gate.reviewing(body):
                if large:
                    # Decoding a large body takes long enough that the loop should keep answering
                    # other (small) requests meanwhile.
                    result = await loop.run_in_executor(gate.executor, work, body, content_type)
                else:
                    result = work(body, content_type)
            del body
            return result, size
    except _Aborted as exc:
        _abort_log(exc.reason, request, metrics, code=exc.code, message=str(exc), bytes=exc.size or size,
                   content_length=length)
        raise


_PEEK_REASONS = frozenset({"too_many_requests", "too_many_large_requests", "too_many_bodies",
                           "too_many_bodies_from_client", "body_too_large"})


def _admission_handler(path: str, config: ServerConfig, metrics: Metrics, gate: _Gate
                       ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    def work(body: bytearray, content_type: str | None) -> tuple[bytes, review.Outcome]:
        outcome = review.handle(path, body, content_type, settings=config.settings)
        payload = json.dumps(outcome.review, separators=(",", ":"), ensure_ascii=False).encode()
        outcome.review = {}  # the payload is what is kept; drop the tree now
        return payload, outcome

    async def handler(request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        metrics.in_flight.labels(path).inc()
        try:
            try:
                (payload, outcome), size = await _guarded(request, gate, metrics, path=path, work=work)
            except _Aborted as exc:
                head = exc.head
                if not head and exc.size == 0 and exc.reason in _PEEK_REASONS:
                    # The answer should carry the uid the API server checks: peek at the first bytes.
                    with contextlib.suppress(Exception):
                        async with asyncio.timeout(0.2):
                            head = await request.content.read(4096)
                metrics.requests.labels(path, str(exc.code)).inc()
                return _refusal_response(review.peek_uid(head), exc)
        finally:
            metrics.in_flight.labels(path).dec()
        elapsed = time.perf_counter() - started
        metrics.requests.labels(path, str(outcome.code)).inc()
        metrics.latency.labels(path).observe(elapsed)
        metrics.decisions.labels(path, str(outcome.allowed).lower()).inc()
        event = log.info if outcome.code < 500 else log.error
        event("admission_reviewed", duration_ms=round(elapsed * 1000, 3), bytes=size,
              message=outcome.message[:500], **outcome.log)
        response = web.Response(body=payload, content_type="application/json")
        if outcome.code == 413:
            response.force_close()  # the rest of an oversized body is not worth reading
        return response

    return handler


def _convert_handler(config: ServerConfig, metrics: Metrics, gate: _Gate
                     ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    def work(body: bytearray, content_type: str | None) -> tuple[int, dict[str, Any]]:
        cost = budget.estimate(body)
        if cost.peak > config.settings.max_review_memory:
            return 413, {"message": f"request entity is too large to decode (about {cost.peak} bytes, "
                                    f"limit {config.settings.max_review_memory}, --max-review-memory)"}
        return conversion.handle(body, content_type)

    async def handler(request: web.Request) -> web.StreamResponse:
        try:
            (status, answer), _ = await _guarded(request, gate, metrics, path="/convert", work=work)
        except _Aborted as exc:
            response = web.Response(status=exc.code, text=str(exc))
            response.force_close()
            return response
        if status == 413:
            return web.Response(status=413, text=answer["message"])
        response = answer.get("response", {})
        log.info("conversion_reviewed", uid=response.get("uid", ""),
                 objects=len(response.get("convertedObjects", [])),
                 result=response.get("result", {}).get("status"))
        return web.json_response(answer, status=status)

    return handler


async def _ok(_: web.Request) -> web.Response:
    return web.Response(text="ok")


Readiness = Callable[[], "str | None"]  # why the server is not ready, or None


def _add_health(app: web.Application, readiness: Readiness | None) -> None:
    async def ready(_: web.Request) -> web.Response:
        reason = readiness() if readiness is not None else None
        if reason is not None:
            return web.Response(status=503, text=f"not ready: {reason}")
        return web.Response(text="ok")

    for path in ("/readyz", "/readyz/"):
        app.router.add_get(path, ready)
    for path in ("/healthz", "/healthz/"):
        app.router.add_get(path, _ok)


def build_app(config: ServerConfig, metrics: Metrics | None = None) -> web.Application:
    """The HTTPS application: admission paths plus health (Karmada serves /readyz on this port)."""
    metrics = metrics or Metrics()
    app = web.Application(client_max_size=review.MAX_REQUEST_BYTES + 1)
    gate = _Gate(config.limits)
    for path in review.ENDPOINTS:
        app.router.add_route("*", path, _admission_handler(path, config, metrics, gate))
    app.router.add_post("/convert", _convert_handler(config, metrics, gate))
    _add_health(app, gate.unready_reason)
    app["metrics"] = metrics
    app["readiness"] = gate.unready_reason

    async def stop_executor(_: web.Application) -> None:
        gate.executor.shutdown(wait=False, cancel_futures=True)

    app.on_cleanup.append(stop_executor)
    return app


class _Connection(web_protocol.RequestHandler):
    """aiohttp's connection protocol with a header clock: from the first byte of a request, its
    line and headers must be complete within ``header_timeout``, or the connection is dropped.
    A connection that sends nothing is idle, not slow (Go's client may keep a fresh connection
    unused in its pool): aiohttp closes it after the idle timeout."""

    def __init__(self, manager: web.Server, *, header_timeout: float, metrics: Metrics,
                 **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._header_timeout = header_timeout
        self._header_clock: asyncio.TimerHandle | None = None
        self._metrics = metrics

    def data_received(self, data: bytes) -> None:
        if self._header_clock is None and self._waiting_for_headers():
            self._arm()
        super().data_received(data)
        if self._header_clock is not None and self._messages:  # the headers are complete
            self._header_clock.cancel()
            self._header_clock = None

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._header_clock is not None:
            self._header_clock.cancel()
            self._header_clock = None
        super().connection_lost(exc)

    def _waiting_for_headers(self) -> bool:
        waiter = self._waiter
        return self._current_request is None and (waiter is None or not waiter.done()) and not self._messages

    def _arm(self) -> None:
        self._header_clock = self._loop.call_later(self._header_timeout, self._header_deadline)

    def _header_deadline(self) -> None:
        self._header_clock = None
        transport = self.transport
        if transport is None or not self._waiting_for_headers():
            return
        peer = transport.get_extra_info("peername")
        _abort_log("header_timeout", None, self._metrics,
                   peer=f"{peer[0]}:{peer[1]}" if peer else "",
                   message=f"the request headers did not arrive within {self._header_timeout}s")
        self.force_close()
        transport.abort()  # no TLS close_notify exchange with a peer that does not read


@dataclass(slots=True, eq=False)
class _Peer:
    """One open connection, from its TCP accept: whose, since when, and its HTTP protocol."""

    client: str
    accepted: float
    transport: asyncio.BaseTransport
    handler: _Connection | None = None

    def answering(self) -> bool:
        """A request is being read or answered on it (its headers have arrived)."""
        handler = self.handler
        return handler is not None and getattr(handler, "_current_request", None) is not None


class _ConnectionGate:
    """The open connections by client address, and the two limits on them (module docstring)."""

    def __init__(self, limits: Limits, metrics: Metrics, clock: Callable[[], float]) -> None:
        self.limits = limits
        self.metrics = metrics
        self.clock = clock
        self.by_client: dict[str, list[_Peer]] = {}
        self.total = 0
        self._logged: dict[str, float] = {}  # reason -> when it was last logged
        self._unlogged: dict[str, int] = {}  # reason -> refusals since

    def admit(self, client: str, transport: asyncio.BaseTransport) -> _Peer | None:
        """The new connection's record, or None when it must be closed (counted and logged)."""
        limits, now = self.limits, self.clock()
        own = self.by_client.get(client, [])
        if len(own) >= limits.max_connections_per_client and not self._evict(own, now):
            self._refused("too_many_connections_from_client", client,
                          f"too many connections from {client} (limit {limits.max_connections_per_client}, "
                          "--max-connections-per-client)")
            return None
        if self.total >= limits.max_connections and not self._evict_any(len(own), now):
            self._refused("too_many_connections", client,
                          f"too many connections (limit {limits.max_connections}, --max-connections)")
            return None
        peer = _Peer(client, now, transport)
        self.by_client.setdefault(client, []).append(peer)
        self.total += 1
        return peer

    def release(self, peer: _Peer) -> None:
        own = self.by_client.get(peer.client)
        if own is None or peer not in own:
            return
        own.remove(peer)
        self.total -= 1
        if not own:
            del self.by_client[peer.client]

    def _evict_any(self, holding: int, now: float) -> bool:
        """Make room for a client holding ``holding`` connections: a client holding more gives its
        oldest connection not answering a request up, whatever its age (fair shares: a client with
        few connections, the API server's, always gets in); failing that, the oldest such connection
        older than the eviction age, of the client with the most first."""
        clients = sorted(self.by_client.values(), key=len, reverse=True)
        if any(self._evict(own, now, any_age=True) for own in clients if len(own) > holding):
            return True
        return any(self._evict(own, now) for own in clients)

    def _evict(self, own: list[_Peer], now: float, *, any_age: bool = False) -> bool:
        """Close the oldest of ``own`` not answering a request and (unless ``any_age``) older than
        the eviction age."""
        cutoff = now - self.limits.evict_after
        for peer in own:  # in the order they were accepted
            if peer.accepted > cutoff and not any_age:
                return False
            if not peer.answering():
                self.release(peer)
                self.metrics.aborted.labels("connection_evicted").inc()
                peer.transport.abort()
                return True
        return False

    def _refused(self, reason: str, client: str, message: str) -> None:
        """Counted each time; logged at most once a second per reason (a flood is one line a second)."""
        self.metrics.aborted.labels(reason).inc()
        now = self.clock()
        self._unlogged[reason] = self._unlogged.get(reason, 0) + 1
        if now - self._logged.get(reason, -1e9) >= 1.0:
            log.warning("connection_refused", reason=reason, client=client, message=message,
                        refused=self._unlogged.pop(reason), open=self.total)
            self._logged[reason] = now


class _TLS(sslproto.SSLProtocol):
    """asyncio's TLS protocol with a ``TLS_READ_BUFFER`` read buffer; its connection's slot is given
    back when the connection closes, whether or not the handshake completed."""

    max_size = TLS_READ_BUFFER

    def __init__(self, *args: Any, on_lost: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_lost = on_lost

    def connection_lost(self, exc: BaseException | None) -> None:
        self._on_lost()
        super().connection_lost(exc)


class _Accept(asyncio.Protocol):
    """The protocol of a freshly accepted TCP connection: past the connection limits it is closed
    at once; otherwise TLS (and then the HTTP protocol) takes the connection over."""

    def __init__(self, gate: _ConnectionGate, context: ssl.SSLContext, handler: Callable[[], _Connection],
                 handshake_timeout: float) -> None:
        self.gate, self.context, self.handler = gate, context, handler
        self.handshake_timeout = handshake_timeout

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer_name = transport.get_extra_info("peername")
        client = str(peer_name[0]) if peer_name else "unknown"
        peer = self.gate.admit(client, transport)
        if peer is None:
            assert isinstance(transport, asyncio.Transport)
            transport.abort()  # before the handshake: no TLS state, no buffer
            return
        handler = peer.handler = self.handler()
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        # retrieved so a failed handshake is not "never retrieved"; the TLS protocol logs it as before
        waiter.add_done_callback(lambda f: f.cancelled() or f.exception())
        tls = _TLS(loop, handler, self.context, waiter, server_side=True,
                   ssl_handshake_timeout=self.handshake_timeout, on_lost=lambda: self.gate.release(peer))
        transport.set_protocol(tls)
        tls.connection_made(transport)

    def connection_lost(self, exc: BaseException | None) -> None:
        pass  # closed before TLS took it over (refused): nothing was counted


async def serve_https(runner: web.AppRunner, host: str, port: int, context: ssl.SSLContext,
                      config: ServerConfig, metrics: Metrics) -> asyncio.AbstractServer:
    """Listen with ``runner``'s application behind the connection limits and the header clock; the
    TLS handshake has the same deadline. ``runner`` must be set up; close the returned server before
    its cleanup."""
    manager = runner.server
    assert manager is not None, "runner.setup() first"
    loop = asyncio.get_running_loop()
    limits = config.limits
    gate = _ConnectionGate(limits, metrics, loop.time)

    def connection() -> _Connection:
        return _Connection(manager, loop=loop, header_timeout=limits.header_timeout, metrics=metrics,
                           keepalive_timeout=IDLE_TIMEOUT, lingering_time=LINGER, access_log=None)

    def accept() -> _Accept:
        return _Accept(gate, context, connection, limits.header_timeout)

    # no ssl= here: the TLS starts in _Accept, once the connection is within the limits
    return await loop.create_server(accept, host, port)


def build_probe_app(metrics: Metrics | None, *, health: bool,
                    readiness: Readiness | None = None) -> web.Application:
    """A plain-HTTP application for the metrics and/or health-probe address; ``readiness`` is the
    admission application's (``app["readiness"]``), so both ports answer ``/readyz`` alike."""
    app = web.Application()
    if health:
        _add_health(app, readiness)
    if metrics is not None:
        async def serve_metrics(_: web.Request) -> web.Response:
            return web.Response(body=metrics.render(),
                                headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST})

        app.router.add_get("/metrics", serve_metrics)
    return app
