"""A small asynchronous Kubernetes REST client for the operator's reads, writes, Leases, Events and
watch streams (``stream``, which ``watch.py`` builds on).

It is an aiohttp session with the credentials from a kubeconfig (or the in-cluster service
account), a client-side token-bucket limiter (``--kube-api-qps`` / ``--kube-api-burst``, as
client-go's), JSON merge patches, and errors that keep the API's status code and reason so callers
can tell a 409 Conflict from the rest.

It must not know about bindings or scheduling.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson

from fleetsched.kube import http1

JsonObject = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})  # the writes that take a fieldManager


@dataclass(frozen=True, slots=True)
class Connection:
    """Where the API is and how to authenticate; loaded once at start-up."""

    server: str
    ca_path: str | None = None
    certificate_path: str | None = None
    private_key_path: str | None = None
    token: str | None = None
    insecure: bool = False


def load_connection(kubeconfig: str | None) -> Connection:
    """Read ``kubeconfig`` (its current context), or the in-cluster config when it is None."""
    from kubernetes import client, config  # imported here: only needed once at start-up

    configuration = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    else:
        config.load_incluster_config(client_configuration=configuration)
    token = None
    # kubernetes' loaders keep the bearer token under "BearerToken" (kubeconfig token users and the
    # in-cluster ServiceAccount token); older releases used "authorization".
    api_key = configuration.api_key or {}
    authorization = api_key.get("BearerToken") or api_key.get("authorization")
    if authorization:
        token = authorization.removeprefix("Bearer ").strip()
    return Connection(
        server=configuration.host.rstrip("/"),
        ca_path=configuration.ssl_ca_cert,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
        token=token,
        insecure=not configuration.verify_ssl,
    )


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


def _insecure(connection: Connection) -> ssl.SSLContext | None:
    """An https connection without verification (``insecure``), with the client certificate if any."""
    if not connection.server.startswith("https"):
        return None
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if connection.certificate_path and connection.private_key_path:
        context.load_cert_chain(connection.certificate_path, connection.private_key_path)
    return context


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
        # Called right before a write is sent (after any wait for the rate limiter); it may raise
        # to stop the write. Sharded controllers re-check ownership there (runtime.py).
        self.write_guard: Callable[[], None] | None = None
        context: ssl.SSLContext | bool
        if connection.server.startswith("https"):
            if connection.insecure:
                context = False
            else:
                context = ssl.create_default_context(cafile=connection.ca_path)
                if connection.certificate_path and connection.private_key_path:
                    context.load_cert_chain(connection.certificate_path, connection.private_key_path)
        else:
            context = False
        headers = {"User-Agent": user_agent, "Accept": "application/json"}
        if connection.token:
            headers["Authorization"] = f"Bearer {connection.token}"
        self._http = http1.Http1Pool(
            connection.server,
            ssl_context=context if isinstance(context, ssl.SSLContext) else _insecure(connection),
            headers=headers,
        )
        # watches (``stream``) keep aiohttp: one long request each
        self._session = aiohttp.ClientSession(
            base_url=None,
            headers=headers,
            connector=aiohttp.TCPConnector(ssl=context, limit=100, keepalive_timeout=60),
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
    ) -> JsonObject:
        """The answer's JSON object; ``decode=False`` skips reading a successful answer (``{}``),
        for a caller that does not use it (an Event's echo). An error answer raises ``ApiError``."""
        await self.limiter.acquire()
        if self.write_guard is not None and method in WRITE_METHODS:
            self.write_guard()
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
        response = await self._http.request(method, target, data, content_type)
        raw = response.body
        if response.status < 400 and not decode:
            return {}
        payload: Any = orjson.loads(raw) if raw[:1] in (b"{", b"[") else {}
        if response.status >= 400:
            text = raw.decode("utf-8", "replace")
            reason = payload.get("reason", "") if isinstance(payload, dict) else ""
            message = payload.get("message", text) if isinstance(payload, dict) else text
            raise ApiError(response.status, reason or response.reason or "", message, payload)
        return payload if isinstance(payload, dict) else {"items": payload}

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
        async with self._session.get(
            self.connection.server + path, params=params, timeout=timeout
        ) as response:
            if response.status >= 400:
                raw = await response.read()
                payload: Any = orjson.loads(raw) if raw[:1] == b"{" else {}
                text = raw.decode("utf-8", "replace")
                raise ApiError(
                    response.status,
                    payload.get("reason", "") or response.reason or "",
                    payload.get("message", text),
                    payload,
                )
            yield response.content.iter_any()

    async def list_all(self, path: str, *, page_size: int = 500) -> tuple[list[JsonObject], str]:
        """LIST with pagination; returns the items and the list's resourceVersion."""
        items: list[JsonObject] = []
        params = {"limit": str(page_size)}
        while True:
            page = await self.get(path, params)
            items.extend(page.get("items", []))
            cont = page.get("metadata", {}).get("continue")
            if not cont:
                return items, page.get("metadata", {}).get("resourceVersion", "")
            params = {"limit": str(page_size), "continue": cont}
