"""The assume record: capacity decided onto member clusters but not yet visible in their status.

Karmada's overcommit protection (gate ``SchedulingOvercommitProtection``): per
(binding, cluster) the footprint of the binding's current placement there — the binding's
components, a single-template binding as one synthetic component named after its resource with the
replicas on that cluster — held until that cluster's ``aggregatedStatus`` entry turns Healthy, the
binding is deleted or rescheduled (the new footprint replaces the old; clusters that left are
released), or the binding's TTL passes (5 minutes by default, reset by every new footprint).
The general estimator deducts the footprints (``ClusterInfo.assumed``, laid over a snapshot by
``overlay``); accurate estimators receive them as ``assumedWorkloads``.

Beyond Karmada's per-process cache:

* **Reserve** (``reserve``): a decision remembers the record's version it was computed against
  (``version``); its footprint is taken atomically, and when another decision has since changed a
  target cluster's assumptions, the caller's ``fits`` re-checks that cluster against the record as
  it is now. A placement that no longer fits is refused (the caller decides again), so concurrent
  decisions never hand out the same capacity twice. ``unreserve`` restores what a reservation
  replaced when its write fails.
* **Derived** (``observe_schedule``, ``release_healthy``, ``release``): every replica feeds the
  record from the bindings it watches — other replicas' writes, a previous leader's, its own — so
  sharding and failover share one view of in-flight capacity (``controller/scheduler/assume/feed.py`` reads
  the objects). Sharded replicas' decisions not yet written arrive from the shard group's ledger
  (``observe_remote``, ``controller/scheduler/assume/ledger.py``).

Pure: no Kubernetes client, no I/O. Thread-safe (one lock), although the operator only touches it
from its event loop.
"""

from __future__ import annotations

import dataclasses
import enum
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from fleetsched.scheduler.errors import UnschedulableError
from fleetsched.scheduler.outcome import Condition, ScheduleResult
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import (
    AssumedLoad,
    AssumedWorkload,
    ClusterInfo,
    Component,
    ReplicaRequirements,
    SchedulingBinding,
    TargetCluster,
)

__all__ = [
    "DEFAULT_TTL",
    "AssumeRecord",
    "Release",
    "Reservation",
    "describe",
    "footprint",
    "format_load",
    "human_amount",
    "left_clusters",
    "name_shortfall",
    "newly_healthy",
    "usable_clusters",
]

_NO_LOAD = AssumedLoad()
_CONTRIBUTIONS_LIMIT = 4096
DEFAULT_TTL = 300.0  # Karmada's DefaultAssumptionTTL: 5 minutes
GC_PERIOD = 60.0  # Karmada sweeps expired entries every minute; reads skip them at once


class Release(enum.StrEnum):
    """Why assumptions left the record (the label of the released-assumptions metric)."""

    HEALTHY = "healthy"  # the cluster's aggregatedStatus entry turned Healthy
    RESCHEDULED = "rescheduled"  # a new placement replaced the footprint (clusters that left)
    DELETED = "deleted"  # the binding is gone
    EXPIRED = "expired"  # the TTL passed without a Healthy signal
    UNRESERVED = "unreserved"  # the decision's write failed or a plugin refused it


def footprint(binding: SchedulingBinding, targets: Sequence[TargetCluster]) -> dict[str, AssumedWorkload]:
    """What ``targets`` hold of ``binding`` per cluster (Karmada's updateAssumptionsCache): a
    multi-template binding's components on every target; else one synthetic component named after
    the resource, with the replicas on that cluster and the binding's requirements. Empty for a
    non-workload (never assumed) and for a ClusterResourceBinding (Karmada tracks RBs only)."""
    if binding.kind != "ResourceBinding" or not binding.is_workload():
        return {}
    namespace = binding.resource.namespace
    if binding.components:
        workload = AssumedWorkload(namespace, binding.components)
        return {t.name: workload for t in targets}
    requirements = binding.replica_requirements
    component_requirements = (
        ReplicaRequirements(
            resource_request=requirements.resource_request,
            node_claim=requirements.node_claim,
            priority_class_name=requirements.priority_class_name,
        )
        if requirements is not None
        else None
    )
    return {
        t.name: AssumedWorkload(
            namespace, (Component(binding.resource.name, t.replicas, component_requirements),)
        )
        for t in targets
    }


def left_clusters(binding: SchedulingBinding, targets: Sequence[TargetCluster]) -> list[str]:
    """The binding's current clusters that a new placement (``targets``) no longer has."""
    placed = {t.name for t in targets}
    return list(dict.fromkeys(t.name for t in binding.clusters if t.name not in placed))


