"""One HTTP(S) extender as an edge object: the scheduler's side of the extender protocol.

``HTTPExtender`` is built from one ``ExtenderConfig`` and satisfies the framework runtime's extender
Protocol (``fleetsched.scheduler.framework.interface.Extender``): ``filter``/``prioritize`` block the
calling thread; ``afilter``/``aprioritize`` are the same calls, awaited. Each call is one POST of
an ``ExtenderArgs`` body to ``{urlPrefix}/{verb}``; the answer is decoded strictly (``protocol.py``)
and every fault surfaces as an ``ExtenderError`` naming the extender, of one of four kinds:

* unreachable: connection refused, DNS failure, TLS handshake or verification failure, connection
  dropped (a request that meets a keep-alive connection the server has just closed, found closed
  without an answer, reset, or closing as the request was written, is sent once more within the
  same deadline, on a new connection of its own: the pool may hold more connections closed alike);
* slow: no complete answer within ``httpTimeout``, which bounds connect, TLS, send and the whole
  response body together;
* erroring: an HTTP status other than 200 (redirects are not followed), or a non-empty ``error``
  field;
* malformed: not JSON, the wrong shape or types, larger than ``max_response_bytes``, or naming a
  cluster that was not a candidate.

How this fits the pure core. The scheduling core never waits on the network itself: the framework
runtime asks for extender verdicts through the Protocol, and all I/O happens here. Connections live
on one event loop: by default a process-wide background loop in a daemon thread
(``EdgeLoop.shared()``), or the caller's loop when one is passed (the operator's, say). The blocking
face, used by scheduling worker threads, renders the request body in the calling thread, hands the
exchange to that loop with ``run_coroutine_threadsafe`` and waits for it; it refuses to run on an
event loop thread, where it would stall every other task (use the ``a*`` face there). The async face
awaits the exchange directly when called on the client's loop, and through ``wrap_future`` from any
other loop. So many workers and bindings share one pool of keep-alive connections per extender
(aiohttp's connector: one ``ClientSession`` per extender, created on first use and reused), calls to
different extenders run concurrently, and nothing in the core blocks an event loop. We chose aiohttp,
already a dependency of the operator and the webhook, over adding a second HTTP stack.

TLS: ``https`` URLs verify the server against ``tls.caFile``/``tls.caData`` (or the system CAs),
optionally under ``tls.serverName``; ``tls.certFile``/``tls.keyFile`` present a client certificate
(mutual TLS); ``tls.insecure`` skips verification. Certificate files are read when the extender is
built, so a bad path fails at start-up with the field named, not at the first binding; each must be
a regular file of at most ``MAX_PEM_BYTES`` (``/dev/zero`` or a FIFO is refused, not read).

A ``urlPrefix`` with user info (``user:password@``) is refused: the extender's name is its URL and
it is shown in conditions, metrics labels and logs (``ExtenderConfig.name`` redacts it regardless).
"""

from __future__ import annotations

import asyncio
import errno
import ssl
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp
import uvloop

from fleetsched.api.yamlload import LoadError, read_regular_file
from fleetsched.extender import metrics
from fleetsched.extender.errors import ExtenderError, FaultKind
from fleetsched.extender.objects import binding_json, cluster_json
from fleetsched.extender.protocol import (
    VERB_FILTER,
    VERB_PRIORITIZE,
    decode_filter_result,
    decode_priorities,
    encode_args,
)
from fleetsched.scheduler.framework.interface import ExtenderFilterResult as FilterResult
from fleetsched.scheduler.framework.profile import ExtenderConfig, ExtenderTLS, Profile
from fleetsched.scheduler.types import ClusterInfo, SchedulingBinding

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "MAX_PEM_BYTES",
    "EdgeLoop",
    "ExtenderConfigError",
    "HTTPExtender",
    "build_extenders",
    "build_profile_extenders",
    "check_extender",
]

