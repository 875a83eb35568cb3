"""A small asynchronous Kubernetes REST client for the operator's reads, writes, Leases, Events and
watch streams (``stream``, which ``watch.py`` builds on).

It is a strict, bounded HTTP/1.1 pool (``http1.py``) for requests and an aiohttp session for
watches, with the credentials from a kubeconfig (or the in-cluster service account), a client-side
token-bucket limiter (``--kube-api-qps`` / ``--kube-api-burst``, as client-go's), JSON merge
patches, and errors that keep the API's status code and reason so callers can tell a 409 Conflict
from the rest.

Only a 2xx answer is a success: anything else raises ``ApiError``, and an answer that is no valid
HTTP (or over a size limit, or late) raises ``http1.ProtocolError`` / ``TimeoutError``, both
``OSError``s, which every caller retries. A 429, or a 5xx carrying Retry-After (integer seconds),
is sent again after that wait, as client-go does: at most ``max_retries`` times, each wait capped at
``retry_after_max``, going through the rate limiter and the write guard again; once they are used
up the last answer raises ``ApiError`` like any other, so a write is never counted as done on it.

It must not know about bindings or scheduling.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
import orjson
import structlog

from fleetsched.kube import http1
from fleetsched.kube.auth import Connection as Connection
from fleetsched.kube.auth import Credentials, describe
from fleetsched.kube.auth import load_connection as load_connection

log = structlog.get_logger("fleetsched.kube")

JsonObject = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The most one LIST page's answer may hold. Pages are asked for ``limit`` objects (500), not bytes;
# 64 MiB holds 500 objects of 128 KiB. A page over it is asked for again with half the limit, down
# to one object, which always fits (an object is at most the apiserver's 3 MiB request limit).
MAX_PAGE = 64 * http1.MiB
MAX_RETRIES = 10  # client-go's default for 429 / Retry-After
RETRY_AFTER_MAX = 10.0  # seconds: the longest wait a Retry-After is honoured for
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})  # the writes that take a fieldManager


class ApiError(Exception):
    """A non-2xx answer from the API server."""

    def __init__(self, status: int, reason: str, message: str, body: Mapping[str, Any] | None = None):
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = dict(body or {})

    @property
    def is_conflict(self) -> bool:
        return self.status == 409

    @property
    def is_not_found(self) -> bool:
        return self.status == 404

    @property
    def is_already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"


class TokenBucket:
    """client-go's token-bucket limiter: ``qps`` tokens a second, at most ``burst`` saved up.

    ``qps <= 0`` disables limiting.
    """

    def __init__(self, qps: float, burst: int, clock: Any = time.monotonic) -> None:
        self.qps = qps
        self.burst = max(burst, 1)
        self._tokens = float(self.burst)
        self._clock = clock
        self._last = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now

    async def acquire(self) -> None:
        if self.qps <= 0:
            return
        async with self._lock:
            self._refill()
            if self._tokens < 1:
                await asyncio.sleep((1 - self._tokens) / self.qps)
                self._refill()
            self._tokens -= 1


class KubeClient:
    """JSON over HTTPS to one API server. Create it inside the running event loop."""

    def __init__(
        self,
        connection: Connection,
        *,
        qps: float = 0,
        burst: int = 0,
        user_agent: str = "fleetsched",
        field_manager: str | None = None,
    ) -> None:
        self.connection = connection
        self.limiter = TokenBucket(qps, burst)
        self.field_manager = field_manager
        self.max_retries = MAX_RETRIES
        self.retry_after_max = RETRY_AFTER_MAX
        # Called right before a write is sent (after any wait for the rate limiter); it may raise
        # to stop the write. Sharded controllers re-check ownership there (runtime.py).
        self.write_guard: Callable[[], None] | None = None
        # Called after each HTTP request (not watch streams) with (method, host, code, seconds); code
        # is the status, or "<error>" when no answer came, as client-go's rest_client_* metrics say.
        self.observe_request: Callable[[str, str, str, float], None] | None = None
        self._host = urlsplit(connection.server).netloc
        # The one source of the Authorization header, the TLS context (with any client certificate,
        # also when ``insecure``) and the dialer (proxy, TLS server name), for requests and watches.
        self.credentials = Credentials(connection)
        self._generation = self.credentials.generation
        self._authorization: str | None = None
        headers = {"User-Agent": user_agent, "Accept": "application/json"}
        self._http = http1.Http1Pool(
            connection.server,
            ssl_context=self.credentials.ssl_context(),
            headers=headers,
            dial=self.credentials.dial,
        )
        # watches (``stream``) keep aiohttp: one long request each
        self._session = aiohttp.ClientSession(
            base_url=None,
            headers=headers,
            connector=aiohttp.TCPConnector(limit=100, keepalive_timeout=60),
            timeout=aiohttp.ClientTimeout(total=60, connect=10),
            json_serialize=lambda o: orjson.dumps(o).decode(),
        )

    @property
    def field_manager(self) -> str | None:
        return self._field_manager

    @field_manager.setter
    def field_manager(self, value: str | None) -> None:
        # The query of a write without parameters, built once (it is the same for every write).
        self._field_manager = value
        self._manager_query = f"?{urlencode({'fieldManager': value})}" if value else ""

    async def close(self) -> None:
        await self._http.close()
        await self._session.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        decode: bool = True,
        max_body: int | None = None,
    ) -> JsonObject:
        """The answer's JSON object; ``decode=False`` skips reading a successful answer (``{}``),
        for a caller that does not use it (an Event's echo). An error answer raises ``ApiError``;
        ``max_body``: see ``http1.Limits.body``."""
        sends = method in BODY_METHODS
        if params:
            query = dict(params)
            if self.field_manager and sends:
                query.setdefault("fieldManager", self.field_manager)
            target = f"{path}?{urlencode(query)}"
        else:
            target = path + self._manager_query if sends else path
        # orjson: bindings are several KiB of JSON each way, and stdlib json was a tenth of the
        # operator's CPU in the bench.
        data = None if body is None else orjson.dumps(body)
        retries = 0
        while True:
            await self.limiter.acquire()
            if self.write_guard is not None and method in WRITE_METHODS:
                self.write_guard()
            response = await self._send(method, target, data, content_type, max_body=max_body)
            status = response.status
            if 200 <= status < 300:
                break
            wait = _retry_wait(response) if retries < self.max_retries else None
            if wait is None:
                raise _api_error(response)
            retries += 1
            log.info("kube_request_retry", method=method, path=path, status=status,
                     retry_after=wait, attempt=retries)
            await asyncio.sleep(min(wait, self.retry_after_max))
        if not decode:
            return {}
        raw = response.body
        if not raw:
            return {}
        try:
            payload: Any = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise http1.ProtocolError(f"{method} {path}: a {status} answer that is no JSON: {exc}") from None
        if isinstance(payload, dict):
            return payload
        if isinstance(payload, list):
            return {"items": payload}
        raise http1.ProtocolError(f"{method} {path}: a {status} answer that is no JSON object")

    async def _send(
        self, method: str, target: str, data: bytes | None, content_type: str, *, max_body: int | None = None
    ) -> http1.Response:
        """One request with the current credentials; a 401 (or an authorizer's 403) is sent once more
        when renewing the credentials changed them (a request refused by authentication or
        authorization was not carried out). The answer is recorded in ``credentials.health``."""
        credentials = self.credentials
        for attempt in range(2):
            authorization = await credentials.authorization()
            self._apply(authorization)
            response = await self._observed(method, target, data, content_type, max_body)
            renewed = attempt == 0 and response.status in (401, 403)
            if not (renewed and await credentials.renew(response.status, authorization)):
                break
        if response.status in (401, 403) or credentials.health.refusing:
            verb, resource = describe(method, target)
            credentials.health.observe(response.status, verb, resource, response.body)
        return response

    async def _observed(
        self, method: str, target: str, data: bytes | None, content_type: str, max_body: int | None
    ) -> http1.Response:
        if self.observe_request is None:
            return await self._http.request(method, target, data, content_type, max_body=max_body)
        started, code = time.monotonic(), "<error>"
        try:
            response = await self._http.request(method, target, data, content_type, max_body=max_body)
            code = str(response.status)
            return response
        finally:
            self.observe_request(method, self._host, code, time.monotonic() - started)

    def _apply(self, authorization: str | None) -> None:
        """Bring the pool up to date: the Authorization header, no idle connection of an old TLS context."""
        if authorization != self._authorization:
            self._authorization = authorization
            self._http.set_header("Authorization", authorization)
        context = self.credentials.ssl_context()  # the client certificate files checked, when due
        generation = self.credentials.generation
        if generation != self._generation:
            self._generation = generation
            self._http.ssl_context = context
            self._http.drop_idle()

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> JsonObject:
        return await self.request("GET", path, params=params)

    async def create(self, path: str, body: JsonObject, *, decode: bool = True) -> JsonObject:
        return await self.request("POST", path, body=body, decode=decode)

    async def replace(self, path: str, body: JsonObject) -> JsonObject:
        return await self.request("PUT", path, body=body)

    async def merge_patch(self, path: str, patch: JsonObject) -> JsonObject:
        return await self.request("PATCH", path, body=patch, content_type=MERGE_PATCH)

    async def delete(self, path: str) -> JsonObject:
        return await self.request("DELETE", path)

    @contextlib.asynccontextmanager
    async def stream(
        self, path: str, params: Mapping[str, str], *, timeout: aiohttp.ClientTimeout
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """A streaming GET (a watch): yields an iterator over the body's chunks as they arrive.
        A non-2xx answer raises ``ApiError`` before anything is yielded."""
        await self.limiter.acquire()
        credentials = self.credentials
        verb, resource = describe("GET", path, watch=params.get("watch") in ("true", "1"))
        for attempt in range(2):
            authorization = await credentials.authorization()
            context = credentials.ssl_context()
            async with self._session.get(
                self.connection.server + path,
                params=params,
                timeout=timeout,
                headers={"Authorization": authorization} if authorization else None,
                ssl=context if context is not None else True,
                server_hostname=credentials.server_hostname,
                proxy=self.connection.proxy_url,
            ) as response:
                if 200 <= response.status < 300:
                    credentials.health.observe(response.status, verb, resource)
                    yield response.content.iter_any()
                    return
                raw = await _read_at_most(response.content, ERROR_BODY_MAX)
                renewed = attempt == 0 and response.status in (401, 403)
                if renewed and await credentials.renew(response.status, authorization):
                    continue
                credentials.health.observe(response.status, verb, resource, raw)
                raise _api_error(http1.Response(response.status, response.reason or "", raw))

    async def list_all(self, path: str, *, page_size: int = 500) -> tuple[list[JsonObject], str]:
        """LIST with pagination; returns the items and the list's resourceVersion. A page over
        ``MAX_PAGE`` is asked for again with half the ``limit`` (see ``MAX_PAGE``)."""
        items: list[JsonObject] = []
        cont = ""
        while True:
            params = {"limit": str(page_size), **({"continue": cont} if cont else {})}
            try:
                page = await self.request("GET", path, params=params, max_body=MAX_PAGE)
            except http1.AnswerTooLarge:
                if page_size <= 1:
                    raise
                page_size //= 2
                log.warning("kube_list_page_too_large", path=path, retry_limit=page_size)
                continue
            items.extend(page.get("items", []))
            cont = page.get("metadata", {}).get("continue")
            if not cont:
                return items, page.get("metadata", {}).get("resourceVersion", "")


ERROR_BODY_MAX = 64 * 1024  # what is read of a watch's error answer (a Status object)


def _retry_wait(response: http1.Response) -> float | None:
    """Seconds to wait before sending again, as client-go's ``checkWait``: a 429, or a 5xx with
    Retry-After, whose Retry-After is whole seconds. None: do not send again."""
    status = response.status
    if status != 429 and status < 500:
        return None
    value = response.retry_after
    if value is None or not value.isdigit() or len(value) > 6:
        return None
    return float(value)


def _api_error(response: http1.Response) -> ApiError:
    raw = response.body
    text = bytes(raw[:4096]).decode("utf-8", "replace")
    payload: Any = {}
    if raw[:1] == b"{":
        with contextlib.suppress(orjson.JSONDecodeError):
            payload = orjson.loads(raw)
    reason = payload.get("reason", "") if isinstance(payload, dict) else ""
    message = payload.get("message", text) if isinstance(payload, dict) else text
    if not isinstance(payload, dict):
        payload = {}
    return ApiError(response.status, str(reason or response.reason or ""), str(message), payload)


async def _read_at_most(content: aiohttp.StreamReader, limit: int) -> bytes:
    data = bytearray()
    while len(data) < limit:
        piece = await content.read(limit - len(data))
        if not piece:
            break
        data += piece
    return bytes(data)
