"""Leases (coordination.k8s.io/v1): the one place fleetsched reads and writes them.

Two uses, both with client-go leader election's timings and rules:

* **The leader Lease** (``LeaderElector``): one holder among the replicas.

  - A candidate tries to acquire or renew every ``retry_period`` (2 s, with client-go's 1.2 jitter
    while acquiring). It may take the Lease when nobody holds it, or when the record it last saw
    has not changed for the record's ``leaseDurationSeconds`` (15 s) *by the candidate's own
    clock*: the holder's ``renewTime`` is never compared with the local clock, so clock skew does
    not matter.
  - The leader renews every ``retry_period``; when it has not managed to renew for
    ``renew_deadline`` (10 s) it stops leading, which leaves 5 s before a standby may take over.
  - Updates carry the ``resourceVersion`` read just before, so two candidates cannot both win.
  - On shutdown the leader releases the Lease (empty holder, 1 s duration) so a standby takes
    over at once instead of after 15 s.

* **Member Leases** (``MemberLease``, sharded mode): every replica holds its own Lease, named
  after itself and labelled with its group (``GROUP_LABEL``); what the group's Leases mean
  (membership, ownership) is the controller runtime's (``controller/runtime/shard.py``).

  - Each write carries the writing process's random ``INSTANCE_ANNOTATION``. A renewal answered
    409 is re-read: our own instance there means a renewal of ours that timed out did land (or
    someone edited the metadata), and the renewal is retried at once; another instance means
    another process renews the same member Lease (two replicas started with one
    ``--shard-identity``): ``DuplicateIdentity`` is raised and the caller stops writing.
  - A Lease found at start carrying another instance (a previous run of this replica killed
    without deleting it, or a live duplicate) is taken over by a conditional update;
    ``renew()`` says so, and the caller waits a renew deadline before owning anything, by when
    the previous writer, dead or alive, has stopped writing (fencing), and, if alive, has found
    the Lease renewed by someone else.

**Bounds on what others wrote** (a Lease is an unauthenticated record anyone with the RBAC may
write): a ``leaseDurationSeconds`` that is not an integer in ``1..MAX_LEASE_DURATION_SECONDS``
(300 s) is not believed: a peer's member Lease with it is ignored, a leader Lease with it is
treated as having the candidate's own duration. A member Lease whose ``holderIdentity`` is not
its own name is ignored. Our own timings are refused above the same bound (``check_timings``),
so the bound never rejects a Lease fleetsched wrote.

This module knows Leases, not controllers: what "leading" or "owning" means is up to the caller,
which watches ``is_leader`` / ``leading`` (or the membership built on ``MemberLease``) and must
check it before each write.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import random
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

from fleetsched.kube.client import ApiError, KubeClient

log = structlog.get_logger("fleetsched.lease")

JITTER_FACTOR = 1.2
# The longest leaseDurationSeconds believed in a Lease someone else wrote (and allowed in ours).
MAX_LEASE_DURATION_SECONDS = 300
GROUP_LABEL = "scheduler.fleetsched.io/shard-group"
INSTANCE_ANNOTATION = "scheduler.fleetsched.io/holder-instance"


def check_timings(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """client-go's rules for a Lease's timings (leader and member Leases alike), plus our bound on
    the duration; ValueError if broken."""
    if not lease_duration > renew_deadline:
        raise ValueError("leaseDuration must be greater than renewDeadline")
    if not renew_deadline > JITTER_FACTOR * retry_period:
        raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
    if lease_duration > MAX_LEASE_DURATION_SECONDS:
        raise ValueError(f"leaseDuration must be at most {MAX_LEASE_DURATION_SECONDS}s")


def micro_time(now: datetime.datetime) -> str:
    """Kubernetes MicroTime text: RFC 3339 with microseconds, UTC."""
    return now.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def duration_seconds(spec: dict[str, Any]) -> int | None:
    """The spec's ``leaseDurationSeconds`` when it is believable (an integer within
    ``1..MAX_LEASE_DURATION_SECONDS``); None when absent or out of bounds."""
    value = spec.get("leaseDurationSeconds")
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 1 <= value <= MAX_LEASE_DURATION_SECONDS else None


def member_lease_problem(lease: dict[str, Any]) -> str | None:
    """Why a peer's member Lease is not believed (one line), or None. A released Lease (empty
    holder) is no problem: it simply is not a live member."""
    meta = lease.get("metadata") or {}
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity") or ""
    if holder and holder != meta.get("name"):
        return f"spec.holderIdentity {str(holder)[:80]!r} is not the Lease's name"
    if duration_seconds(spec) is None:
        value = str(spec.get("leaseDurationSeconds"))[:40]
        return f"spec.leaseDurationSeconds {value} is not an integer in 1..{MAX_LEASE_DURATION_SECONDS}"
    return None


def instance_of(lease: dict[str, Any]) -> str:
    """The process that last wrote the Lease, as its ``INSTANCE_ANNOTATION`` says ('' if none)."""
    return str(((lease.get("metadata") or {}).get("annotations") or {}).get(INSTANCE_ANNOTATION) or "")


def new_instance() -> str:
    """This process's writer id: host, pid and 8 random hex characters (unique across restarts)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"


