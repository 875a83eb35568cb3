"""Watching a collection the way client-go's reflector does, on the client's own HTTP session.

``Watch`` keeps one handler told of every object of one collection (e.g.
``/apis/work.karmada.io/v1alpha2/resourcebindings``):

1. LIST (paginated); each listed object is handed over with the event type None, as kopf hands
   over listed objects. After a relist, the objects known before and missing from the new list
   are handed over as DELETED (client-go's ``Replace`` does the same), so nothing deleted while
   the watch was broken stays behind in a cache.
2. WATCH from the list's resourceVersion with bookmarks; each ADDED, MODIFIED or DELETED event is
   handed over as it arrives. Every event and bookmark moves the resourceVersion forward.
3. When the server ends the request (``timeoutSeconds``) or the connection drops, the next WATCH
   resumes from the last resourceVersion seen. A 410 Gone (the version was compacted away), as an
   answer or as an ERROR event, means LIST again.
4. Failed attempts are retried with an exponential backoff (``WatchSettings``); a request that
   receives nothing for ``inactivity_timeout`` is taken as dead, so the watch never goes blind.
   A stream that breaks its framing (aiohttp's parser refuses it), answers anything but 2xx, or
   sends an event line over ``MAX_EVENT_LINE`` is a failed attempt too.

Options for a consumer that keeps a store of its own (the estimator's node and pod index):

* ``params``: query parameters of both the LIST and the WATCH (``fieldSelector``, ``labelSelector``),
  e.g. only the pods not in a terminal phase.
* ``replace``: client-go's ``Replace``. Each LIST (the first and every relist) is handed over whole,
  once, to ``replace`` instead of object by object: the consumer replaces its store with it, so
  what vanished while the watch was broken is dropped there (no synthetic DELETED events, and the
  watch keeps no set of keys). The watch events still go to ``handler``.
* ``digest``: with ``replace``, applied to each listed object as its page arrives; ``replace`` gets
  the digests. A 50,000-pod LIST is never held whole, only one page and the digests.
* ``on_connected`` (after each LIST handed over and each WATCH the server accepted) and
  ``on_failed`` (each failed attempt, before the backoff): for a consumer that reports whether its
  view is live (the estimator's readiness).

A handler that raises is logged (``event_handler_failed``) and the watch goes on, as kopf does.
``run_watches`` runs several until a stop flag and says when all of them have listed once.

Per event this does what the operator needs and no more: split the stream into lines, one
``orjson.loads``, an optional ``skip_version`` asked before parsing (a controller skips the echoes
of its own writes by the resourceVersion their answers carried: a resourceVersion names one write
of one object), an optional ``transform`` (e.g. dropping ``metadata.managedFields``, which no
controller here reads), the handler call. It must not know about bindings or scheduling.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import structlog

from fleetsched.kube import http1
from fleetsched.kube.client import ApiError, JsonObject, KubeClient
from fleetsched.kube.http1 import ProtocolError

log = structlog.get_logger("fleetsched.watch")

EventFn = Callable[[str | None, JsonObject], None]
Transform = Callable[[JsonObject], JsonObject]
# ``replace`` mode: what is kept of each listed object, and the whole LIST handed over at once
Digest = Callable[[JsonObject], Any]
Replace = Callable[[list[Any]], None]

GONE = 410
# The longest watch event line read: one event holds one object, at most the apiserver's 3 MiB
# request limit as JSON (etcd keeps 1.5 MiB), so 16 MiB is never met by a genuine event; a stream
# that sends more without a newline is broken, and the watch starts again.
MAX_EVENT_LINE = 16 * http1.MiB


@dataclass(frozen=True, slots=True)
class WatchSettings:
    """Timeouts and backoff of every watch (the values the operators used with kopf)."""

    # ``timeoutSeconds`` of each WATCH request: the server ends it cleanly after this
    server_timeout: int = 300
    # the whole request, a little over the server's own end
    client_timeout: float = 330.0
    # nothing received for this long: the connection is taken as dead and the watch resumes
    inactivity_timeout: float = 360.0
    connect_timeout: float = 10.0
    # client-go's reflector backoff: 800 ms doubling up to 30 s
    backoff_initial: float = 0.8
    backoff_max: float = 30.0
    page_size: int = 500


class Gone(Exception):
    """The resourceVersion to resume from is too old (410): LIST again."""


def strip_managed_fields(obj: JsonObject) -> JsonObject:
    """A ``transform`` dropping ``metadata.managedFields`` (often most of an object's bytes)."""
    metadata = obj.get("metadata")
    if metadata is not None:
        metadata.pop("managedFields", None)
    return obj


_VERSION_FIELD = b'"resourceVersion":"'


def _probe_version(line: bytes) -> str | None:
    """The object's resourceVersion read off a MODIFIED event's line without parsing it: its first
    ``"resourceVersion":"`` is metadata's, as the API server writes keys in sorted order
    (apiVersion, kind, metadata, spec, ...) and nothing in metadata before it holds such a key
    (a quote inside a string value is escaped, so none matches). None when unsure."""
    if not line.startswith(b'{"type":"MODIFIED"'):
        return None
    start = line.find(_VERSION_FIELD)
    if start < 0:
        return None
    start += len(_VERSION_FIELD)
    end = line.find(b'"', start, start + 24)
    if end < 0:
        return None
    version = line[start:end]
    return version.decode("ascii") if version.isdigit() else None


def _object_key(obj: JsonObject) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return metadata.get("namespace") or "", metadata.get("name") or ""


class Watch:
    """LIST + WATCH of ``path`` into ``handler``; see the module docstring."""

    def __init__(
        self,
        client: KubeClient,
        path: str,
        handler: EventFn,
        *,
        api_version: str,
        kind: str,
        settings: WatchSettings | None = None,
        transform: Transform | None = None,
        skip_version: Callable[[str], bool] | None = None,
        listed: tuple[str, Iterable[JsonObject]] | None = None,
        params: Mapping[str, str] | None = None,
        replace: Replace | None = None,
        digest: Digest | None = None,
        on_connected: Callable[[], None] | None = None,
        on_failed: Callable[[Exception], None] | None = None,
    ) -> None:
        """``listed``: (resourceVersion, items) of a LIST of ``path`` the caller already made and
        handled (its initial sync): the watch starts from there instead of listing again. The other
        options are described in the module docstring."""
        if digest is not None and replace is None:
            raise ValueError("digest: only with replace (the digests are handed to it)")
        self.client = client
        self.path = path
        self.handler = handler
        self.api_version = api_version
        self.kind = kind
        self.settings = settings or WatchSettings()
        self.transform = transform
        self.skip_version = skip_version
        self.params = dict(params or {})
        self.replace = replace
        self.digest = digest
        self.on_connected = on_connected
        self.on_failed = on_failed
        self.resource_version: str | None = None
        self.listed = asyncio.Event()  # set once the first LIST was handed over
        self._known: set[tuple[str, str]] = set()
        self._log = log.bind(resource=path)
        if listed is not None:
            version, items = listed
            if replace is None:
                self._known = {_object_key(obj) for obj in items}
            self.resource_version = version
            self.listed.set()

    async def run(self) -> None:
        """Until cancelled."""
        delay = self.settings.backoff_initial
        while True:
            try:
                if self.resource_version is None:
                    await self._list()
                    self.listed.set()
                    self._notify(self.on_connected)
                await self._watch()
                delay = self.settings.backoff_initial  # a clean end of the request: resume at once
            except Gone:
                self._log.info("watch_relist", reason="resourceVersion too old (410 Gone)")
                self.resource_version = None
            except (ApiError, aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
                self._log.warning("watch_failed", error=str(exc) or repr(exc), retry_in=round(delay, 2))
                self._notify(self.on_failed, exc)
                await asyncio.sleep(delay * (1 + random.random() * 0.2))
                delay = min(delay * 2, self.settings.backoff_max)

    def _notify(self, hook: Callable[..., None] | None, *args: Any) -> None:
        if hook is not None:
            try:
                hook(*args)
            except Exception:  # a consumer's bookkeeping must not stop the watch
                self._log.exception("watch_hook_failed", hook=getattr(hook, "__name__", repr(hook)))

    async def _pages(self) -> AsyncIterator[tuple[list[JsonObject], str]]:
        """The LIST of ``path`` (with ``params``) page by page, each with the list's resourceVersion."""
        query = {**self.params, "limit": str(self.settings.page_size)}
        while True:
            page = await self.client.get(self.path, query)
            metadata = page.get("metadata") or {}
            yield page.get("items") or [], str(metadata.get("resourceVersion") or "")
            token = metadata.get("continue")
            if not token:
                return
            query = {**self.params, "limit": str(self.settings.page_size), "continue": token}

    async def _list(self) -> None:
        if self.replace is not None:
            await self._list_replace(self.replace)
            return
        if self.params:
            items, version = [], ""
            async for page, page_version in self._pages():
                items.extend(page)
                version = page_version
        else:
            items, version = await self.client.list_all(self.path, page_size=self.settings.page_size)
        known_before, self._known = self._known, set()
        for obj in items:
            obj.setdefault("apiVersion", self.api_version)
            obj.setdefault("kind", self.kind)
            self._known.add(_object_key(obj))
            self._deliver(None, obj)
        for namespace, name in sorted(known_before - self._known):
            metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
            gone = {"apiVersion": self.api_version, "kind": self.kind, "metadata": metadata}
            self._deliver("DELETED", gone)
        self.resource_version = version

    async def _list_replace(self, replace: Replace) -> None:
        """One LIST handed to ``replace`` whole (digested page by page): the consumer's Replace."""
        kept: list[Any] = []
        version = ""
        async for page, page_version in self._pages():
            version = page_version
            for obj in page:
                obj.setdefault("apiVersion", self.api_version)
                obj.setdefault("kind", self.kind)
                if self.transform is not None:
                    obj = self.transform(obj)
                if self.digest is None:
                    kept.append(obj)
                    continue
                try:
                    kept.append(self.digest(obj))
                except Exception:  # one object the consumer cannot read is left out, not the list
                    self._log.exception("list_digest_failed", object=_object_key(obj))
        try:
            replace(kept)
        except Exception:  # as for event handlers: log, keep watching
            self._log.exception("replace_failed", objects=len(kept))
        self.resource_version = version

    async def _watch(self) -> None:
        settings = self.settings
        params = {
            **self.params,
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version or "",
            "timeoutSeconds": str(settings.server_timeout),
        }
        timeout = aiohttp.ClientTimeout(
            total=settings.client_timeout,
            connect=settings.connect_timeout,
            sock_read=settings.inactivity_timeout,
        )
        try:
            async with self.client.stream(self.path, params, timeout=timeout) as chunks:
                self._notify(self.on_connected)
                await self._read_lines(chunks)
        except ApiError as exc:
            if exc.status == GONE:
                raise Gone from exc
            raise

    async def _read_lines(self, chunks: AsyncIterator[bytes]) -> None:
        """Each line of the stream to ``_on_line``; a line longer than ``MAX_EVENT_LINE`` raises
        ``ProtocolError`` (the watch is retried) instead of growing without end."""
        pending: list[bytes] = []  # the start of a line whose end has not arrived yet
        pending_size = 0
        async for chunk in chunks:
            start = 0
            if pending:
                end = chunk.find(b"\n")
                if end < 0:
                    pending.append(chunk)
                    pending_size += len(chunk)
                    if pending_size > MAX_EVENT_LINE:
                        raise ProtocolError(f"watch event line over {MAX_EVENT_LINE // http1.MiB} MiB")
                    continue
                pending.append(chunk[:end])
                line = b"".join(pending)
                pending, pending_size = [], 0
                if line.strip():
                    self._on_line(line)
                start = end + 1
            end = chunk.find(b"\n", start)
            while end >= 0:
                if end > start:
                    self._on_line(chunk[start:end])
                start = end + 1
                end = chunk.find(b"\n", start)
            if start < len(chunk):
                pending_size = len(chunk) - start
                if pending_size > MAX_EVENT_LINE:
                    raise ProtocolError(f"watch event line over {MAX_EVENT_LINE // http1.MiB} MiB")
                pending = [chunk[start:] if start else chunk]
        line = b"".join(pending)
        if line.strip():
            self._on_line(line)

    def _on_line(self, line: bytes) -> None:
        if self.skip_version is not None:
            version = _probe_version(line)
            if version is not None and self.skip_version(version):
                self.resource_version = version
                return
        event = orjson.loads(line)
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == GONE:
                raise Gone
            raise ApiError(int(obj.get("code") or 500), obj.get("reason", ""), obj.get("message", ""), obj)
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            self.resource_version = version
        if kind == "BOOKMARK":
            return
        if self.replace is None:  # with replace, the consumer's store is the only one
            key = _object_key(obj)
            if kind == "DELETED":
                self._known.discard(key)
            else:
                self._known.add(key)
        self._deliver(kind, obj)

    def _deliver(self, kind: str | None, obj: JsonObject) -> None:
        if self.transform is not None:
            obj = self.transform(obj)
        try:
            self.handler(kind, obj)
        except Exception:  # as kopf does for event handlers: log, keep watching
            self._log.exception("event_handler_failed", event_type=kind)


async def run_watches(watches: Iterable[Watch], *, stop: asyncio.Event, ready: asyncio.Event) -> None:
    """Run ``watches`` until ``stop`` is set; ``ready`` is set once every one has listed. A watch
    that ends on its own (a bug: ``Watch.run`` retries every API failure) ends this too."""
    watches = list(watches)
    tasks = [asyncio.create_task(w.run(), name=f"watch {w.path}") for w in watches]
    stopping = asyncio.create_task(stop.wait())

    async def all_listed() -> None:
        for watch in watches:
            await watch.listed.wait()
        ready.set()

    listing = asyncio.create_task(all_listed())
    try:
        done, _ = await asyncio.wait([stopping, *tasks], return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task is not stopping:
                task.result()  # raises what ended it
                raise RuntimeError(f"{task.get_name()} ended")
    finally:
        for task in (*tasks, stopping, listing):
            task.cancel()
        for task in (*tasks, stopping, listing):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
