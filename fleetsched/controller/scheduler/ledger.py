"""The shard group's reservation ledger: where sharded replicas agree on in-flight capacity.

Every replica derives the assume record from the bindings it watches, but a replica deciding a
burst has dozens of decisions that the others cannot see until their writes arrive: measured on a
10 x 100 cpu burst, three replicas each stayed within capacity on their own and together handed out
1,110-1,500 cpu of 1,000. The ledger closes that window with the one point of agreement Kubernetes
offers, optimistic concurrency on one object:

* one Lease per shard group, ``<group>.assume-ledger`` in the member Leases' namespace (the members'
  RBAC already covers it; the name has a dot, which no member Lease name has), whose annotation
  ``ledger.fleetsched.io/<member>`` lists that member's decisions not yet written;
* a decision that passed Reserve is committed there **before** its binding is written: the
  replica's pending decisions of a few milliseconds go in one replace of the Lease, conditional on
  the resourceVersion it last saw (group commit). Each answer carries the others' entries, which join
  the record as remote assumptions (``AssumeRecord.observe_remote``);
* on 409 the replica reads the ledger again, takes in what the others committed meanwhile, and
  takes each of its pending decisions again against the record as it is now: those that no longer
  fit are refused (their workers decide again), the rest are committed at the new version.

So commits are totally ordered by the Lease's resourceVersion, and each was checked against every
commit before it. A replica's entry leaves the ledger after its write (at its next commit or flush);
the others keep what they took in until the write arrives through their watch (then the derived
assumption replaces it) or ``REMOTE_TTL`` passes (the replica died between commit and write).
Remote entries carry the per-replica resource requests only (no node claim or priority class): they
live for the milliseconds between a commit and the write's watch event.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from fleetsched.api.quantity import format_canonical, parse_quantity
from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.shard import member_name
from fleetsched.kube.client import ApiError, KubeClient
from fleetsched.scheduler.assume import AssumeRecord, Release, Reservation
from fleetsched.scheduler.types import AssumedWorkload, Component, ReplicaRequirements

log = structlog.get_logger("fleetsched.ledger")

__all__ = ["Ledger", "decode_entry", "encode_entry", "ledger_name"]

ANNOTATION_PREFIX = "ledger.fleetsched.io/"
REMOTE_TTL = 30.0  # an entry older than this is ignored (its replica died between commit and write)
BATCH_SECONDS = 0.002  # group commit: the decisions of this long go in one write
FLUSH_SECONDS = 0.5  # how often a replica with entries to drop writes the ledger when idle
# A written decision stays in the ledger this long after its write, so every other replica has its
# write through the watch before the entry goes (an entry that goes while still only in the ledger
# for another replica is released there).
WRITTEN_GRACE = 3.0
MAX_ATTEMPTS = 20  # conflicts in a row before the batch is refused (its workers decide again)

Take = Callable[[int], Reservation | None]


def ledger_name(group: str) -> str:
    """The ledger Lease's name: the group's member-name form plus ``.assume-ledger`` (a dot, which
    no member Lease name has)."""
    return f"{member_name(group, '')}.assume-ledger"


def encode_entry(footprints: Mapping[str, AssumedWorkload], at: float, base: str = "") -> dict[str, Any]:
    """A decision's footprints as the ledger holds them: when, the binding's resourceVersion it was
    decided from, the namespace, each component's per-replica requests once, and per cluster each
    component's replicas."""
    namespace = ""
    requests: dict[str, dict[str, str]] = {}
    clusters: dict[str, list[list[Any]]] = {}
    for cluster, workload in footprints.items():
        namespace = workload.namespace
        parts = []
        for c in workload.components:
            if c.replica_requirements is not None and c.name not in requests:
                requests[c.name] = {
                    name: format_canonical(q.value_exact, q.format)
                    for name, q in c.replica_requirements.resource_request
                }
            parts.append([c.name, c.replicas])
        clusters[cluster] = parts
    return {"t": round(at, 3), "rv": base, "ns": namespace, "q": requests, "c": clusters}


def decode_entry(raw: Mapping[str, Any]) -> tuple[float, dict[str, AssumedWorkload]]:
    """The inverse of ``encode_entry``; ValueError (or KeyError/TypeError) on anything else."""
    at = float(raw["t"])
    namespace = str(raw.get("ns") or "")
    requirements = {
        str(name): ReplicaRequirements(
            resource_request=tuple(sorted((str(r), parse_quantity(str(v))) for r, v in request.items()))
        )
        for name, request in (raw.get("q") or {}).items()
    }
    footprints = {
        str(cluster): AssumedWorkload(
            namespace, tuple(Component(str(n), int(r), requirements.get(str(n))) for n, r in parts)
        )
        for cluster, parts in (raw.get("c") or {}).items()
    }
    return at, footprints


