"""The reflector's options for a consumer with a store of its own (the estimator), against a small
loopback API server speaking the LIST (paginated) and WATCH protocol over real HTTP:

* ``replace``: each LIST, the first and every relist, is handed over whole and once; nothing listed
  goes to the handler and nothing vanished is handed over as DELETED (the consumer replaces);
* ``digest``: applied to each listed object as its page arrives, before the next page is asked for;
  an object it cannot read is left out, not the list;
* ``params``: on every LIST page and on the WATCH;
* ``on_connected`` / ``on_failed``: after a LIST and an accepted WATCH, and on each failed attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from fleetsched.kube import watch
from fleetsched.kube.client import Connection, KubeClient

PATH = "/apis/example.io/v1/widgets"
SETTINGS = watch.WatchSettings(page_size=2, backoff_initial=0.01, backoff_max=0.02)


def widget(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": "1",
                         "managedFields": [{"manager": "m"}]}, "spec": {"size": len(name)}}


class FakeApiServer:
    """Widgets in a dict; LIST pages of ``limit`` with a continue token; each WATCH answers what the
    test queued for it (lines, or a status code), then ends; the last one stays open until the test
    is done. ``trace`` records every request."""

    def __init__(self, names: list[str]) -> None:
        self.objects = {name: widget(name) for name in names}
        self.version = 10
        self.trace: list[str] = []
        self.queries: list[dict[str, str]] = []
        self.watches: list[list[dict[str, Any]] | int] = []
        # run as the WATCH of that index arrives (0 = the first): a change the watch does not see
        self.before_watch: dict[int, Callable[[], None]] = {}
        self._watch_count = 0
        self.list_failures = 0
        self.watching = asyncio.Event()
        self.released = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        self.queries.append(query)
        if query.get("watch"):
            return await self._watch(request, query)
        if self.list_failures:
            self.list_failures -= 1
            self.trace.append("LIST failed")
            return web.json_response({"kind": "Status", "code": 500, "message": "etcd is down"}, status=500)
        names = sorted(self.objects)
        start = int(query.get("continue") or 0)
        limit = int(query["limit"])
        page = names[start:start + limit]
        self.trace.append(f"LIST {','.join(page)}")
        metadata: dict[str, str] = {"resourceVersion": str(self.version)}
        if start + limit < len(names):
            metadata["continue"] = str(start + limit)
        return web.json_response({"kind": "WidgetList", "metadata": metadata,
                                  "items": [self.objects[n] for n in page]})

    async def _watch(self, request: web.Request, query: dict[str, str]) -> web.StreamResponse:
        self.trace.append(f"WATCH from {query['resourceVersion']}")
        change = self.before_watch.get(self._watch_count)
        self._watch_count += 1
        if change is not None:
            change()
        answer = self.watches.pop(0) if self.watches else []
        if isinstance(answer, int):
            return web.json_response({"kind": "Status", "code": answer, "reason": "Expired"}, status=answer)
        response = web.StreamResponse()
        await response.prepare(request)
        for event in answer:
            await response.write(orjson.dumps(event) + b"\n")
        if not self.watches:
            self.watching.set()
            with contextlib.suppress(TimeoutError):  # stays open until the test is done
                await asyncio.wait_for(self.released.wait(), 30)
        return response


@contextlib.asynccontextmanager
async def serving(api: FakeApiServer) -> AsyncIterator[KubeClient]:
    app = web.Application()
    app.router.add_get(PATH, api.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    client = KubeClient(Connection(server=f"http://127.0.0.1:{server.port}"))
    try:
        yield client
    finally:
        api.released.set()
        await client.close()
        await server.close()


@contextlib.asynccontextmanager
async def running(w: watch.Watch) -> AsyncIterator[None]:
    task = asyncio.create_task(w.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def until(condition: Callable[[], bool], timeout: float = 10) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


def a_watch(client: KubeClient, received: list[tuple[str | None, str]], **kwargs: Any) -> watch.Watch:
    return watch.Watch(client, PATH, lambda kind, obj: received.append((kind, obj["metadata"]["name"])),
                       api_version="example.io/v1", kind="Widget", settings=SETTINGS, **kwargs)


async def test_replace_gets_each_list_whole_digested_page_by_page_and_the_events_go_to_the_handler() -> None:
    api = FakeApiServer(["a", "b", "c", "d", "e"])
    replaced: list[list[Any]] = []
    received: list[tuple[str | None, str]] = []

    def digest(obj: dict[str, Any]) -> tuple[str, str, int, bool]:
        api.trace.append(f"digest {obj['metadata']['name']}")
        return obj["kind"], obj["metadata"]["name"], obj["spec"]["size"], "managedFields" in obj["metadata"]

    api.watches = [[{"type": "ADDED", "object": {**widget("f"), "kind": "Widget"}},
                    {"type": "DELETED", "object": {**widget("a"), "kind": "Widget"}}]]
    async with serving(api) as client:
        w = a_watch(client, received, params={"fieldSelector": "spec.size!=0"}, replace=replaced.append,
                    digest=digest, transform=watch.strip_managed_fields)
        async with running(w):
            await until(lambda: len(received) == 2)
    assert api.trace[:9] == ["LIST a,b", "digest a", "digest b", "LIST c,d", "digest c", "digest d",
                             "LIST e", "digest e", "WATCH from 10"]
    assert replaced == [[("Widget", name, 1, False) for name in "abcde"]]  # once, transformed, digested
    assert received == [("ADDED", "f"), ("DELETED", "a")]  # the events only, not the listed objects
    assert all(q.get("fieldSelector") == "spec.size!=0" for q in api.queries)
    assert [q.get("continue") for q in api.queries[:3]] == [None, "2", "4"]
    assert api.queries[3]["watch"] == "true"
    assert w._known == set()  # the consumer's store is the only one


async def test_a_relist_after_410_replaces_whole_and_hands_nothing_over_as_deleted() -> None:
    api = FakeApiServer(["a", "b", "c"])
    replaced: list[list[str]] = []
    received: list[tuple[str | None, str]] = []
    bookmark = {"type": "BOOKMARK", "object": {"kind": "Widget", "metadata": {"resourceVersion": "12"}}}
    api.watches = [[bookmark], 410, []]

    def delete_b_unseen() -> None:
        del api.objects["b"]
        api.version = 20

    api.before_watch[1] = delete_b_unseen  # the WATCH from 12: answered 410 Gone
    async with serving(api) as client:
        w = a_watch(client, received, replace=lambda items: replaced.append(
            [o["metadata"]["name"] for o in items]))
        async with running(w):
            await until(api.watching.is_set)
    assert replaced == [["a", "b", "c"], ["a", "c"]]
    assert received == []  # no synthetic DELETED: the second replace says b is gone
    watches = [t for t in api.trace if t.startswith("WATCH")]
    assert watches == ["WATCH from 10", "WATCH from 12", "WATCH from 20"]


async def test_the_hooks_say_when_the_view_is_live_and_when_an_attempt_failed() -> None:
    api = FakeApiServer(["a"])
    api.list_failures = 2
    api.watches = [[], []]  # a WATCH that ends at once: the next one resumes without a LIST
    seen: list[str] = []

    def connected() -> None:
        seen.append("connected")
        if seen.count("connected") == 1:
            raise RuntimeError("a consumer bug")  # logged; the watch goes on

    async with serving(api) as client:
        w = a_watch(client, [], replace=lambda items: seen.append(f"replace {len(items)}"),
                    on_connected=connected, on_failed=lambda exc: seen.append(f"failed {exc}"))
        async with running(w):
            await until(api.watching.is_set)
            await until(lambda: seen.count("connected") == 3)
    failed = "failed 500 Internal Server Error: etcd is down"
    assert seen == [failed, failed, "replace 1", "connected", "connected", "connected"]  # LIST, 2 WATCHes
    assert [t for t in api.trace if t.startswith("WATCH")] == ["WATCH from 10", "WATCH from 10"]


async def test_an_object_the_digest_cannot_read_is_left_out_not_the_list() -> None:
    api = FakeApiServer(["a", "bad", "c"])
    replaced: list[list[str]] = []

    def digest(obj: dict[str, Any]) -> str:
        name: str = obj["metadata"]["name"]
        if name == "bad":
            raise ValueError("unreadable quantity")
        return name

    async with serving(api) as client:
        w = a_watch(client, [], replace=replaced.append, digest=digest)
        async with running(w):
            await until(api.watching.is_set)
    assert replaced == [["a", "c"]]


async def test_without_replace_params_still_page_and_a_relist_hands_over_what_vanished() -> None:
    api = FakeApiServer(["a", "b", "c"])
    received: list[tuple[str | None, str]] = []
    api.watches = [410]
    async with serving(api) as client:
        w = a_watch(client, received, params={"labelSelector": "app=x"})
        await w._list()
        del api.objects["a"]
        async with running(w):
            await until(api.watching.is_set)
    assert received == [(None, "a"), (None, "b"), (None, "c"), (None, "b"), (None, "c"), ("DELETED", "a")]
    assert all(q.get("labelSelector") == "app=x" for q in api.queries)


def test_a_digest_needs_replace() -> None:
    with pytest.raises(ValueError, match="digest: only with replace"):
        watch.Watch(None, PATH, lambda kind, obj: None, api_version="v1", kind="Widget",  # type: ignore[arg-type]
                    digest=lambda obj: obj)