def newly_healthy(old: Iterable[tuple[str, bool]], new: Iterable[tuple[str, bool]]) -> list[str]:
    """Clusters whose aggregated status turned Healthy between two versions of a binding, from
    (cluster, healthy) pairs (Karmada's newlyHealthyClusters)."""
    before = {name for name, healthy in old if healthy}
    out: list[str] = []
    for name, healthy in new:
        if healthy and name not in before and name not in out:
            out.append(name)
    return out


@dataclass(slots=True)
class _Binding:
    """One binding's assumptions: per cluster its footprint, and when they all expire."""

    clusters: dict[str, AssumedWorkload]
    expires_at: float
    # The reservation that last set the entry (None: derived from a watched binding).
    reservation: Reservation | None = None
    # Another replica's decision, read from the shard group's ledger before its write arrived.
    remote: bool = False


@dataclass(eq=False, slots=True)
class Reservation:
    """A decision's footprint taken in the record, and what it replaced (for ``unreserve``)."""

    key: str
    previous: _Binding | None
    clusters: tuple[str, ...]
    released: bool = field(default=False)


class AssumeRecord:
    """Per binding key, per cluster: the assumed workloads; per cluster, the version of its set."""

    def __init__(
        self,
        ttl: float = DEFAULT_TTL,
        *,
        clock: Callable[[], float] = time.time,
        on_change: Callable[[Iterable[str]], None] | None = None,
        on_release: Callable[[Release, int], None] | None = None,
    ) -> None:
        if not ttl > 0:
            raise ValueError(f"assumption TTL must be positive, got {ttl}")
        self.ttl = ttl
        self.clock = clock
        self._on_change = on_change
        self._on_release = on_release
        self._lock = threading.RLock()
        self._bindings: dict[str, _Binding] = {}
        self._by_cluster: dict[str, dict[str, AssumedWorkload]] = {}
        # per cluster, what its assumed workloads add up to, kept as entries come and go
        self._loads: dict[str, AssumedLoad] = {}
        self._contributions: dict[AssumedWorkload, AssumedLoad] = {}
        self._changed_at: dict[str, int] = {}  # cluster -> record version of its last change
        self._version = 0
        self._next_expiry = float("inf")
        self._overlaid: dict[str, tuple[ClusterInfo, int, ClusterInfo]] = {}
        self._last_overlay: tuple[object, int, object] | None = None
        self._overlay_dirty: set[str] = set()  # clusters changed since the last overlay

    # ---- reading -----------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Grows with every change; a decision keeps the value it was computed against."""
        return self._version

    def changed_since(self, cluster: str, version: int) -> bool:
        return self._changed_at.get(cluster, 0) > version

    def workloads(self, cluster: str) -> tuple[AssumedWorkload, ...]:
        """The cluster's assumed workloads of every binding (expired ones already swept)."""
        with self._lock:
            self._expire_due()
            return tuple(self._by_cluster.get(cluster, {}).values())

    def bindings(self) -> dict[str, dict[str, AssumedWorkload]]:
        """binding key -> cluster -> footprint (a copy)."""
        with self._lock:
            self._expire_due()
            return {key: dict(entry.clusters) for key, entry in self._bindings.items()}

    def load(self, cluster: str) -> AssumedLoad:
        """What the cluster's assumed workloads add up to (expired ones already swept)."""
        with self._lock:
            self._expire_due()
            return self._loads.get(cluster, _NO_LOAD)

    def count(self, cluster: str) -> int:
        """How many bindings hold assumptions on the cluster."""
        return len(self._by_cluster.get(cluster, ()))

    def clusters(self) -> list[str]:
        with self._lock:
            return [name for name, held in self._by_cluster.items() if held]

    def holds(self, key: str) -> bool:
        return key in self._bindings

    def __len__(self) -> int:
        return len(self._bindings)

    # ---- Karmada's operations -----------------------------------------------------------------

    def observe_schedule(
        self,
        key: str,
        footprints: Mapping[str, AssumedWorkload],
        *,
        left: Iterable[str] = (),
        scheduled_at: float | None = None,
    ) -> None:
        """A placement written (by this process or any other): the clusters that ``left`` it
        released, every cluster of ``footprints`` assumed anew, the binding's TTL restarted from
        ``scheduled_at`` (now when unknown)."""
        with self._lock:
            expires_at = (self.clock() if scheduled_at is None else scheduled_at) + self.ttl
            self._set(key, footprints, left, expires_at, None)

    def observe_remote(
        self, key: str, footprints: Mapping[str, AssumedWorkload], *, expires_at: float
    ) -> bool:
        """Another replica's decision, committed to the shard group's ledger before its write: held
        (replacing whatever the binding held) until its write arrives through the watch (then
        ``observe_schedule`` takes over) or ``expires_at`` (the replica died before writing). A
        placement already written the same way, or a decision of this process, is left alone."""
        with self._lock:
            entry = self._bindings.get(key)
            if entry is not None:
                if entry.reservation is not None:
                    return False
                if entry.clusters == dict(footprints) and (
                    not entry.remote or entry.expires_at >= expires_at
                ):
                    return False
                left = [c for c in entry.clusters if c not in footprints]
            else:
                left = []
            self._set(key, footprints, left, expires_at, None, remote=True)
            return True

    def release_remote(self, key: str) -> int:
        """Another replica dropped a decision from the ledger: released here unless its write
        arrived meanwhile (then the derived assumption stands)."""
        with self._lock:
            entry = self._bindings.get(key)
            if entry is None or not entry.remote:
                return 0
            return self.release(key, Release.UNRESERVED)

    def remote_keys(self) -> list[str]:
        with self._lock:
            return [key for key, entry in self._bindings.items() if entry.remote]

    def release_cluster(self, key: str, cluster: str, reason: Release = Release.HEALTHY) -> bool:
        with self._lock:
            entry = self._bindings.get(key)
            if entry is None or cluster not in entry.clusters:
                return False
            del entry.clusters[cluster]
            self._drop(key, cluster)
            if not entry.clusters:
                del self._bindings[key]
            self._bump((cluster,))
            self._released(reason, 1)
            return True

    def release_healthy(self, key: str, clusters: Iterable[str]) -> int:
        """Karmada's releaseHealthyClusterAssumptions for the clusters that just turned Healthy."""
        return sum(self.release_cluster(key, c, Release.HEALTHY) for c in clusters)

    def release(self, key: str, reason: Release = Release.DELETED) -> int:
        """All of a binding's assumptions (deleted, or no longer a workload)."""
        with self._lock:
            entry = self._bindings.pop(key, None)
            if entry is None:
                return 0
            for cluster in entry.clusters:
                self._drop(key, cluster)
            self._bump(entry.clusters)
            self._released(reason, len(entry.clusters))
            return len(entry.clusters)

    def expire(self, now: float | None = None) -> int:
        """Drop every binding whose TTL has passed (Karmada's GC); the number of bindings dropped."""
        with self._lock:
            now = self.clock() if now is None else now
            expired = [key for key, entry in self._bindings.items() if entry.expires_at < now]
            for key in expired:
                self.release(key, Release.EXPIRED)
            self._next_expiry = min((e.expires_at for e in self._bindings.values()), default=float("inf"))
            return len(expired)

    # ---- Reserve / Unreserve -----------------------------------------------------------------

    def reserve(
        self,
        key: str,
        footprints: Mapping[str, AssumedWorkload],
        *,
        left: Iterable[str] = (),
        against: int,
        fits: Callable[[str], bool],
    ) -> Reservation | None:
        """Take a decision's footprint, computed against the record at version ``against``.

        Every cluster of ``footprints`` whose assumptions changed since then is checked with
        ``fits`` (called under the lock, with the record as it is now); if one no longer fits,
        nothing is taken and None is returned: the caller decides again."""
        with self._lock:
            self._expire_due()
            for cluster in footprints:
                if self.changed_since(cluster, against) and not fits(cluster):
                    return None
            previous = self._bindings.get(key)
            if previous is not None:
                previous = _Binding(
                    dict(previous.clusters), previous.expires_at, previous.reservation, previous.remote
                )
            reservation = Reservation(key, previous, tuple(footprints))
            self._set(key, footprints, left, self.clock() + self.ttl, reservation)
            return reservation

    def unreserve(self, reservation: Reservation, *, counted: bool = True) -> None:
        """Give back what ``reservation`` took, restoring what it replaced — unless a newer
        placement of the binding (a watched write) replaced it already. ``counted`` False: the
        caller takes it again at once (not a release to report)."""
        with self._lock:
            if reservation.released:
                return
            reservation.released = True
            entry = self._bindings.get(reservation.key)
            if entry is None or entry.reservation is not reservation:
                return
            previous = reservation.previous
            touched = set(entry.clusters)
            for cluster in entry.clusters:
                self._drop(reservation.key, cluster)
            del self._bindings[reservation.key]
            if previous is not None and previous.expires_at >= self.clock():
                self._bindings[reservation.key] = previous
                for cluster, workload in previous.clusters.items():
                    self._put(reservation.key, cluster, workload)
                touched |= set(previous.clusters)
                self._next_expiry = min(self._next_expiry, previous.expires_at)
            self._bump(touched)
            if counted:
                self._released(Release.UNRESERVED, len(reservation.clusters))

    def count_release(self, reason: Release, count: int) -> None:
        """Report releases the record did not count itself (an uncounted unreserve not taken again)."""
        self._released(reason, count)

    # ---- the estimators' view ----------------------------------------------------------------

    def overlay(self, snapshot: Snapshot) -> Snapshot:
        """``snapshot`` with every cluster that has assumptions replaced
        by a value carrying them (``ClusterInfo.assumed``). Derived from the last overlay of the
        same snapshot when there is one, so only clusters changed since are new values."""
        assert isinstance(snapshot, Snapshot)
        with self._lock:
            self._expire_due()
            last = self._last_overlay
            if last is not None and last[0] is snapshot and last[1] == self._version:
                return last[2]
            position = snapshot.position()
            if last is not None and last[0] is snapshot:
                base, names = last[2], self._overlay_dirty  # only what changed since
            else:
                base, names = snapshot, set(self._by_cluster)
            assert isinstance(base, Snapshot)
            changes: dict[int, ClusterInfo] = {}
            for name in names:
                i = position.get(name)
                if i is None:
                    continue
                original = snapshot.clusters[i]
                changes[i] = self._overlaid_cluster(original) if self._by_cluster.get(name) else original
            result = base.replaced(changes) if changes else base
            self._last_overlay = (snapshot, self._version, result)
            self._overlay_dirty = set()
            return result

    def overlaid(self, cluster: ClusterInfo) -> ClusterInfo:
        """``cluster`` carrying its current assumptions (itself when it has none)."""
        with self._lock:
            self._expire_due()
            if not self._by_cluster.get(cluster.name):
                return cluster
            return self._overlaid_cluster(cluster)

    def _overlaid_cluster(self, cluster: ClusterInfo) -> ClusterInfo:
        version = self._changed_at.get(cluster.name, 0)
        cached = self._overlaid.get(cluster.name)
        if cached is not None and cached[0] is cluster and cached[1] == version:
            return cached[2]
        value = _with_assumed(
            cluster, tuple(self._by_cluster.get(cluster.name, {}).values()), self._loads.get(cluster.name)
        )
        self._overlaid[cluster.name] = (cluster, version, value)
        return value

    # ---- internals ---------------------------------------------------------------------------

    def _set(
        self,
        key: str,
        footprints: Mapping[str, AssumedWorkload],
        left: Iterable[str],
        expires_at: float,
        reservation: Reservation | None,
        *,
        remote: bool = False,
    ) -> None:
        entry = self._bindings.get(key)
        touched: set[str] = set()
        released = 0
        if entry is not None:
            for cluster in left:
                if cluster in entry.clusters and cluster not in footprints:
                    del entry.clusters[cluster]
                    self._drop(key, cluster)
                    touched.add(cluster)
                    released += 1
        if not footprints:
            if entry is not None and not entry.clusters:
                del self._bindings[key]
            if touched:
                self._bump(touched)
                self._released(Release.RESCHEDULED, released)
            return
        if entry is None:
            entry = self._bindings[key] = _Binding({}, expires_at, reservation)
        entry.expires_at = expires_at
        entry.reservation = reservation
        entry.remote = remote
        for cluster, workload in footprints.items():
            if entry.clusters.get(cluster) != workload:
                entry.clusters[cluster] = workload
                self._put(key, cluster, workload)
                touched.add(cluster)
        self._next_expiry = min(self._next_expiry, expires_at)
        if touched:
            self._bump(touched)
        if released:
            self._released(Release.RESCHEDULED, released)

    def _contribution(self, workload: AssumedWorkload) -> AssumedLoad:
        found = self._contributions.get(workload)
        if found is None:
            if len(self._contributions) >= _CONTRIBUTIONS_LIMIT:
                for old in list(self._contributions)[: _CONTRIBUTIONS_LIMIT // 4]:
                    del self._contributions[old]
            found = self._contributions[workload] = AssumedLoad.of((workload,))
        return found

    def _put(self, key: str, cluster: str, workload: AssumedWorkload) -> None:
        held = self._by_cluster.setdefault(cluster, {})
        old = held.get(key)
        load = self._loads.get(cluster, _NO_LOAD)
        if old is not None:
            load = load.plus(self._contribution(old), -1)
        held[key] = workload
        self._loads[cluster] = load.plus(self._contribution(workload))

    def _drop(self, key: str, cluster: str) -> None:
        held = self._by_cluster.get(cluster)
        if held is None or key not in held:
            return
        old = held.pop(key)
        if not held:
            del self._by_cluster[cluster]
            del self._loads[cluster]  # exactly nothing, whatever rounding the sums went through
        else:
            self._loads[cluster] = self._loads[cluster].plus(self._contribution(old), -1)

    def _bump(self, clusters: Iterable[str]) -> None:
        self._version += 1
        clusters = list(clusters)
        for cluster in clusters:
            self._changed_at[cluster] = self._version
        self._overlay_dirty.update(clusters)
        if self._on_change is not None and clusters:
            self._on_change(clusters)

    def _released(self, reason: Release, count: int) -> None:
        if self._on_release is not None and count:
            self._on_release(reason, count)

    def _expire_due(self) -> None:
        if self._next_expiry < self.clock():
            self.expire()


def _with_assumed(
    cluster: ClusterInfo, assumed: tuple[AssumedWorkload, ...], load: AssumedLoad | None
) -> ClusterInfo:
    return dataclasses.replace(cluster, assumed=assumed, assumed_load=load, memo={})


def _amount(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    milli = value * 1000
    return f"{milli.numerator}m" if milli.denominator == 1 else f"{float(value):g}"


_BINARY_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
# Resources counted in bytes (the kubelet's names): shown in binary units.
_BYTE_RESOURCES = ("memory", "ephemeral-storage", "storage")


def _decimal(value: float) -> str:
    """At most two decimals, no trailing zeros: ``1305.25``, ``1.59``, ``512``."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def human_amount(name: str, value: Fraction) -> str:
    """One resource's amount as a person reads it: cpu in cores (``1305.25 cores``), bytes in binary
    units (``1.59 TiB``), anything else (pods, extended resources) as the count it is."""
    if name == "cpu":
        cores = _decimal(float(value))
        return f"{cores} core" if cores == "1" else f"{cores} cores"
    if name in _BYTE_RESOURCES or name.startswith("hugepages-"):
        amount, unit = float(value), "B"
        for bigger in _BINARY_UNITS:
            if abs(amount) < 1024:
                break
            amount, unit = amount / 1024, bigger
        return f"{_decimal(amount)} {unit}"
    return _amount(value)


def format_load(load: AssumedLoad) -> str:
    """``cpu 30 cores, memory 60 GiB, pods 30``: what a load holds, as the estimators deduct it, in
    units a person reads."""
    totals = load.totals()
    return ", ".join(f"{name} {human_amount(name, totals[name])}" for name in sorted(totals)) or "nothing"


def usable_clusters(result: ScheduleResult, clusters: Iterable[str]) -> list[str]:
    """Of ``clusters``, those the binding could use: every filter of one of its attempts let them
    through (capacity is not a filter). All of ``clusters`` when the result records no verdicts."""
    verdicts = [v for attempt in result.attempts for v in attempt.verdicts]
    if not verdicts:
        return list(dict.fromkeys(clusters))
    feasible = {v.cluster for v in verdicts if v.feasible}
    return [name for name in dict.fromkeys(clusters) if name in feasible]


def describe(record: AssumeRecord, clusters: Iterable[str]) -> str | None:
    """What the record holds on ``clusters``, for the message of a binding that did not fit
    (None when it holds nothing there)."""
    held = [name for name in dict.fromkeys(clusters) if record.count(name)]
    if not held:
        return None
    total = _NO_LOAD
    for name in held:
        total = total.plus(record.load(name))
    return (
        "capacity assumed for in-flight bindings (SchedulingOvercommitProtection) holds "
        f"{format_load(total)} on {len(held)} cluster(s)"
    )


def name_shortfall(record: AssumeRecord, result: ScheduleResult, clusters: Iterable[str]) -> ScheduleResult:
    """A binding short of capacity (Unschedulable) says how much the record held on those of
    ``clusters`` it could use (``usable_clusters``) in its condition (so in its Event too); any
    other result as it is."""
    condition = result.condition
    if result.scheduled or condition is None or condition.reason != UnschedulableError.reason:
        return result
    held = describe(record, usable_clusters(result, clusters))
    if held is None:
        return result
    named = Condition(False, condition.reason, f"{condition.message}; {held}")
    return dataclasses.replace(result, condition=named)