@dataclass(eq=False)
class _Pending:
    key: str
    entry: dict[str, Any]
    reservation: Reservation
    take: Take
    # the record's version when the reservation was (last) taken: what it was checked against
    version: int = 0
    done: asyncio.Future[Reservation | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Ledger:
    """One replica's side of the ledger (sharded mode with SchedulingOvercommitProtection)."""

    def __init__(
        self,
        client: KubeClient,
        record: AssumeRecord,
        *,
        namespace: str,
        group: str,
        member: str,
        clock: Callable[[], float] = time.time,
        batch_seconds: float = BATCH_SECONDS,
        seen_version: Callable[[str], int | None] = lambda key: None,
    ) -> None:
        self.client = client
        self.record = record
        self.member = member
        self.annotation = ANNOTATION_PREFIX + member
        self.name = ledger_name(group)
        self.namespace = namespace
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{self.name}"
        self.clock = clock
        self.batch_seconds = batch_seconds
        # the resourceVersion of the binding as this replica's cache holds it (None: not cached)
        self.seen_version = seen_version
        # key -> entry of this replica's committed decisions (a pending one joins only with its batch,
        # so nothing reaches the ledger unchecked against what the others committed before it)
        self._own: dict[str, dict[str, Any]] = {}
        self._written: dict[str, float] = {}  # key -> when its write ended (kept WRITTEN_GRACE longer)
        self._pending: list[_Pending] = []
        self._version: str | None = None
        self._lease: dict[str, Any] | None = None  # the Lease as last read or written
        self._seen: dict[str, dict[str, Any]] = {}  # another member -> its entries as last taken in
        self._wake = asyncio.Event()
        self._dirty = False

    # ---- the workers' side -------------------------------------------------------------------

    async def commit(
        self,
        key: str,
        footprints: Mapping[str, AssumedWorkload],
        reservation: Reservation,
        take: Take,
        *,
        base: str = "",
    ) -> Reservation | None:
        """Commit a reserved decision before its write. Returns the reservation that holds it now
        (taken again after a conflict), or None: it no longer fits what the others committed first
        (the reservation is given back; decide again)."""
        pending = _Pending(
            key, encode_entry(footprints, self.clock(), base), reservation, take, self.record.version
        )
        self._pending.append(pending)
        self._wake.set()
        return await pending.done

    def written(self, key: str, *, failed: bool = False) -> None:
        """The binding's write is over: its entry leaves the ledger ``WRITTEN_GRACE`` later (at
        once when the write failed: nobody will see it)."""
        if key not in self._own:
            return
        if failed:
            self._own.pop(key, None)
            self._written.pop(key, None)
            self._dirty = True
            self._wake.set()
        else:
            self._written[key] = self.clock()

    def _drop_written(self) -> None:
        """Entries written more than ``WRITTEN_GRACE`` ago leave ``_own`` (and the next write)."""
        now = self.clock()
        for key, at in list(self._written.items()):
            if at + WRITTEN_GRACE <= now:
                del self._written[key]
                self._own.pop(key, None)
                self._dirty = True

    # ---- the committer -----------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        log.info("assume_ledger_started", ledger=f"{self.namespace}/{self.name}", member=self.member)
        try:
            await self._run(stop)
        finally:  # stopped or cancelled: nobody waits forever; what was not committed is decided again
            self._refuse(self._pending)
            self._pending = []

    async def _run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=FLUSH_SECONDS)
            except TimeoutError:
                self._drop_written()
                if not self._dirty:
                    if self.record.remote_keys():
                        await self._poll()  # others' entries held here: see them go
                    continue
            self._wake.clear()
            if self._pending and self.batch_seconds:
                await asyncio.sleep(self.batch_seconds)
            batch, self._pending = self._pending, []
            self._drop_written()
            if not batch and not self._dirty:
                continue
            try:
                await self._commit(batch)
            except Exception as exc:
                # Never unchecked: the batch is refused (its workers decide again, then back off).
                log.warning("ledger_commit_failed", ledger=self.name, error=str(exc) or repr(exc))
                metrics.LEDGER_WRITES.labels("error").inc()
                self._version = None  # read afresh next time
                self._refuse(batch)
            except BaseException:
                self._refuse(batch)
                raise

    def _refuse(self, batch: list[_Pending]) -> None:
        for item in batch:
            if not item.done.done():
                self.record.unreserve(item.reservation)
                item.done.set_result(None)

    async def _commit(self, batch: list[_Pending]) -> None:
        for _ in range(MAX_ATTEMPTS):
            if self._version is None:
                await self._read()
            # What this write will say was checked against everything committed up to the version
            # it is conditional on: decisions taken before the last take-in are taken again.
            batch = self._take_again(batch)
            entries = {**self._own, **{item.key: item.entry for item in batch}}
            # A replace (PUT) of the whole Lease as last seen: conditional on its resourceVersion by
            # nature, and covered by the members' "update" on Leases (no "patch" needed).
            assert self._lease is not None
            body = json.loads(json.dumps(self._lease))
            meta = body.setdefault("metadata", {})
            stale = self._stale_members()
            annotations = {
                name: text for name, text in (meta.get("annotations") or {}).items() if name not in stale
            }
            if entries:
                annotations[self.annotation] = json.dumps(entries, separators=(",", ":"))
            else:
                annotations.pop(self.annotation, None)
            meta["annotations"] = annotations
            meta["resourceVersion"] = self._version
            try:
                answer = await self.client.replace(self.path, body)
            except ApiError as exc:
                if exc.is_conflict:
                    metrics.LEDGER_WRITES.labels("conflict").inc()
                    await self._read()
                    continue
                if exc.is_not_found:
                    self._version = None
                    continue
                raise
            metrics.LEDGER_WRITES.labels("success").inc()
            self._dirty = False
            self._take_in(answer)
            for item in batch:
                self._own[item.key] = item.entry
                item.done.set_result(item.reservation)
            return
        log.warning("ledger_conflicts_exhausted", ledger=self.name, attempts=MAX_ATTEMPTS, batch=len(batch))
        self._refuse(batch)

    def _take_again(self, batch: list[_Pending]) -> list[_Pending]:
        """Each pending decision whose clusters changed since it was taken (others' commits taken
        in, or other local decisions) taken again against the record as it is now; those that no
        longer fit are refused and leave the batch."""
        kept = []
        for item in batch:
            if not any(self.record.changed_since(c, item.version) for c in item.reservation.clusters):
                kept.append(item)
                continue
            self.record.unreserve(item.reservation, counted=False)
            again = item.take(item.version)
            if again is None:
                self.record.count_release(Release.UNRESERVED, len(item.reservation.clusters))
                item.done.set_result(None)
                continue
            item.reservation = again
            item.version = self.record.version
            kept.append(item)
        return kept

    async def _poll(self) -> None:
        try:
            await self._read()
        except Exception as exc:  # the next poll or commit tries again
            log.warning("ledger_read_failed", ledger=self.name, error=str(exc) or repr(exc))

    async def _read(self) -> None:
        try:
            lease = await self.client.get(self.path)
        except ApiError as exc:
            if not exc.is_not_found:
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": {},
            }
            try:
                lease = await self.client.create(
                    f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases", body
                )
            except ApiError as created:
                if not created.is_already_exists:
                    raise
                lease = await self.client.get(self.path)
        self._take_in(lease)

    def _take_in(self, lease: Mapping[str, Any]) -> None:
        """The others' entries of ``lease``: new or changed ones join the record as remote."""
        meta = lease.get("metadata") or {}
        self._version = meta.get("resourceVersion")
        self._lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {k: v for k, v in meta.items() if k != "managedFields"},
            "spec": lease.get("spec") or {},
        }
        now = self.clock()
        annotations = meta.get("annotations") or {}
        for name in [n for n in self._seen if n not in annotations]:
            for key in self._seen[name]:
                self.record.release_remote(key)
            self._seen[name] = {}  # its replica has nothing in flight
        for name, text in annotations.items():
            if not name.startswith(ANNOTATION_PREFIX) or name == self.annotation:
                continue
            try:
                entries = json.loads(text)
            except ValueError:
                continue
            before = self._seen.get(name, {})
            if entries == before:
                continue
            self._seen[name] = entries
            for key in before:
                if key not in entries:  # its owner dropped it: written long enough ago, or never
                    self.record.release_remote(key)
            for key, raw in entries.items():
                if before.get(key) == raw:
                    continue  # taken in already (and maybe released since, by its write or health)
                try:
                    at, footprints = decode_entry(raw)
                except (ValueError, KeyError, TypeError) as exc:
                    log.warning("ledger_entry_unreadable", member=name, binding=key, error=str(exc))
                    continue
                if at + REMOTE_TTL < now or self._written_since(key, raw):
                    self.record.release_remote(key)
                    continue
                self.record.observe_remote(key, footprints, expires_at=at + REMOTE_TTL)

    def _written_since(self, key: str, raw: Mapping[str, Any]) -> bool:
        """Whether this replica's cache holds the binding at a newer resourceVersion than the one
        the entry's decision was made from (its write, or a later change, arrived already)."""
        seen = self.seen_version(key)
        try:
            base = int(raw.get("rv") or 0)
        except (TypeError, ValueError):
            return False
        return seen is not None and base > 0 and seen > base

    def _stale_members(self) -> dict[str, None]:
        """Annotations of members whose newest entry is older than twice ``REMOTE_TTL`` (gone)."""
        now = self.clock()
        out: dict[str, None] = {}
        for name, entries in list(self._seen.items()):
            newest = max(
                (float(e.get("t") or 0) for e in entries.values() if isinstance(e, dict)), default=0.0
            )
            if entries and newest + 2 * REMOTE_TTL < now:
                out[name] = None
                del self._seen[name]
        return out
