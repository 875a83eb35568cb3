"""The estimator's member watches on the reflector, against a loopback API server over real HTTP:
the pods are listed and watched with the non-terminal field selector, the caches sync, and an answer
the reflector cannot read at all (a node list whose metadata is not an object) does not end the
watching: readiness says why, and the watches start again and sync."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from fleetsched.estimator.cache import NodeTable
from fleetsched.estimator.plugins.resource_quota import QuotaStore
from fleetsched.estimator.server import SyncState
from fleetsched.estimator.watch import NON_TERMINAL, LiveWorkloadSource, MemberWatcher
from fleetsched.kube.client import Connection, KubeClient

NODE = {"metadata": {"name": "n1", "resourceVersion": "5"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
POD = {"metadata": {"name": "p1", "namespace": "default", "resourceVersion": "6"},
       "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}


class Member:
    """LISTs of nodes, pods, replicasets and deployments (the first node LIST unreadable when
    ``broken``); every WATCH stays open without events until the test is done."""

    def __init__(self, *, broken: bool) -> None:
        self.broken = broken
        self.queries: dict[str, list[dict[str, str]]] = {}
        self.released = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        self.queries.setdefault(request.path, []).append(query)
        if query.get("watch"):
            response = web.StreamResponse()
            await response.prepare(request)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.released.wait(), 30)
            return response
        if request.path == "/api/v1/nodes" and self.broken:
            self.broken = False
            return web.json_response({"kind": "NodeList", "metadata": ["not", "an", "object"], "items": []})
        items = {"/api/v1/nodes": [NODE], "/api/v1/pods": [POD]}.get(request.path, [])
        return web.json_response({"metadata": {"resourceVersion": "10"}, "items": items})


@contextlib.asynccontextmanager
async def watching(member: Member) -> AsyncIterator[tuple[MemberWatcher, NodeTable, SyncState]]:
    app = web.Application()
    for path in ("/api/v1/nodes", "/api/v1/pods", "/apis/apps/v1/replicasets", "/apis/apps/v1/deployments"):
        app.router.add_get(path, member.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    client = KubeClient(Connection(server=f"http://127.0.0.1:{server.port}"))
    table, state = NodeTable(), SyncState()
    watcher = MemberWatcher(client=client, table=table, quotas=QuotaStore(),
                            workloads=LiveWorkloadSource(client), state=state, watch_quotas=False,
                            retry_max_seconds=0.05)
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    try:
        yield watcher, table, state
    finally:
        stop.set()
        member.released.set()
        await asyncio.wait_for(task, 10)
        await client.close()
        await server.close()


async def until(condition: Any, timeout: float = 10) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


async def test_the_caches_sync_and_pods_are_listed_and_watched_without_terminal_ones() -> None:
    member = Member(broken=False)
    async with watching(member) as (_, table, state):
        await until(lambda: state.synced and state.connected)
        assert table.node_names() == ["n1"] and list(table.pod_keys()) == ["default/p1"]
        await until(lambda: len(member.queries.get("/api/v1/pods", [])) == 2)  # the LIST, then the WATCH
    listed, watched = member.queries["/api/v1/pods"]
    assert listed["fieldSelector"] == watched["fieldSelector"] == NON_TERMINAL
    assert "watch" not in listed and watched["watch"] == "true" and watched["resourceVersion"] == "10"


async def test_an_unreadable_list_restarts_the_watches_instead_of_ending_them() -> None:
    member = Member(broken=True)
    reasons: list[str] = []
    async with watching(member) as (_, table, state):
        await until(lambda: reasons.append(state.reason) or (state.synced and state.connected))
        assert table.node_names() == ["n1"]
    assert any(r.startswith("member apiserver unreachable (") and "'list' object has no attribute" in r
               for r in reasons), reasons
    assert len(member.queries["/api/v1/nodes"]) >= 2  # listed again after the unreadable answer