# ---- the API -------------------------------------------------------------------------------------


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


class LeaseStore(Protocol):
    """Reads and writes one Lease object (JSON form). Raises ApiError(409) on a stale update."""

    async def get(self) -> dict[str, Any] | None: ...
    async def create(self, lease: dict[str, Any]) -> dict[str, Any]: ...
    async def replace(self, lease: dict[str, Any]) -> dict[str, Any]: ...


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


class MemberLeaseStore(Protocol):
    """The group's member Leases (JSON form). ``replace`` raises ApiError(409) on a stale
    resourceVersion; ``delete`` with a resourceVersion is conditional on it (409 otherwise)."""

    async def get(self, name: str) -> dict[str, Any] | None: ...
    async def create(self, lease: dict[str, Any]) -> dict[str, Any]: ...
    async def replace(self, lease: dict[str, Any]) -> dict[str, Any]: ...
    async def list(self) -> list[dict[str, Any]]: ...
    async def delete(self, name: str, resource_version: str | None) -> None: ...


@dataclass
class ApiMemberLeaseStore(LeaseApi):
    """The member Leases through the API server (LIST by the group label)."""

    group: str = ""

    async def get(self, name: str) -> dict[str, Any] | None:
        return await self.get_named(name)

    async def list(self) -> list[dict[str, Any]]:
        page = await asyncio.wait_for(
            self.client.get(self.collection, {"labelSelector": f"{GROUP_LABEL}={self.group}"}), self.timeout
        )
        return list(page.get("items") or [])

    async def delete(self, name: str, resource_version: str | None) -> None:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if resource_version:
            body["preconditions"] = {"resourceVersion": resource_version}
        try:
            await asyncio.wait_for(
                self.client.request("DELETE", f"{self.collection}/{name}", body=body), self.timeout
            )
        except ApiError as exc:
            if not exc.is_not_found:
                raise


# ---- the leader Lease ----------------------------------------------------------------------------


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


def lease_failure_hint(exc: BaseException, verb: str, namespace: str) -> str:
    """What an operator does about a Lease request that failed: the right to grant, the namespace
    to create, or nothing to do (a conflict is another replica's turn, a network error passes)."""
    status = getattr(exc, "status", None)
    if status in (401, 403):
        return (
            f"grant this identity {verb} (and get, create, update) on leases.coordination.k8s.io "
            f"in namespace {namespace}"
        )
    if status == 404 and verb == "create":
        return f"namespace {namespace} does not exist: create it, or point the Lease flags at another"
    if status == 409:
        return "another replica wrote the Lease first; retried"
    return "retried"



# How often the same Lease failure is logged again while it lasts.
FAILURE_LOG_PERIOD = 60.0


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
    _unbelieved: Any = None  # the last out-of-bounds duration logged (logged once per value)
    _failure_logged: tuple[str, str, float] | None = None  # (verb, error, when): repeats are quiet

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
            self._failed("get", exc)
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
                self._failed("create", exc)
                return False
            self._observe(desired_spec, now)
            self._last_renew = now
            self._failure_logged = None
            return True

        spec = dict(current.get("spec") or {})
        if spec != self._observed_spec:
            self._observe(spec, now)
        holder = spec.get("holderIdentity") or ""
        duration = self._duration(spec)
        held_by_other = holder != "" and holder != self.config.identity
        if held_by_other and self._observed_time + duration > now:
            return False
        if holder == self.config.identity:
            desired_spec["acquireTime"] = spec.get("acquireTime", desired_spec["acquireTime"])
            desired_spec["leaseTransitions"] = _int_or_zero(spec.get("leaseTransitions"))
        else:
            desired_spec["leaseTransitions"] = _int_or_zero(spec.get("leaseTransitions")) + 1
        body = dict(current)
        body["spec"] = desired_spec
        try:
            self._lease = await self.store.replace(body)
        except (ApiError, OSError, TimeoutError) as exc:
            self._failed("update", exc)
            return False
        self._observe(desired_spec, now)
        self._last_renew = now
        self._failure_logged = None
        return True

    def _failed(self, verb: str, exc: BaseException) -> None:
        """One warning naming the Lease, its namespace and what to do; the same failure again is
        logged at most once a minute (a missing right fails every retry period), a 409 at info."""
        error = str(exc) or repr(exc)
        now = self.clock()
        last = self._failure_logged
        if last is not None and last[:2] == (verb, error) and now - last[2] < FAILURE_LOG_PERIOD:
            return
        self._failure_logged = (verb, error, now)
        level = log.info if getattr(exc, "status", None) == 409 else log.warning
        level(
            f"lease_{verb}_failed",
            lease=f"{self.config.namespace}/{self.config.name}",
            identity=self.config.identity,
            error=error,
            hint=lease_failure_hint(exc, verb, self.config.namespace),
        )

    def _duration(self, spec: dict[str, Any]) -> float:
        """The record's duration; ours when it has none or one out of bounds (logged once)."""
        if spec.get("leaseDurationSeconds") is None:
            return self.config.lease_duration
        seconds = duration_seconds(spec)
        if seconds is not None:
            return float(seconds)
        value = spec.get("leaseDurationSeconds")
        if value != self._unbelieved:
            self._unbelieved = value
            log.warning(
                "leader_lease_duration_ignored",
                lease=f"{self.config.namespace}/{self.config.name}",
                holder=str(spec.get("holderIdentity") or "")[:80],
                lease_duration_seconds=str(value)[:40],
                reason=f"not an integer in 1..{MAX_LEASE_DURATION_SECONDS}; "
                f"{self.config.lease_duration:g}s is used instead",
            )
        return self.config.lease_duration

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