# An answer names at most every candidate with a reason; 8 MiB holds tens of thousands of clusters.
DEFAULT_MAX_RESPONSE_BYTES = 8 << 20
DEFAULT_POOL_SIZE = 16
# A CA bundle, client certificate or key: the system's whole CA bundle is about 200 KiB.
MAX_PEM_BYTES = 4 << 20
# Shorter than the idle timeouts of common servers (aiohttp 75 s, Go 90 s, nginx 75 s), so the client
# is normally the one to close an idle connection.
KEEPALIVE_SECONDS = 15.0
_HEADERS = {"Content-Type": "application/json", "Accept": "application/json",
            "User-Agent": "fleetsched-scheduler"}

_T = TypeVar("_T")


class _Stale(Exception):
    """The first attempt met a connection the peer had closed: worth one attempt on a new one."""


class ExtenderConfigError(ValueError):
    """An extender that cannot be built: one line naming the extender, the field and the reason."""


class EdgeLoop:
    """An event loop in a daemon thread, where extender connections live when no loop is given.

    A uvloop loop, as the operators run on: its TLS is about twice as fast as asyncio's for the
    tens of kilobytes a request for a hundred clusters carries (``bench/extender.py``)."""

    _shared: EdgeLoop | None = None
    _shared_lock = threading.Lock()

    def __init__(self, name: str = "extender-edge") -> None:
        self.loop = uvloop.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    @classmethod
    def shared(cls) -> asyncio.AbstractEventLoop:
        """The process-wide loop, started on first use."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = EdgeLoop()
            return cls._shared.loop

    def close(self) -> None:
        """Stop the loop; close the extenders on it first (``HTTPExtender.close``)."""
        # Closing TLS transports takes a few loop turns; let them finish before the loop stops.
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0.05), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


def _read(path: str, name: str, field: str) -> bytes:
    try:
        return read_regular_file(path, limit=MAX_PEM_BYTES)
    except LoadError as exc:
        why = exc.reason.removeprefix("cannot read the file: ")
        raise ExtenderConfigError(f"extender {name}: tls.{field}: cannot read {path}: {why}") from None


def _ssl_context(tls: ExtenderTLS | None, name: str) -> ssl.SSLContext:
    tls = tls or ExtenderTLS()
    if tls.key_file and not tls.cert_file:
        raise ExtenderConfigError(f"extender {name}: tls.keyFile: set without tls.certFile")
    ca_pem = _read(tls.ca_file, name, "caFile").decode("utf-8", "replace") if tls.ca_file else None
    try:
        if tls.ca_data:
            ca_pem = (ca_pem or "") + tls.ca_data.decode()
        ctx = ssl.create_default_context(cadata=ca_pem) if ca_pem else ssl.create_default_context()
    except (ssl.SSLError, ValueError, UnicodeDecodeError) as exc:
        field = "caData" if tls.ca_data else "caFile"
        raise ExtenderConfigError(f"extender {name}: tls.{field}: not a PEM CA bundle: {exc}") from None
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if tls.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if tls.cert_file:
        _read(tls.cert_file, name, "certFile")
        if tls.key_file:
            _read(tls.key_file, name, "keyFile")
        try:
            ctx.load_cert_chain(tls.cert_file, tls.key_file or None)
        except ssl.SSLError as exc:
            raise ExtenderConfigError(
                f"extender {name}: tls.certFile: cannot load the client certificate and key: {exc}"
            ) from None
    return ctx


def check_extender(config: ExtenderConfig) -> ssl.SSLContext | None:
    """What an ``HTTPExtender`` checks when it is built (``fleetsched config validate`` runs it too):
    the URL, the timeout and the TLS files (read and loaded); the TLS context for https://, else
    None. ``ExtenderConfigError`` (one line) otherwise."""
    name = config.name
    url = urlsplit(config.url_prefix)
    if url.username is not None or url.password is not None:
        raise ExtenderConfigError(f"extender {name}: urlPrefix: must not carry user info (user:password@)")
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ExtenderConfigError(
            f"extender {name}: urlPrefix: must be an http:// or https:// URL with a host")
    if config.http_timeout_seconds <= 0:
        raise ExtenderConfigError(f"extender {name}: httpTimeout: must be positive")
    if url.scheme == "http" and config.tls is not None:
        raise ExtenderConfigError(f"extender {name}: tls: set, but urlPrefix is http://")
    return _ssl_context(config.tls, name) if url.scheme == "https" else None


def _join(prefix: str, verb: str) -> str:
    return f"{prefix.rstrip('/')}/{verb.lstrip('/')}"


# The single-entry cache of the last binding's JSON: filter and prioritize of one binding, and every
# extender of the profile, send the same bytes. Keyed by identity; a race only costs a re-render.
_last_binding: tuple[SchedulingBinding, bytes] | None = None


def _binding_bytes(binding: SchedulingBinding) -> bytes:
    global _last_binding
    last = _last_binding
    if last is not None and last[0] is binding:
        return last[1]
    data = binding_json(binding)
    _last_binding = (binding, data)
    return data


def _body(
    binding: SchedulingBinding, clusters: Sequence[ClusterInfo], *, names_only: bool = False
) -> tuple[bytes, list[str]]:
    names = [c.name for c in clusters]
    objects = None if names_only else [cluster_json(c) for c in clusters]
    return encode_args(_binding_bytes(binding), objects, names), names


class HTTPExtender:
    """One configured extender; see the module docstring. Build it once and reuse it."""

    def __init__(
        self,
        config: ExtenderConfig,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        pool_size: int = DEFAULT_POOL_SIZE,
        cluster_cache_capable: bool = False,
    ) -> None:
        """``cluster_cache_capable`` (kube's ``nodeCacheCapable``): the extender keeps its own view
        of the Clusters, so requests carry ``clusterNames`` only, not the Cluster objects."""
        self.config = config
        self.cluster_cache_capable = cluster_cache_capable
        self.name = config.name
        self.ignorable = config.ignorable
        self.weight = config.weight
        self.supports_filter = bool(config.filter_verb)
        self.supports_prioritize = bool(config.prioritize_verb)
        self.timeout = config.http_timeout_seconds
        self.max_response_bytes = max_response_bytes
        self._ssl = check_extender(config)
        self._server_hostname = (config.tls.server_name or None) if config.tls else None
        self._filter_url = _join(config.url_prefix, config.filter_verb)
        self._prioritize_url = _join(config.url_prefix, config.prioritize_verb)
        self._pool_size = pool_size
        self._loop = loop or EdgeLoop.shared()
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"HTTPExtender({self.name!r})"

    # ---------------------------------------------------------------------------- blocking face
    def filter(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> FilterResult:
        """Ask the filter verb about ``clusters``; blocks this (worker) thread."""
        body, names = _body(binding, clusters, names_only=self.cluster_cache_capable)
        return self._blocking(self._filter_call(body, names))

    def prioritize(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> Mapping[str, int]:
        """Raw scores 0..10 from the prioritize verb; blocks this (worker) thread."""
        body, names = _body(binding, clusters, names_only=self.cluster_cache_capable)
        return self._blocking(self._prioritize_call(body, names))

    def close(self) -> None:
        """Close the pooled connections (from a thread other than the client's loop)."""
        self._blocking(self.aclose())

    # ------------------------------------------------------------------------------- async face
    async def afilter(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> FilterResult:
        body, names = _body(binding, clusters, names_only=self.cluster_cache_capable)
        return await self._on_own_loop(self._filter_call(body, names))

    async def aprioritize(
        self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]
    ) -> Mapping[str, int]:
        body, names = _body(binding, clusters, names_only=self.cluster_cache_capable)
        return await self._on_own_loop(self._prioritize_call(body, names))

    async def aclose(self) -> None:
        if asyncio.get_running_loop() is not self._loop:
            await self._on_own_loop(self.aclose())
            return
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    # --------------------------------------------------------------------------------- plumbing
    def _blocking(self, coro: Coroutine[Any, Any, _T]) -> _T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise RuntimeError(
                f"extender {self.name}: the blocking face was called on an event loop thread; "
                "await afilter/aprioritize there")
        # The deadline is enforced on the loop; the margin only guards against a stopped loop.
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self.timeout + 30)

    async def _on_own_loop(self, coro: Coroutine[Any, Any, _T]) -> _T:
        if asyncio.get_running_loop() is self._loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    async def _filter_call(self, body: bytes, names: list[str]) -> FilterResult:
        return await self._call(VERB_FILTER, self._filter_url, body,
                                lambda data: decode_filter_result(data, names, extender=self.name))

    async def _prioritize_call(self, body: bytes, names: list[str]) -> dict[str, int]:
        return await self._call(VERB_PRIORITIZE, self._prioritize_url, body,
                                lambda data: decode_priorities(data, names, extender=self.name))

    def _session_here(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                ssl=self._ssl if self._ssl is not None else True,
                limit=self._pool_size,
                keepalive_timeout=KEEPALIVE_SECONDS,
            )
            self._session = aiohttp.ClientSession(
                connector=connector, headers=_HEADERS, timeout=aiohttp.ClientTimeout(total=None),
                auto_decompress=True,
            )
        return self._session

    async def _call(self, verb: str, url: str, body: bytes, decode: Callable[[bytes], _T]) -> _T:
        started = time.perf_counter()
        result = metrics.RESULT_SUCCESS
        try:
            try:
                async with asyncio.timeout(self.timeout):
                    data = await self._exchange(verb, url, body)
            except TimeoutError:
                raise ExtenderError(self.name, verb, FaultKind.SLOW,
                                    f"no answer within {self.timeout:g} s") from None
            return decode(data)
        except ExtenderError as exc:
            result = str(exc.kind)
            raise
        finally:
            metrics.CALL_DURATION.labels(self.name, verb, result).observe(time.perf_counter() - started)

    async def _exchange(self, verb: str, url: str, body: bytes) -> bytes:
        try:
            return await self._attempt(self._session_here(), verb, url, body, first=True)
        except _Stale:
            pass
        # A pooled keep-alive connection the server had closed (or was closing) as it was reused:
        # once more, on a connection of its own (the pool may hold more connections closed alike).
        one_off = aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else True, force_close=True)
        session = aiohttp.ClientSession(
            connector=one_off,
            headers=_HEADERS, timeout=aiohttp.ClientTimeout(total=None), auto_decompress=True,
        )
        try:
            return await self._attempt(session, verb, url, body, first=False)
        finally:
            await session.close()

    async def _attempt(
        self, session: aiohttp.ClientSession, verb: str, url: str, body: bytes, *, first: bool
    ) -> bytes:
        """One POST; the first attempt raises ``_Stale`` where the connection was found closed by
        the peer (closed without an answer, reset, or closing while the request was written)."""
        try:
            return await self._post(session, verb, url, body)
        except aiohttp.ServerDisconnectedError:
            if first:
                raise _Stale from None
            hint = self._client_certificate_hint()
            raise ExtenderError(self.name, verb, FaultKind.UNREACHABLE,
                                f"the server closed the connection without answering{hint}") from None
        except aiohttp.ClientConnectionResetError as exc:
            if first:  # written to a connection already closing: the request was not sent
                raise _Stale from None
            raise ExtenderError(self.name, verb, FaultKind.UNREACHABLE,
                                f"connection failed: {exc}") from None
        except aiohttp.ClientConnectorCertificateError as exc:
            raise ExtenderError(self.name, verb, FaultKind.UNREACHABLE,
                                f"TLS: the server's certificate is not trusted: "
                                f"{exc.certificate_error}") from None
        except aiohttp.ClientConnectorDNSError as exc:
            raise ExtenderError(self.name, verb, FaultKind.UNREACHABLE,
                                f"cannot resolve {exc.host}: {exc.os_error}") from None
        except aiohttp.ClientConnectorSSLError as exc:
            detail = f"TLS handshake with {exc.host}:{exc.port} failed: {exc.os_error}"
            raise ExtenderError(self.name, verb, FaultKind.UNREACHABLE, detail) from None
        except aiohttp.ClientConnectorError as exc:
            reason = exc.os_error.strerror or str(exc.os_error)
            raise ExtenderError(self.name, verb, FaultKind.UNREACHABLE,
                                f"cannot connect to {exc.host}:{exc.port}: {reason}") from None
        except (aiohttp.ClientSSLError, ssl.SSLError) as exc:
            raise ExtenderError(self.name, verb, FaultKind.UNREACHABLE, f"TLS: {exc}") from None
        except aiohttp.ClientResponseError as exc:
            raise ExtenderError(self.name, verb, FaultKind.MALFORMED,
                                f"not a valid HTTP response: {exc.message}") from None
        except aiohttp.ClientPayloadError as exc:
            raise ExtenderError(self.name, verb, FaultKind.UNREACHABLE,
                                f"the connection broke while reading the answer: {exc}") from None
        except aiohttp.ClientOSError as exc:
            if exc.errno in (errno.ECONNRESET, errno.EPIPE) and first:
                raise _Stale from None
            # Under TLS 1.3 a server refusing a missing client certificate may reset the
            # connection instead of closing it: the same hint either way.
            hint = self._client_certificate_hint() if exc.errno == errno.ECONNRESET else ""
            raise ExtenderError(self.name, verb, FaultKind.UNREACHABLE,
                                f"connection failed: {exc.strerror or exc}{hint}") from None
        except aiohttp.ClientError as exc:
            raise ExtenderError(self.name, verb, FaultKind.UNREACHABLE,
                                f"{type(exc).__name__}: {exc}") from None

    def _client_certificate_hint(self) -> str:
        """For a connection the server dropped: over TLS without a client certificate, say so."""
        if self._ssl is not None and not (self.config.tls and self.config.tls.cert_file):
            return " (does it require a client certificate? tls.certFile is not set)"
        return ""

    async def _post(self, session: aiohttp.ClientSession, verb: str, url: str, body: bytes) -> bytes:
        # Redirects are not followed: the binding is not sent anywhere the configuration did not name.
        async with session.post(url, data=body, server_hostname=self._server_hostname,
                                allow_redirects=False) as resp:
            if resp.status != 200:
                snippet = (await resp.content.read(200)).decode("utf-8", "replace").strip()
                raise ExtenderError(self.name, verb, FaultKind.ERRORING,
                                    f"HTTP {resp.status} {resp.reason or ''}".rstrip()
                                    + (f": {snippet}" if snippet else ""))
            limit = self.max_response_bytes
            if resp.content_length is not None and resp.content_length > limit:
                raise ExtenderError(self.name, verb, FaultKind.MALFORMED,
                                    f"the answer of {resp.content_length} bytes exceeds the limit of {limit}")
            chunks: list[bytes] = []
            size = 0
            async for chunk in resp.content.iter_any():
                size += len(chunk)
                if size > limit:
                    raise ExtenderError(self.name, verb, FaultKind.MALFORMED,
                                        f"the answer exceeds the limit of {limit} bytes")
                chunks.append(chunk)
            return b"".join(chunks)


