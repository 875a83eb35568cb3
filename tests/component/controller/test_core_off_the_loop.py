"""The operator computes off the event loop: probes answer and the Lease is renewed while a binding
computes, and a binding over its budget fails alone (condition, backoff) while the others go on.

The operator runs its real queue, workers, leader election and HTTP endpoints (aiohttp on loopback)
against an in-memory API; the slow binding's core is a stand-in (the real one is fast for any
input we have), CPU-bound pure Python so that it competes with the loop for the GIL.
"""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from fleetsched.controller.runtime.http import start_endpoints, stop_endpoints
from fleetsched.controller.runtime.leader import LeaderElectionConfig, LeaderElector
from fleetsched.controller.scheduler.compute import CoreExecutor
from fleetsched.controller.scheduler.operator import OperatorConfig, SchedulerOperator
from fleetsched.controller.scheduler.store import RB
from fleetsched.kube.client import ApiError, Connection
from fleetsched.scheduler import Scheduler
from tests.support.controlplane import free_port


def merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """RFC 7386 JSON merge patch, in place."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class MemoryApi:
    """GET and merge-PATCH of bindings by path, with resourceVersion preconditions."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, str]] = []
        self.version = 100

    def add(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.version += 1
        meta["resourceVersion"] = str(self.version)
        self.objects[f"/apis/work.karmada.io/v1alpha2/namespaces/{meta['namespace']}/resourcebindings/"
                     f"{meta['name']}"] = obj

    async def get(self, path: str, params: Any = None) -> dict[str, Any]:
        return copy.deepcopy(self.objects[path])

    async def merge_patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        part = "status" if path.endswith("/status") else "spec"
        obj = self.objects[path.removesuffix("/status")]
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != obj["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")
        body = copy.deepcopy(patch)
        body.get("metadata", {}).pop("resourceVersion", None)
        if part == "spec" and "spec" in body:
            obj["metadata"]["generation"] += 1
        merge(obj, body if part == "spec" else {"status": body["status"]})
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.writes.append((obj["metadata"]["name"], part))
        return copy.deepcopy(obj)


class MemoryLeaseStore:
    """One Lease in memory; counts renewals (replace calls)."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.renewals = 0

    async def get(self) -> dict[str, Any] | None:
        return copy.deepcopy(self.lease)

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        self.lease = copy.deepcopy(lease)
        self.lease.setdefault("metadata", {})["resourceVersion"] = "1"
        return copy.deepcopy(self.lease)

    async def replace(self, lease: dict[str, Any]) -> dict[str, Any]:
        self.renewals += 1
        self.lease = copy.deepcopy(lease)
        self.lease["metadata"]["resourceVersion"] = str(self.renewals + 1)
        return copy.deepcopy(self.lease)


def a_binding(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "generation": 1,
            "labels": {"propagationpolicy.karmada.io/permanent-id": "p"},
        },
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": name},
            "replicas": 2,
            "placement": {"clusterAffinity": {"clusterNames": ["m1"]}},
        },
    }


def a_cluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "resourceVersion": "1", "generation": 1},
        "spec": {"syncMode": "Push"},
        "status": {
            "apiEnablements": [
                {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}
            ],
            "resourceSummary": {"allocatable": {"pods": "100"}},
        },
    }


class SlowFor:
    """A scheduler whose ``schedule`` spins in pure Python for one binding until ``release`` (or 20 s),
    and is the real core for the others."""

    computes_only = False  # it stands for a core that may not return: never started on the loop

    def __init__(self, slow: str, release: Callable[[], bool]) -> None:
        self.real = Scheduler()
        self.framework = self.real.framework  # the queue order and binding cycle of the real core
        self.slow = slow
        self.release = release
        self.computing = threading.Event()
        self.finished = threading.Event()

    def schedule(self, binding: Any, status: Any, snapshot: Any) -> Any:
        if binding.key == self.slow and not self.finished.is_set():  # spins once, at most 20 s
            self.computing.set()
            end = time.monotonic() + 20
            while not self.release() and time.monotonic() < end:
                sum(i * i for i in range(2_000))  # holds the GIL but for the switch interval
            self.finished.set()
        return self.real.schedule(binding, status, snapshot)


async def until(predicate: Callable[[], bool], *, bound: float = 30.0) -> bool:
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


def condition(api: MemoryApi, name: str) -> dict[str, Any] | None:
    obj = api.objects[f"/apis/work.karmada.io/v1alpha2/namespaces/ns/resourcebindings/{name}"]
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond["type"] == "Scheduled":
            return dict(cond)
    return None


def operator_with(api: MemoryApi, scheduler: Any, *, workers: int, budget: float | None,
                  grace: float = 1.0) -> SchedulerOperator:
    operator = SchedulerOperator(
        client=api,  # type: ignore[arg-type]
        connection=Connection(server="https://unused"),
        scheduler=scheduler,
        config=OperatorConfig(workers=workers),
        compute=CoreExecutor(threads=workers, budget=budget, grace=grace),
    )
    operator.on_cluster_event(None, a_cluster("m1"))
    for obj in api.objects.values():
        operator.on_binding_event(RB, None, copy.deepcopy(obj))
    operator.runtime.synced.set()
    return operator


async def test_probes_and_lease_renewal_stay_live_while_a_binding_computes() -> None:
    api = MemoryApi()
    api.add(a_binding("slow"))
    seen = {"health": 0, "renewals_while_computing": 0}
    slow = SlowFor("ns/slow", lambda: seen["health"] >= 3 and seen["renewals_while_computing"] >= 3)
    operator = operator_with(api, slow, workers=2, budget=None)
    store = MemoryLeaseStore()
    operator.runtime.elector = LeaderElector(
        config=LeaderElectionConfig(name="l", namespace="ns", identity="me", lease_duration=3.0,
                                    renew_deadline=2.0, retry_period=0.1),
        store=store,
    )
    election = asyncio.create_task(operator.runtime.elector.run())
    port = free_port()
    runners = await start_endpoints(operator.ready, health_probe_bind_address=f"127.0.0.1:{port}",
                                    metrics_bind_address="0")
    workers = [asyncio.create_task(operator.runtime.run_worker(i)) for i in range(2)]
    try:
        assert await until(slow.computing.is_set)
        renewals_at_start = store.renewals
        async with aiohttp.ClientSession() as session:
            while not slow.finished.is_set() and seen["health"] < 3:
                async with session.get(f"http://127.0.0.1:{port}/healthz",
                                       timeout=aiohttp.ClientTimeout(total=5)) as response:
                    if response.status == 200 and not slow.finished.is_set():
                        seen["health"] += 1
                async with session.get(f"http://127.0.0.1:{port}/readyz",
                                       timeout=aiohttp.ClientTimeout(total=5)) as response:
                    assert response.status == 200, await response.text()
                await asyncio.sleep(0.05)
        assert await until(lambda: store.renewals - renewals_at_start >= 3 or slow.finished.is_set())
        if not slow.finished.is_set():
            seen["renewals_while_computing"] = store.renewals - renewals_at_start
        assert await until(lambda: condition(api, "slow") is not None)
    finally:
        operator.queue.close()
        for task in [*workers, election]:
            task.cancel()
        await asyncio.gather(*workers, election, return_exceptions=True)
        await stop_endpoints(runners)
        assert operator.compute is not None
        operator.compute.close()
    # All of it happened while the slow binding was still computing in its thread.
    assert seen["health"] >= 3
    assert seen["renewals_while_computing"] >= 3
    assert condition(api, "slow")["status"] == "True"  # type: ignore[index]


async def test_a_binding_over_budget_fails_alone_and_backs_off() -> None:
    api = MemoryApi()
    for name in ("slow", "fast-1", "fast-2"):
        api.add(a_binding(name))
    released = threading.Event()
    slow = SlowFor("ns/slow", released.is_set)
    # The stand-in never reaches a checkpoint, so this is the hard stop at the edge.
    operator = operator_with(api, slow, workers=2, budget=0.2, grace=0.0)
    workers = [asyncio.create_task(operator.runtime.run_worker(i)) for i in range(2)]
    try:
        assert await until(lambda: condition(api, "slow") is not None)
        slow_condition = condition(api, "slow")
        # Meanwhile the other worker schedules both other bindings, and the slow one still computes
        # (waited for: on a loaded machine the 0.2 s budget can end before the fast ones are written).
        assert await until(lambda: all(condition(api, n) is not None for n in ("fast-1", "fast-2")))
        assert not slow.finished.is_set()
        assert condition(api, "fast-1")["status"] == "True"  # type: ignore[index]
        assert condition(api, "fast-2")["status"] == "True"  # type: ignore[index]
        assert await until(lambda: operator.queue.sizes().backoff == 1)
        released.set()
        assert await until(slow.finished.is_set)
        await asyncio.sleep(0.2)  # room for a late result to (wrongly) arrive and be written
        writes_of_slow = [part for name, part in api.writes if name == "slow"]
    finally:
        released.set()
        operator.queue.close()
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        assert operator.compute is not None
        operator.compute.close()
    assert slow_condition is not None
    assert slow_condition["status"] == "False"
    assert slow_condition["reason"] == "SchedulerError"
    assert "budget of 0.2s (--scheduling-timeout)" in slow_condition["message"]
    # Only the condition was written for it: the late (successful) result was discarded.
    assert writes_of_slow == ["status"]
    assert "clusters" not in api.objects[
        "/apis/work.karmada.io/v1alpha2/namespaces/ns/resourcebindings/slow"]["spec"]
