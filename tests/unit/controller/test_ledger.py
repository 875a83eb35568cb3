"""The shard group's reservation ledger (controller/scheduler/assume/ledger.py), without a server: its
entry format, and the commit protocol between several replicas over a store with the apiserver's optimistic
concurrency (a replace carrying an older ``metadata.resourceVersion`` is refused with 409). The
real kube-apiserver runs it in tests/e2e/test_overcommit.py."""

from __future__ import annotations

import asyncio
import copy
import random
from typing import Any

import pytest

from fleetsched.api.quantity import parse_quantity
from fleetsched.controller.scheduler.assume.ledger import Ledger, decode_entry, encode_entry, ledger_name
from fleetsched.kube.client import ApiError
from fleetsched.scheduler.assume import AssumeRecord, Reservation
from fleetsched.scheduler.general_estimator import GeneralEstimator
from fleetsched.scheduler.types import (
    AssumedWorkload,
    ClusterInfo,
    Component,
    ReplicaRequirements,
    ResourceSummary,
)

ONE_CPU = ReplicaRequirements(resource_request=(("cpu", parse_quantity("1")),))


def _workload(name: str, replicas: int, cpu: str = "1") -> AssumedWorkload:
    req = ReplicaRequirements(
        resource_request=(("cpu", parse_quantity(cpu)), ("memory", parse_quantity("1Gi")))
    )
    return AssumedWorkload("ns", (Component(name, replicas, req),))


def test_entries_round_trip_and_name_their_base_version() -> None:
    footprints = {"m1": _workload("web", 6, "250m"), "m2": _workload("web", 4, "250m")}
    raw = encode_entry(footprints, 1234.5678, "42")
    assert raw["rv"] == "42" and raw["t"] == 1234.568
    at, decoded = decode_entry(raw)
    assert at == 1234.568 and decoded == footprints
    with pytest.raises((ValueError, KeyError, TypeError)):
        decode_entry({"c": {}})


def test_the_ledger_name_never_collides_with_a_member_lease() -> None:
    assert ledger_name("fleetsched-scheduler") == "fleetsched-scheduler.assume-ledger"
    assert "." not in "fleetsched-scheduler-ledger"  # member names are DNS labels: no dot
    assert ledger_name("Odd_Group") == "odd-group.assume-ledger"


class CasStore:
    """One Lease with resourceVersion preconditions on merge patches, as the apiserver keeps it."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.writes = 0

    async def _pause(self) -> None:
        await asyncio.sleep(random.random() * 0.002)

    async def get(self, path: str) -> dict[str, Any]:
        await self._pause()
        if self.lease is None:
            raise ApiError(404, "NotFound", "not found")
        return copy.deepcopy(self.lease)

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        await self._pause()
        if self.lease is not None:
            raise ApiError(409, "AlreadyExists", "exists")
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.lease)

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        await self._pause()
        if self.lease is None:
            raise ApiError(404, "NotFound", "not found")
        if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")
        annotations = body["metadata"].get("annotations") or {}
        if annotations != (self.lease["metadata"].get("annotations") or {}):
            self.version += 1  # an update that changes nothing keeps its resourceVersion
            self.writes += 1
            self.lease["metadata"]["annotations"] = dict(annotations)
            self.lease["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.lease)


CAPACITY = 20


def _cluster(name: str) -> ClusterInfo:
    summary = ResourceSummary(
        allocatable={"cpu": parse_quantity(str(CAPACITY)), "pods": parse_quantity("1000")},
        allocated={},
        allocating={},
    )
    return ClusterInfo(name=name, resource_summary=summary)


async def _replica(
    index: int, store: CasStore, stop: asyncio.Event, seed: int, placed: dict[str, int]
) -> None:
    """One replica: its own record, decisions of 1-6 cpu on one of two clusters, each reserved
    locally, committed to the ledger, then 'written' (placed counts it)."""
    rng = random.Random(seed * 31 + index)
    record = AssumeRecord(300)
    ledger = Ledger(store, record, namespace="ns", group="g", member=f"g-r{index}", batch_seconds=0.001)  # type: ignore[arg-type]
    runner = asyncio.create_task(ledger.run(stop))
    clusters = {name: _cluster(name) for name in ("m1", "m2")}
    estimator = GeneralEstimator()

    def free(name: str) -> int:
        return estimator.max_available_replicas([record.overlaid(clusters[name])], ONE_CPU)[0]

    async def decide(n: int) -> None:
        key = f"ns/r{index}-b{n}"
        name = rng.choice(("m1", "m2"))
        want = rng.randint(1, 6)
        version = record.version
        await asyncio.sleep(rng.random() * 0.003)  # the core's time: others commit meanwhile
        if want > free(name):
            return
        footprints = {name: _workload(key, want)}

        def take(against: int) -> Reservation | None:
            return record.reserve(key, footprints, against=against, fits=lambda c: want <= free(c))

        reservation = take(version)
        if reservation is None:
            return
        held = await ledger.commit(key, footprints, reservation, take, base="1")
        if held is None:
            return
        placed[name] = placed.get(name, 0) + want  # the write: every replica's share of the truth

    await asyncio.gather(*(decide(n) for n in range(25)))
    stop.set()
    await runner


@pytest.mark.parametrize("seed", range(12))
def test_replicas_committing_through_the_ledger_never_overcommit(seed: int) -> None:
    random.seed(seed)
    store = CasStore()
    placed: dict[str, int] = {}

    async def main() -> None:
        stops = [asyncio.Event() for _ in range(3)]
        await asyncio.gather(*(_replica(i, store, stops[i], seed, placed) for i in range(3)))

    asyncio.run(main())
    assert all(v <= CAPACITY for v in placed.values()), placed
    # the burst asked for far more than fits: the ledger did not just refuse everything
    assert sum(placed.values()) >= CAPACITY, placed
    assert store.writes > 0


def test_without_the_ledger_the_same_replicas_overcommit() -> None:
    """The control: the same decisions, each replica checking only its own record."""
    overcommitted = 0
    for seed in range(12):
        rng = random.Random(seed)
        placed: dict[str, int] = {}
        records = [AssumeRecord(300) for _ in range(3)]
        for n in range(75):
            record = records[n % 3]
            name = rng.choice(("m1", "m2"))
            want = rng.randint(1, 6)
            free = GeneralEstimator().max_available_replicas([record.overlaid(_cluster(name))], ONE_CPU)[0]
            if want <= free:
                record.observe_schedule(f"ns/b{n}", {name: _workload(f"b{n}", want)})
                placed[name] = placed.get(name, 0) + want
        overcommitted += any(v > CAPACITY for v in placed.values())
    assert overcommitted == 12
