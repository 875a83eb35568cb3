"""Per-node aggregates kept incrementally, so that an estimate is one pass over arrays.

:class:`NodeTable` holds one slot per node: allocatable and requested amounts per resource column
(numpy arrays), the number of assigned pods, labels, taints and the zone order used by first fit.
Node and pod events (add, update, delete) adjust only the slots they touch. An estimate then computes
free = max(allocatable - requested, 0) for the columns it needs and divides vectorised.

Filtering uses inverted indexes (label key -> value -> slots, taint set -> slots) and caches the mask of
each node claim until a node's labels, taints or presence change. The pod cache follows Karmada's
estimator cache: only assigned non-terminal pods count; a pod on a node not (yet) known is remembered
and counted when that node appears (spec 3.1, 3.3).

Pure: no grpc, no Kubernetes client.

Threads: the watch writes on the server's event loop while estimates run in worker threads. Every
write and every read of the mutable state holds one lock, and a read holds it only long enough to
take a :class:`TableSnapshot`: the free-amount arrays (fresh arrays, never written after they are
made), the node order (a list replaced, never changed in place) and the :class:`FilterIndex` of the
current filter generation (immutable, rebuilt on the first read after a node's labels, taints or
presence changed). The estimate itself, however long a request's claims take to evaluate, runs on
that snapshot without the lock, so a heavy request never holds up the watch (or the event loop the
watch runs on) and always sees one consistent version of the table.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fleetsched.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from fleetsched.estimator.model import NodeClaim
from fleetsched.estimator.nodefilter import (
    CompiledRequirement,
    Taint,
    compile_terms,
    field_matches,
    parse_int64,
    tolerates_all,
)

__all__ = ["FilterIndex", "NodeTable", "TableSnapshot", "zone_key"]

# Amounts at or above this switch the table to exact Python integers (object arrays); below it int64
# arithmetic (including sums of a few pods) cannot overflow.
_INT64_SAFE = 2**62
_BASE_COLUMNS = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
_FILTERED_EFFECTS = ("NoSchedule", "NoExecute")


def zone_key(labels: Mapping[str, str]) -> str:
    """Kubernetes' zone key: region and zone from the beta labels, falling back to the GA ones."""
    zone = labels.get("failure-domain.beta.kubernetes.io/zone")
    if zone is None:
        zone = labels.get("topology.kubernetes.io/zone", "")
    region = labels.get("failure-domain.beta.kubernetes.io/region")
    if region is None:
        region = labels.get("topology.kubernetes.io/region", "")
    if not region and not zone:
        return ""
    return region + ":\x00:" + zone