def build_extenders(
    configs: Sequence[ExtenderConfig], *, loop: asyncio.AbstractEventLoop | None = None
) -> tuple[HTTPExtender, ...]:
    """One ``HTTPExtender`` per configured extender, in configuration order (the order filters run
    in). Raises ``ExtenderConfigError`` for the first one that cannot be built, so a bad profile
    stops the scheduler at start-up."""
    return tuple(HTTPExtender(config, loop=loop) for config in configs)


def build_profile_extenders(
    profiles: Sequence[Profile], *, loop: asyncio.AbstractEventLoop | None = None
) -> tuple[dict[str, tuple[HTTPExtender, ...]], tuple[HTTPExtender, ...]]:
    """The configuration's extenders built once (``build_extenders``, one connection pool each,
    shared by every profile that lists it), and per schedulerName the ones its profile uses, in
    order. Returns ``(by profile, all)``; whoever built them closes ``all`` at shutdown."""
    configs: dict[str, ExtenderConfig] = {}
    for profile in profiles:
        for config in profile.extenders:
            configs.setdefault(config.url_prefix, config)
    built = build_extenders(tuple(configs.values()), loop=loop)
    by_prefix = {e.config.url_prefix: e for e in built}
    by_profile = {p.scheduler_name: tuple(by_prefix[c.url_prefix] for c in p.extenders) for p in profiles}
    return by_profile, built
