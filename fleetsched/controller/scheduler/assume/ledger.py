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

Anyone with the members' Lease rights can write the ledger, and a replica of another version may
share it during a rolling upgrade, so what the others wrote is read defensively: an annotation or
entry that cannot be parsed (``parse_annotation``, ``decode_entry``), of a layout newer than
``VERSION``, of a member that is no live, proven member of the group (``ShardMembership.known``), or
stamped more than ``FUTURE_SKEW`` ahead is skipped for capacity (a commit never fails on it), said
once per member and reason (``ledger_entry_skipped``) and counted
(``fleetsched_scheduler_ledger_entries_skipped_total{reason}``). A readable entry is held
``REMOTE_TTL`` at most from now. Layout 2 keeps a decision over 1,000 Clusters at a few KiB; one
whose entry alone passes ``MAX_ENTRY_BYTES`` is refused (``DecisionTooLarge``, said on the
binding), and a commit that would take the annotations past ``ANNOTATIONS_LIMIT`` refuses its
newest decisions (decided again with backoff).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.shard import member_name
from fleetsched.controller.scheduler.assume.entries import (
    MAX_ENTRY_BYTES,
    SKIP_REASONS,
    UNKNOWN_MEMBER,
    EntryProblem,
    decode_entry,
    encode_entry,
    entry_size,
    entry_stamp,
    parse_annotation,
)
from fleetsched.kube.client import ApiError, KubeClient
from fleetsched.scheduler.assume import AssumeRecord, Release, Reservation
from fleetsched.scheduler.types import AssumedWorkload

log = structlog.get_logger("fleetsched.ledger")

__all__ = [
    "SKIP_REASONS", "DecisionTooLarge", "EntryProblem", "Ledger", "decode_entry", "encode_entry",
    "ledger_name", "parse_annotation",
]

ANNOTATION_PREFIX = "ledger.fleetsched.io/"
REMOTE_TTL = 30.0  # an entry older than this is ignored (its replica died between commit and write)
BATCH_SECONDS = 0.002  # group commit: the decisions of this long go in one write
FLUSH_SECONDS = 0.5  # how often a replica with entries to drop writes the ledger when idle
# A written decision stays in the ledger this long after its write, so every other replica has its
# write through the watch before the entry goes (an entry that goes while still only in the ledger
# for another replica is released there).
WRITTEN_GRACE = 3.0
MAX_ATTEMPTS = 20  # conflicts in a row before the batch is refused (its workers decide again)
ANNOTATIONS_LIMIT = 256 * 1024  # the apiserver's bound on an object's annotations (keys + values)
MAX_LOGGED = 1024  # (member, reason) pairs logged once each; past this, counted only

Take = Callable[[int], Reservation | None]


def ledger_name(group: str) -> str:
    """The ledger Lease's name: the group's member-name form plus ``.assume-ledger`` (a dot, which
    no member Lease name has)."""
    return f"{member_name(group, '')}.assume-ledger"