def _int_or_zero(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# ---- this replica's member Lease -------------------------------------------------------------------


class DuplicateIdentity(Exception):
    """Our member Lease was written by another process since we last wrote it."""

    def __init__(self, *, name: str, namespace: str, other: str) -> None:
        self.name, self.namespace, self.other = name, namespace, other
        super().__init__(
            f"member Lease {namespace}/{name} is renewed by another process "
            f"({other or 'no instance annotation'}): two replicas run with one identity"
        )


@dataclass
class MemberLease:
    """One replica's own member Lease: create, renew, take over, delete."""

    name: str
    namespace: str
    group: str
    lease_duration: int
    store: MemberLeaseStore
    instance: str = field(default_factory=new_instance)
    wall_clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC)
    # the Lease as our last write left it; None before the first write and after a conflict
    lease: dict[str, Any] | None = None

    async def renew(self) -> str | None:
        """Create or renew the Lease. Returns the instance (or '' when unnamed) whose Lease was
        taken over, None otherwise; raises DuplicateIdentity when another process wrote it since
        our last write (or won a race to create or take it), ApiError/OSError on failures."""
        spec = self._spec()
        if self.lease is None:
            current = await self.store.get(self.name)
            if current is None:
                try:
                    self.lease = await self.store.create(self._body(None, spec))
                    return None
                except ApiError as exc:
                    if not exc.is_conflict:
                        raise
                    current = await self._reread_own()  # our timed-out create, or another's
            elif instance_of(current) != self.instance:
                return await self._take_over(current, spec)
            self.lease = current
        try:
            self.lease = await self.store.replace(self._body(self.lease, spec))
        except ApiError as exc:
            self.lease = None
            if exc.is_not_found:  # deleted under us (collected while we were stopped): again
                self.lease = await self.store.create(self._body(None, spec))
            elif exc.is_conflict:
                current = await self._reread_own()
                self.lease = await self.store.replace(self._body(current, spec))
            else:
                raise
        return None

    async def _reread_own(self) -> dict[str, Any]:
        """After a 409: the current Lease if our own instance wrote it last; DuplicateIdentity
        if another did. ApiError(404) when it is gone (the next round creates it)."""
        current = await self.store.get(self.name)
        if current is None:
            raise ApiError(404, "NotFound", f"member Lease {self.namespace}/{self.name} vanished")
        if instance_of(current) != self.instance:
            raise DuplicateIdentity(name=self.name, namespace=self.namespace, other=instance_of(current))
        return current

    async def _take_over(self, current: dict[str, Any], spec: dict[str, Any]) -> str:
        previous = instance_of(current)
        try:
            self.lease = await self.store.replace(self._body(current, spec))
        except ApiError as exc:
            if exc.is_conflict:  # renewed between our read and our write: someone is alive
                raise DuplicateIdentity(
                    name=self.name, namespace=self.namespace, other=previous
                ) from exc
            raise
        return previous

    async def delete(self) -> None:
        """Delete the Lease as we last wrote it (conditional on that resourceVersion)."""
        if self.lease is None:
            return
        version = (self.lease.get("metadata") or {}).get("resourceVersion")
        await self.store.delete(self.name, version)
        self.lease = None

    def _spec(self) -> dict[str, Any]:
        wall = micro_time(self.wall_clock())
        return {
            "holderIdentity": self.name,
            "leaseDurationSeconds": self.lease_duration,
            "acquireTime": wall,
            "renewTime": wall,
        }

    def _body(self, current: dict[str, Any] | None, spec: dict[str, Any]) -> dict[str, Any]:
        if current is None:
            return {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": self.name,
                    "namespace": self.namespace,
                    "labels": {GROUP_LABEL: self.group},
                    "annotations": {INSTANCE_ANNOTATION: self.instance},
                },
                "spec": spec,
            }
        body = dict(current)
        meta = dict(body.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), INSTANCE_ANNOTATION: self.instance}
        meta["labels"] = {**(meta.get("labels") or {}), GROUP_LABEL: self.group}
        body["metadata"] = meta
        old_spec = body.get("spec") or {}
        ours = instance_of(current) == self.instance and old_spec.get("holderIdentity") == self.name
        if ours and old_spec.get("acquireTime"):
            spec = {**spec, "acquireTime": old_spec["acquireTime"]}
        body["spec"] = spec
        return body