@dataclass(frozen=True, slots=True)
class NodeView:
    """One node as the reference filter sees it (tests and explanations)."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool


class FilterIndex:
    """Which slots a node claim admits, for one filter generation of the table: an immutable copy of
    the label index and taint groups as slot arrays. Masks are cached per claim (bounded); the cache
    has its own small lock because several worker threads share one index."""

    def __init__(self, *, cap: int, present: np.ndarray, names: Sequence[str | None],
                 label_index: Mapping[str, Mapping[str, set[int]]],
                 taint_groups: Mapping[tuple[bool, tuple[Taint, ...]], set[int]]) -> None:
        self.cap = cap
        self.present = present.copy()
        self.present.flags.writeable = False
        self.names: tuple[str | None, ...] = tuple(names)
        self.labels: dict[str, dict[str, np.ndarray]] = {
            key: {value: np.fromiter(sorted(slots), dtype=np.intp, count=len(slots))
                  for value, slots in values.items()}
            for key, values in label_index.items()}
        self.taint_groups: tuple[tuple[bool, tuple[Taint, ...], np.ndarray], ...] = tuple(
            (unschedulable, taints, np.fromiter(sorted(slots), dtype=np.intp, count=len(slots)))
            for (unschedulable, taints), slots in taint_groups.items())
        self._masks: dict[NodeClaim, np.ndarray] = {}
        self._masks_lock = threading.Lock()

    def claim_mask(self, claim: NodeClaim) -> np.ndarray:
        """Boolean array: which slots hold a node that ``claim`` admits (read-only, cached)."""
        with self._masks_lock:
            cached = self._masks.get(claim)
        if cached is not None:
            return cached
        mask = self.present.copy()
        for key, value in claim.node_selector:
            mask &= self._slots_mask(self.labels.get(key, {}).get(value))
        if claim.node_affinity is not None and mask.any():
            mask &= self._affinity_mask(claim)
        if mask.any():
            mask &= self._toleration_mask(claim)
        mask.flags.writeable = False  # shared by every request with this claim
        with self._masks_lock:
            if len(self._masks) > 1024:
                self._masks.clear()
            self._masks[claim] = mask
        return mask

    def _slots_mask(self, *indexes: np.ndarray | None) -> np.ndarray:
        mask = np.zeros(self.cap, dtype=bool)
        for index in indexes:
            if index is not None and index.size:
                mask[index] = True
        return mask

    def _affinity_mask(self, claim: NodeClaim) -> np.ndarray:
        assert claim.node_affinity is not None
        any_term = np.zeros(self.cap, dtype=bool)
        for term in compile_terms(claim.node_affinity):
            if term is None:
                continue
            expressions, fields = term
            term_mask = self.present.copy()
            for requirement in expressions:
                term_mask &= self._label_requirement_mask(requirement)
                if not term_mask.any():
                    break
            if fields and term_mask.any():
                for slot in np.flatnonzero(term_mask):
                    name = self.names[slot]
                    if name is None or not all(field_matches(f, name) for f in fields):
                        term_mask[slot] = False
            any_term |= term_mask
        return any_term

    def _label_requirement_mask(self, requirement: CompiledRequirement) -> np.ndarray:
        values = self.labels.get(requirement.key, {})
        op = requirement.operator
        if op in ("In", "NotIn"):
            hits = self._slots_mask(*(values.get(v) for v in requirement.values))
            return hits if op == "In" else ~hits
        if op in ("Exists", "DoesNotExist"):
            hits = self._slots_mask(*values.values())
            return hits if op == "Exists" else ~hits
        chosen = []
        for value, slots in values.items():
            number = parse_int64(value)
            if number is None:
                continue
            if (number > requirement.bound) if op == "Gt" else (number < requirement.bound):
                chosen.append(slots)
        return self._slots_mask(*chosen)

    def _toleration_mask(self, claim: NodeClaim) -> np.ndarray:
        return self._slots_mask(*(slots for unschedulable, taints, slots in self.taint_groups
                                  if tolerates_all(claim.tolerations, taints, unschedulable)))


@dataclass(frozen=True, slots=True)
class TableSnapshot:
    """One consistent version of the table for one estimate, used without the table's lock."""

    free: dict[str, np.ndarray]
    order: Sequence[int]
    index: FilterIndex
    exact: bool

    def claim_mask(self, claim: NodeClaim) -> np.ndarray:
        return self.index.claim_mask(claim)


