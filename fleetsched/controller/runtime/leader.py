"""Lease-based leader election (coordination.k8s.io/v1) with client-go's semantics and timings.

* A candidate tries to acquire or renew every ``retry_period`` (2 s, with client-go's 1.2 jitter
  while acquiring). It may take the Lease when nobody holds it, or when the record it last saw has
  not changed for the record's ``leaseDurationSeconds`` (15 s) *by the candidate's own clock*: the
  holder's ``renewTime`` is never compared with the local clock, so clock skew does not matter.
* The leader renews every ``retry_period``; when it has not managed to renew for
  ``renew_deadline`` (10 s) it stops leading, which leaves 5 s before a standby may take over.
* Updates carry the ``resourceVersion`` read just before, so two candidates cannot both win.
* On shutdown the leader releases the Lease (empty holder, 1 s duration) so a standby takes over
  at once instead of after 15 s.

Owns the Lease only; what "leading" means (scheduling) is up to the caller, which watches
``is_leader`` / ``leading`` and must check ``is_leader`` before each write.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from fleetsched.kube.client import ApiError, KubeClient

log = structlog.get_logger("fleetsched.leader")

JITTER_FACTOR = 1.2


def check_timings(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """client-go's rules for a Lease's timings (leader and member Leases alike); ValueError if broken."""
    if not lease_duration > renew_deadline:
        raise ValueError("leaseDuration must be greater than renewDeadline")
    if not renew_deadline > JITTER_FACTOR * retry_period:
        raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    name: str
    namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        check_timings(self.lease_duration, self.renew_deadline, self.retry_period)
        if not self.identity:
            raise ValueError("leader election identity must not be empty")


class LeaseStore(Protocol):
    """Reads and writes one Lease object (JSON form). Raises ApiError(409) on a stale update."""

    async def get(self) -> dict[str, Any] | None: ...
    async def create(self, lease: dict[str, Any]) -> dict[str, Any]: ...
    async def replace(self, lease: dict[str, Any]) -> dict[str, Any]: ...


@dataclass
class LeaseApi:
    """The Leases of one namespace through the API server, each call bounded by ``timeout``."""

    client: KubeClient
    namespace: str
    timeout: float = 5.0

    @property
    def collection(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases"

    async def get_named(self, name: str) -> dict[str, Any] | None:
        """The Lease called ``name``; None when there is none."""
        try:
            return await asyncio.wait_for(self.client.get(f"{self.collection}/{name}"), self.timeout)
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.wait_for(self.client.create(self.collection, lease), self.timeout)

    async def replace(self, lease: dict[str, Any]) -> dict[str, Any]:
        """Update the Lease named in ``lease`` (conditional on its resourceVersion, if it has one)."""
        name = lease["metadata"]["name"]
        return await asyncio.wait_for(self.client.replace(f"{self.collection}/{name}", lease), self.timeout)


@dataclass
class ApiLeaseStore:
    """The leader Lease through the API server."""

    client: KubeClient
    namespace: str
    name: str
    timeout: float = 5.0

    def __post_init__(self) -> None:
        self._api = LeaseApi(self.client, self.namespace, self.timeout)

    async def get(self) -> dict[str, Any] | None:
        return await self._api.get_named(self.name)

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        return await self._api.create(lease)

    async def replace(self, lease: dict[str, Any]) -> dict[str, Any]:
        body = dict(lease)
        body["metadata"] = {**(lease.get("metadata") or {}), "name": self.name}
        return await self._api.replace(body)


def micro_time(now: datetime.datetime) -> str:
    """Kubernetes MicroTime text: RFC 3339 with microseconds, UTC."""
    return now.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class LeaderElector:
    config: LeaderElectionConfig
    store: LeaseStore
    clock: Callable[[], float] = time.monotonic
    wall_clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC)
    on_started_leading: Callable[[], None] | None = None
    on_stopped_leading: Callable[[], None] | None = None
    on_new_leader: Callable[[str], None] | None = None

    leading: asyncio.Event = field(default_factory=asyncio.Event)
    observed_holder: str = ""
    _observed_spec: dict[str, Any] | None = None
    _observed_time: float = 0.0
    _last_renew: float = 0.0
    _lease: dict[str, Any] | None = None

    @property
    def is_leader(self) -> bool:
        """True while our last successful renewal is younger than the renew deadline."""
        return self.leading.is_set() and self.clock() - self._last_renew < self.config.renew_deadline

    async def try_acquire_or_renew(self) -> bool:
        """One client-go ``tryAcquireOrRenew`` step; True when we hold the Lease afterwards."""
        now_wall = self.wall_clock()
        now = self.clock()
        try:
            current = await self.store.get()
        except (ApiError, OSError, TimeoutError) as exc:
            log.warning("lease_get_failed", error=str(exc))
            return False
        desired_spec: dict[str, Any] = {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": int(self.config.lease_duration),
            "acquireTime": micro_time(now_wall),
            "renewTime": micro_time(now_wall),
            "leaseTransitions": 0,
        }
        if current is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": desired_spec,
            }
            try:
                self._lease = await self.store.create(body)
            except (ApiError, OSError, TimeoutError) as exc:
                log.info("lease_create_failed", error=str(exc))
                return False
            self._observe(desired_spec, now)
            self._last_renew = now
            return True

        spec = dict(current.get("spec") or {})
        if spec != self._observed_spec:
            self._observe(spec, now)
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.config.lease_duration)
        held_by_other = holder != "" and holder != self.config.identity
        if held_by_other and self._observed_time + duration > now:
            return False
        if holder == self.config.identity:
            desired_spec["acquireTime"] = spec.get("acquireTime", desired_spec["acquireTime"])
            desired_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0)
        else:
            desired_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        body = dict(current)
        body["spec"] = desired_spec
        try:
            self._lease = await self.store.replace(body)
        except (ApiError, OSError, TimeoutError) as exc:
            log.info("lease_update_failed", error=str(exc))
            return False
        self._observe(desired_spec, now)
        self._last_renew = now
        return True

    def _observe(self, spec: dict[str, Any], now: float) -> None:
        self._observed_spec = spec
        self._observed_time = now
        holder = spec.get("holderIdentity") or ""
        if holder != self.observed_holder:
            self.observed_holder = holder
            if holder:
                log.info("new_leader_observed", holder=holder)
            if self.on_new_leader is not None and holder:
                self.on_new_leader(holder)

    async def run(self) -> None:
        """Acquire, lead until renewal fails, then go back to acquiring; until cancelled."""
        while True:
            await self._acquire()
            self.leading.set()
            log.info(
                "leadership_acquired",
                lease=f"{self.config.namespace}/{self.config.name}",
                identity=self.config.identity,
            )
            if self.on_started_leading is not None:
                self.on_started_leading()
            try:
                await self._renew_until_lost()
            finally:
                self.leading.clear()
                log.warning("leadership_lost", identity=self.config.identity)
                if self.on_stopped_leading is not None:
                    self.on_stopped_leading()

    async def _acquire(self) -> None:
        while not await self.try_acquire_or_renew():
            await asyncio.sleep(self.config.retry_period * (1 + random.random() * (JITTER_FACTOR - 1)))

    async def _renew_until_lost(self) -> None:
        while True:
            await asyncio.sleep(self.config.retry_period)
            deadline = self._last_renew + self.config.renew_deadline
            while not await self._renew_once(deadline):
                if self.clock() >= deadline:
                    return
                await asyncio.sleep(self.config.retry_period)

    async def _renew_once(self, deadline: float) -> bool:
        remaining = deadline - self.clock()
        if remaining <= 0:
            return False
        try:
            return await asyncio.wait_for(self.try_acquire_or_renew(), remaining)
        except TimeoutError:
            return False

    async def release(self) -> None:
        """Give the Lease up (holder cleared, 1 s duration) if we hold it."""
        if not self.leading.is_set() or self._lease is None:
            return
        self.leading.clear()
        body = dict(self._lease)
        spec = dict(body.get("spec") or {})
        if spec.get("holderIdentity") != self.config.identity:
            return
        now_wall = micro_time(self.wall_clock())
        spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=now_wall, acquireTime=now_wall)
        body["spec"] = spec
        with contextlib.suppress(ApiError, OSError, TimeoutError, asyncio.TimeoutError):
            await self.store.replace(body)
            log.info("leadership_released", identity=self.config.identity)
