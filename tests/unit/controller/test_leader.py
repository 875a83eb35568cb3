"""Lease leader election: client-go acquire/renew/expiry rules on an in-memory Lease store."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
import structlog

from fleetsched.controller.runtime.leader import LeaderElectionConfig, LeaderElector
from fleetsched.kube.client import ApiError


class MemoryLeaseStore:
    """A Lease with resourceVersion checks, like the API server's optimistic concurrency."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.fail = False

    async def get(self) -> dict[str, Any] | None:
        if self.fail:
            raise OSError("apiserver down")
        return copy.deepcopy(self.lease)

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        if self.fail:
            raise OSError("apiserver down")
        if self.lease is not None:
            raise ApiError(409, "AlreadyExists", "exists")
        return self._store(lease)

    async def replace(self, lease: dict[str, Any]) -> dict[str, Any]:
        if self.fail:
            raise OSError("apiserver down")
        assert self.lease is not None
        if lease["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "stale")
        return self._store(lease)

    def _store(self, lease: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        lease = copy.deepcopy(lease)
        lease["metadata"]["resourceVersion"] = str(self.version)
        self.lease = lease
        return copy.deepcopy(lease)

    @property
    def holder(self) -> str:
        return (self.lease or {}).get("spec", {}).get("holderIdentity", "")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def elector(store: MemoryLeaseStore, clock: Clock, identity: str, **timings: float) -> LeaderElector:
    config = LeaderElectionConfig(
        name="fleetsched-scheduler", namespace="karmada-system", identity=identity, **timings
    )
    return LeaderElector(config=config, store=store, clock=clock)


async def test_first_candidate_creates_the_lease_and_second_waits_for_expiry() -> None:
    store, clock = MemoryLeaseStore(), Clock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    assert await a.try_acquire_or_renew()
    assert store.holder == "a"
    assert store.lease is not None and store.lease["spec"]["leaseDurationSeconds"] == 15
    assert not await b.try_acquire_or_renew()  # b starts observing at t=0
    clock.now = 14.9
    assert not await b.try_acquire_or_renew()
    clock.now = 15.1  # a never renewed: the record b observed is 15 s old by b's clock
    assert await b.try_acquire_or_renew()
    assert store.holder == "b"
    assert store.lease["spec"]["leaseTransitions"] == 1


async def test_renewals_keep_the_lease_and_restart_the_standbys_clock() -> None:
    store, clock = MemoryLeaseStore(), Clock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    for t in (2, 4, 6, 8, 10, 12, 14, 16, 18, 20):
        clock.now = t
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
    assert store.lease is not None and store.lease["spec"]["leaseTransitions"] == 0


async def test_renew_deadline_ends_leadership() -> None:
    store, clock = MemoryLeaseStore(), Clock()
    a = elector(store, clock, "a")
    assert await a.try_acquire_or_renew()
    a.leading.set()
    clock.now = 9.9
    assert a.is_leader
    clock.now = 10.0
    assert not a.is_leader  # a write now could race a new leader: callers check this first


async def test_release_lets_a_standby_take_over_after_one_second() -> None:
    store, clock = MemoryLeaseStore(), Clock()
    a, b = elector(store, clock, "a"), elector(store, clock, "b")
    assert await a.try_acquire_or_renew()
    a.leading.set()
    assert not await b.try_acquire_or_renew()
    await a.release()
    assert store.holder == ""
    assert await b.try_acquire_or_renew()  # empty holder: free at once
    assert store.holder == "b"


async def test_run_loop_fails_over_when_the_leader_cannot_renew() -> None:
    store = MemoryLeaseStore()
    timings = {"lease_duration": 0.6, "renew_deadline": 0.4, "retry_period": 0.1}
    a = LeaderElector(
        config=LeaderElectionConfig(name="l", namespace="n", identity="a", **timings), store=store
    )
    task_a = asyncio.create_task(a.run())
    await asyncio.wait_for(a.leading.wait(), 2)
    b = LeaderElector(
        config=LeaderElectionConfig(name="l", namespace="n", identity="b", **timings), store=store
    )
    task_b = asyncio.create_task(b.run())
    await asyncio.sleep(0.8)
    assert a.is_leader and not b.leading.is_set()
    task_a.cancel()  # the leader dies without releasing
    with pytest.raises(asyncio.CancelledError):
        await task_a
    await asyncio.wait_for(b.leading.wait(), 3)
    assert store.holder == "b"
    task_b.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task_b


async def test_leader_steps_down_when_the_apiserver_is_unreachable() -> None:
    store = MemoryLeaseStore()
    config = LeaderElectionConfig(
        name="l", namespace="n", identity="a", lease_duration=0.6, renew_deadline=0.4, retry_period=0.1
    )
    stopped = asyncio.Event()
    a = LeaderElector(config=config, store=store, on_stopped_leading=stopped.set)
    task = asyncio.create_task(a.run())
    await asyncio.wait_for(a.leading.wait(), 2)
    store.fail = True
    await asyncio.wait_for(stopped.wait(), 2)
    assert not a.is_leader
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_timings_are_validated_like_client_go() -> None:
    with pytest.raises(ValueError, match="leaseDuration must be greater than renewDeadline"):
        LeaderElectionConfig(name="l", namespace="n", identity="a", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError, match="renewDeadline must be greater"):
        LeaderElectionConfig(name="l", namespace="n", identity="a", renew_deadline=2, retry_period=2)


class RefusingStore(MemoryLeaseStore):
    """The API server refuses to create the Lease with ``error`` until ``error`` is None."""

    def __init__(self, error: ApiError | None) -> None:
        super().__init__()
        self.error = error

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        return await super().create(lease)


@pytest.mark.parametrize(
    ("error", "hint"),
    [
        (
            ApiError(403, "Forbidden", 'leases.coordination.k8s.io is forbidden: User "x" cannot create'),
            "grant this identity create (and get, create, update) on leases.coordination.k8s.io "
            "in namespace karmada-system",
        ),
        (
            ApiError(404, "NotFound", 'namespaces "karmada-system" not found'),
            "namespace karmada-system does not exist: create it, or point the Lease flags at another",
        ),
    ],
)
async def test_a_refused_lease_is_a_warning_naming_the_namespace_and_what_to_grant(
    error: ApiError, hint: str
) -> None:
    store, clock = RefusingStore(error), Clock()
    a = elector(store, clock, "a")
    with structlog.testing.capture_logs() as logs:
        for _ in range(5):  # every retry period for 20 s: one line, not five
            assert not await a.try_acquire_or_renew()
            clock.now += 4
        clock.now += 60  # a minute on, still refused: said again
        assert not await a.try_acquire_or_renew()
        store.error = None
        assert await a.try_acquire_or_renew()
        store.lease = None
        store.error = error  # refused again after a success: said at once
        assert not await a.try_acquire_or_renew()
    failures = [e for e in logs if e["event"] == "lease_create_failed"]
    assert len(failures) == 3
    assert {e["log_level"] for e in failures} == {"warning"}
    assert failures[0]["lease"] == "karmada-system/fleetsched-scheduler"
    assert failures[0]["identity"] == "a"
    assert failures[0]["hint"] == hint