class DecisionTooLarge(Exception):
    """A decision whose entry alone exceeds ``MAX_ENTRY_BYTES``: it can never be committed, so it
    is refused with this message (the binding's condition) instead of being decided again."""


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
        members: Callable[[], Collection[str] | None] = lambda: None,
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
        # the group's members as the member Leases say (None: not known yet, every member believed)
        self.members = members
        # key -> entry of this replica's committed decisions (a pending one joins only with its batch,
        # so nothing reaches the ledger unchecked against what the others committed before it)
        self._own: dict[str, dict[str, Any]] = {}
        self._written: dict[str, float] = {}  # key -> when its write ended (kept WRITTEN_GRACE longer)
        self._pending: list[_Pending] = []
        self._version: str | None = None
        self._lease: dict[str, Any] | None = None  # the Lease as last read or written
        self._seen: dict[str, dict[str, Any]] = {}  # another member -> its entries as last taken in
        self._skipped: dict[str, str] = {}  # annotation -> its text, skipped whole (counted once)
        self._newest: dict[str, float] = {}  # annotation -> its newest readable stamp (stale check)
        self._logged: set[tuple[str, str]] = set()  # (member, reason) logged already
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
        entry = encode_entry(footprints, self.clock(), base)
        size = entry_size(entry)
        if size > MAX_ENTRY_BYTES:
            self.record.unreserve(reservation)
            log.warning("ledger_decision_too_large", ledger=self.name, binding=key, size=size,
                        limit=MAX_ENTRY_BYTES, clusters=len(footprints))
            raise DecisionTooLarge(
                f"decision too large for the shard group's reservation ledger: its entry takes {size} "
                f"bytes over {len(footprints)} cluster(s), more than {MAX_ENTRY_BYTES}; not scheduled "
                "(SchedulingOvercommitProtection, --shard-mode=lease)"
            )
        pending = _Pending(key, entry, reservation, take, self.record.version)
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
            batch = self._fit(batch, annotations)
            entries = {**self._own, **{item.key: item.entry for item in batch}}
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

    def _fit(self, batch: list[_Pending], annotations: Mapping[str, str]) -> list[_Pending]:
        """The batch less its newest decisions while the Lease's annotations would pass
        ``ANNOTATIONS_LIMIT`` with them (those are refused: decided again, with backoff)."""
        others = sum(
            len(k.encode()) + len(v.encode()) for k, v in annotations.items() if k != self.annotation
        )
        budget = ANNOTATIONS_LIMIT - others - len(self.annotation.encode()) - 2
        used = sum(entry_size(e) + len(json.dumps(k)) + 2 for k, e in self._own.items())
        kept: list[_Pending] = []
        for item in batch:
            size = entry_size(item.entry) + len(json.dumps(item.key)) + 2
            if used + size <= budget:
                used += size
                kept.append(item)
        if len(kept) < len(batch):
            log.warning("ledger_full", ledger=self.name, refused=len(batch) - len(kept), budget=budget)
            self._refuse([item for item in batch if item not in kept])
        return kept

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
            self._forget(name)  # its replica has nothing in flight
        for name in [n for n in (*self._skipped, *self._newest) if n not in annotations]:
            self._skipped.pop(name, None)
            self._newest.pop(name, None)
        known = self.members()
        for name, text in annotations.items():
            if not name.startswith(ANNOTATION_PREFIX) or name == self.annotation:
                continue
            member = name.removeprefix(ANNOTATION_PREFIX)
            try:
                entries = parse_annotation(str(text))
            except EntryProblem as exc:
                self._forget(name)
                self._newest.pop(name, None)
                if self._skipped.get(name) != text:
                    self._skipped[name] = text
                    self._skip(member, exc.reason, str(exc))
                continue
            stamps = [s for s in map(entry_stamp, entries.values()) if s is not None]
            if stamps:
                self._newest[name] = max(stamps)
            else:
                self._newest.pop(name, None)
            if known is not None and member not in known:
                self._forget(name)  # it left the group (or never was in it): nothing of it counts
                if self._skipped.get(name) != text:
                    self._skipped[name] = text
                    reason, error = self._first_problem(entries, now)
                    error = f"{error + '; ' if error else ''}{member} holds no member Lease of the group"
                    first = next(iter(entries), "")
                    self._skip(member, reason, error, binding=first, count=max(len(entries), 1))
                continue
            self._skipped.pop(name, None)
            self._take_member(member, name, entries, now)

    def _take_member(self, member: str, name: str, entries: dict[str, Any], now: float) -> None:
        """One member's entries: new or changed ones join the record as remote, those it dropped
        are released, those that cannot be read are skipped (and said once)."""
        before = self._seen.get(name, {})
        if entries == before:
            return
        self._seen[name] = entries
        for key in before:
            if key not in entries:  # its owner dropped it: written long enough ago, or never
                self.record.release_remote(key)
        for key, raw in entries.items():
            if before.get(key) == raw:
                continue  # taken in already (and maybe released since, by its write or health)
            try:
                at, footprints = decode_entry(raw, now=now)
            except EntryProblem as exc:
                self.record.release_remote(key)
                self._skip(member, exc.reason, str(exc), binding=key)
                continue
            if at + REMOTE_TTL < now or self._written_since(key, raw):
                self.record.release_remote(key)
                continue
            # held REMOTE_TTL at most from now, whatever the stamp (within FUTURE_SKEW) says
            self.record.observe_remote(key, footprints, expires_at=min(at, now) + REMOTE_TTL)

    @staticmethod
    def _first_problem(entries: Mapping[str, Any], now: float) -> tuple[str, str]:
        """The first entry's own problem (reason, message), or (``UNKNOWN_MEMBER``, ''): what a
        non-member's annotation is said with, so a broken entry is named as such wherever it is."""
        for raw in entries.values():
            try:
                decode_entry(raw, now=now)
            except EntryProblem as exc:
                return exc.reason, str(exc)
        return UNKNOWN_MEMBER, ""

    def _forget(self, name: str) -> None:
        """What was taken in from the annotation ``name`` is released."""
        for key in self._seen.pop(name, {}):
            self.record.release_remote(key)

    def _skip(self, member: str, reason: str, error: str, *, binding: str = "", count: int = 1) -> None:
        """An entry (or ``count`` of them) that counts for nothing: counted by reason, and said
        once per member and reason."""
        metrics.LEDGER_SKIPPED.labels(reason).inc(count)
        if (member, reason) in self._logged or len(self._logged) >= MAX_LOGGED:
            return
        self._logged.add((member, reason))
        log.warning(
            "ledger_entry_skipped", ledger=f"{self.namespace}/{self.name}", member=member[:80],
            reason=reason, binding=binding[:120], error=error,
            hint="not counted for capacity; said once per member and reason",
        )

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
        """Annotations of other members whose newest entry is older than twice ``REMOTE_TTL``
        (gone), whether they were taken in or skipped for their member; annotations without a readable
        stamp stay."""
        now = self.clock()
        out: dict[str, None] = {}
        for name, newest in list(self._newest.items()):
            if newest + 2 * REMOTE_TTL < now:
                out[name] = None
                del self._newest[name]
                self._seen.pop(name, None)
                self._skipped.pop(name, None)
        return out