class NodeTable:
    def __init__(self, capacity: int = 64) -> None:
        self._lock = threading.RLock()
        self._cap = max(capacity, 1)
        self._dtype: type | np.dtype = np.int64
        self._alloc: dict[str, np.ndarray] = {c: self._zeros() for c in _BASE_COLUMNS}
        self._req: dict[str, np.ndarray] = {c: self._zeros() for c in _BASE_COLUMNS if c != PODS}
        self._pod_count = self._zeros()
        self._present = np.zeros(self._cap, dtype=bool)
        self._slot_of: dict[str, int] = {}
        self._name_at: list[str | None] = [None] * self._cap
        self._free_slots: list[int] = list(range(self._cap - 1, -1, -1))
        self._labels: list[dict[str, str]] = [{} for _ in range(self._cap)]
        self._taints: list[tuple[Taint, ...]] = [() for _ in range(self._cap)]
        self._unschedulable: list[bool] = [False] * self._cap
        self._label_index: dict[str, dict[str, set[int]]] = {}
        self._taint_groups: dict[tuple[bool, tuple[Taint, ...]], set[int]] = {}
        self._group_of: list[tuple[bool, tuple[Taint, ...]] | None] = [None] * self._cap
        # zone order (Kubernetes' node tree): zones in first-insertion order, nodes in insertion order
        self._zones: list[str] = []
        self._zone_nodes: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}
        self._order_cache: list[int] | None = None
        # pods
        self._pods: dict[str, tuple[str, dict[str, int]]] = {}
        self._pods_on: dict[str, set[str]] = {}
        self._filter_index: FilterIndex | None = None
        self._free_cache: dict[str, np.ndarray] = {}
        self._free_generation = -1
        self.generation = 0

    # ------------------------------------------------------------------ storage helpers
    def _zeros(self, n: int | None = None) -> np.ndarray:
        return np.zeros(self._cap if n is None else n, dtype=self._dtype)

    def _grow(self) -> None:
        old = self._cap
        self._cap = old * 2

        def widen(a: np.ndarray) -> np.ndarray:
            b = np.zeros(self._cap, dtype=a.dtype)
            b[:old] = a
            return b

        self._alloc = {k: widen(v) for k, v in self._alloc.items()}
        self._req = {k: widen(v) for k, v in self._req.items()}
        self._pod_count = widen(self._pod_count)
        self._present = widen(self._present)
        self._name_at.extend([None] * old)
        self._labels.extend({} for _ in range(old))
        self._taints.extend(() for _ in range(old))
        self._unschedulable.extend([False] * old)
        self._group_of.extend([None] * old)
        self._free_slots.extend(range(self._cap - 1, old - 1, -1))
        self._filter_index = None
        self._free_cache.clear()

    def _to_exact(self) -> None:
        if self._dtype is object:
            return
        self._dtype = object
        self._alloc = {k: v.astype(object) for k, v in self._alloc.items()}
        self._req = {k: v.astype(object) for k, v in self._req.items()}
        self._pod_count = self._pod_count.astype(object)
        self._free_cache.clear()

    def _check_magnitude(self, amounts: Iterable[int]) -> None:
        if self._dtype is not object and any(abs(a) >= _INT64_SAFE for a in amounts):
            self._to_exact()

    def _column(self, store: dict[str, np.ndarray], name: str) -> np.ndarray:
        column = store.get(name)
        if column is None:
            column = store[name] = self._zeros()
        return column

    def _touch(self, filtering: bool) -> None:
        self.generation += 1
        if filtering:
            self._filter_index = None

    # ------------------------------------------------------------------ nodes
    def upsert_node(self, name: str, *, labels: Mapping[str, str], taints: Sequence[Taint],
                    unschedulable: bool, allocatable: Mapping[str, int]) -> None:
        with self._lock:
            self._check_magnitude(allocatable.values())
            slot = self._slot_of.get(name)
            new = slot is None
            if slot is None:
                if not self._free_slots:
                    self._grow()
                slot = self._free_slots.pop()
                self._slot_of[name] = slot
                self._name_at[slot] = name
                self._present[slot] = True
            for column in self._alloc.values():
                column[slot] = 0
            for column_name, amount in allocatable.items():
                self._column(self._alloc, column_name)[slot] = amount
            labels = dict(labels)
            relevant = tuple(t for t in taints if t.effect in _FILTERED_EFFECTS)
            filtering = new or labels != self._labels[slot] or relevant != self._taints[slot] \
                or unschedulable != self._unschedulable[slot]
            if filtering:
                self._unindex(slot)
                self._labels[slot] = labels
                self._taints[slot] = relevant
                self._unschedulable[slot] = unschedulable
                self._index(slot)
            self._place_in_zone(name, zone_key(labels))
            if new:
                self._recount(name, slot)
            self._touch(filtering)

    def delete_node(self, name: str) -> None:
        with self._lock:
            slot = self._slot_of.pop(name, None)
            if slot is None:
                return
            self._unindex(slot)
            self._remove_from_zone(name)
            self._present[slot] = False
            self._name_at[slot] = None
            self._labels[slot] = {}
            self._taints[slot] = ()
            self._unschedulable[slot] = False
            for column in self._alloc.values():
                column[slot] = 0
            for column in self._req.values():
                column[slot] = 0
            self._pod_count[slot] = 0
            self._free_slots.append(slot)
            self._touch(True)

    def _index(self, slot: int) -> None:
        for key, value in self._labels[slot].items():
            self._label_index.setdefault(key, {}).setdefault(value, set()).add(slot)
        group = (self._unschedulable[slot], self._taints[slot])
        self._taint_groups.setdefault(group, set()).add(slot)
        self._group_of[slot] = group

    def _unindex(self, slot: int) -> None:
        for key, value in self._labels[slot].items():
            values = self._label_index.get(key)
            if values is None:
                continue
            slots = values.get(value)
            if slots is not None:
                slots.discard(slot)
                if not slots:
                    del values[value]
            if not values:
                del self._label_index[key]
        group = self._group_of[slot]
        if group is not None:
            members = self._taint_groups.get(group)
            if members is not None:
                members.discard(slot)
                if not members:
                    del self._taint_groups[group]
            self._group_of[slot] = None

    def _place_in_zone(self, name: str, zone: str) -> None:
        current = self._zone_of.get(name)
        if current == zone:
            return
        if current is not None:
            self._remove_from_zone(name)
        nodes = self._zone_nodes.get(zone)
        if nodes is None:
            self._zones.append(zone)
            nodes = self._zone_nodes[zone] = []
        nodes.append(name)
        self._zone_of[name] = zone
        self._order_cache = None

    def _remove_from_zone(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        nodes = self._zone_nodes[zone]
        nodes.remove(name)
        if not nodes:
            del self._zone_nodes[zone]
            self._zones.remove(zone)
        self._order_cache = None

    # ------------------------------------------------------------------ pods
    def upsert_pod(self, key: str, *, node_name: str, request: Mapping[str, int]) -> None:
        """Record an assigned, non-terminal pod (replacing what was known about ``key``)."""
        with self._lock:
            self._check_magnitude(request.values())
            self._drop_pod(key)
            vector = dict(request)
            self._pods[key] = (node_name, vector)
            self._pods_on.setdefault(node_name, set()).add(key)
            slot = self._slot_of.get(node_name)
            if slot is not None:
                self._apply(slot, vector, +1)
            self._touch(False)

    def delete_pod(self, key: str) -> None:
        with self._lock:
            if self._drop_pod(key):
                self._touch(False)

    def _drop_pod(self, key: str) -> bool:
        known = self._pods.pop(key, None)
        if known is None:
            return False
        node_name, vector = known
        keys = self._pods_on.get(node_name)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._pods_on[node_name]
        slot = self._slot_of.get(node_name)
        if slot is not None:
            self._apply(slot, vector, -1)
        return True

    def _apply(self, slot: int, vector: Mapping[str, int], sign: int) -> None:
        for column_name, amount in vector.items():
            column = self._column(self._req, column_name)
            column[slot] = column[slot] + sign * amount
        self._pod_count[slot] = self._pod_count[slot] + sign

    def _recount(self, name: str, slot: int) -> None:
        for column in self._req.values():
            column[slot] = 0
        self._pod_count[slot] = 0
        for key in self._pods_on.get(name, ()):
            self._apply(slot, self._pods[key][1], +1)

    # ------------------------------------------------------------------ reads
    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def num_nodes(self) -> int:
        return len(self._slot_of)

    def num_pods(self) -> int:
        return len(self._pods)

    def pod_keys(self) -> list[str]:
        with self._lock:
            return list(self._pods)

    def node_names(self) -> list[str]:
        return sorted(self._slot_of)

    def view(self, name: str) -> NodeView:
        slot = self._slot_of[name]
        return NodeView(name, dict(self._labels[slot]), self._taints[slot], self._unschedulable[slot])

    def slot_of(self, name: str) -> int:
        return self._slot_of[name]

    def snapshot(self, columns: Iterable[str] = ()) -> TableSnapshot:
        """The free amounts of ``columns`` (plus pod slots), node order and filter index of this moment,
        taken under the lock; everything in it stays valid, unchanged, after the lock is released."""
        columns = tuple(columns)
        with self._lock:
            return TableSnapshot(self.free(columns), self.ordered_slots(), self._current_index(),
                                 self.exact())

    def _current_index(self) -> FilterIndex:
        index = self._filter_index
        if index is None:
            index = self._filter_index = FilterIndex(
                cap=self._cap, present=self._present, names=self._name_at, label_index=self._label_index,
                taint_groups=self._taint_groups)
        return index

    def free(self, columns: Iterable[str]) -> dict[str, np.ndarray]:
        """Read-only arrays of free amounts (allocatable - requested, clamped at 0) plus free pod slots,
        computed once per column until a node or pod changes. Call with the lock held (or use
        :meth:`snapshot`)."""
        with self._lock:
            if self._free_generation != self.generation:
                self._free_cache.clear()
                self._free_generation = self.generation
            out: dict[str, np.ndarray] = {}
            for name in set(columns) | {PODS}:
                cached = self._free_cache.get(name)
                if cached is None:
                    cached = self._compute_free(name)
                    cached.flags.writeable = False
                    self._free_cache[name] = cached
                out[name] = cached
            return out

    def _compute_free(self, name: str) -> np.ndarray:
        if name == PODS:
            return np.maximum(self._alloc[PODS] - self._pod_count, 0)
        alloc = self._alloc.get(name)
        if alloc is None:
            return self._zeros()
        req = self._req.get(name)
        return np.maximum(alloc - req, 0) if req is not None else alloc.copy()

    def exact(self) -> bool:
        return self._dtype is object

    def ordered_slots(self) -> list[int]:
        """Nodes in Kubernetes' node-tree order: round robin over zones (spec 3.1). The list is replaced
        when the order changes, never changed in place."""
        with self._lock:
            if self._order_cache is None:
                order: list[int] = []
                lists = [self._zone_nodes[z] for z in self._zones]
                depth = 0
                while len(order) < len(self._slot_of):
                    for nodes in lists:
                        if depth < len(nodes):
                            order.append(self._slot_of[nodes[depth]])
                    depth += 1
                self._order_cache = order
            return self._order_cache

    # ------------------------------------------------------------------ filtering
    def claim_mask(self, claim: NodeClaim) -> np.ndarray:
        """Boolean array: which slots hold a node that ``claim`` admits (cached until nodes change)."""
        return self.snapshot().claim_mask(claim)
