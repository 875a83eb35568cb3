"""The general estimator: replicas that fit a cluster, from its resource summary and resource models.

Karmada's ``GeneralEstimator`` (pkg/estimator/client/general.go): pod headroom, the summary arithmetic
(CPU in millicores, everything else in whole units) and the closed form of Karmada's first-fit
simulation over resource-model grades. Pure: it reads frozen ``ClusterInfo`` values. What a
cluster contributes (headroom per resource, model nodes) is prepared once per cluster value and
kept on it; a request is converted once per call; the estimate itself is integer arithmetic. No
answer is memoised per (cluster, request): on the cold path every binding has its own request,
and such a memo only grows.

Calls over many clusters (``VECTOR_MIN`` or more) are answered by the same arithmetic over numpy
arrays (``_Table``); the per-cluster scalar code stays the reference and the fallback.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from fractions import Fraction

import numpy as np

from fleetsched.api.quantity import Quantity
from fleetsched.api.resources import is_scalar_resource
from fleetsched.scheduler.types import (
    MAX_INT32,
    AssumedLoad,
    AssumedWorkload,
    ClusterInfo,
    ClusterSelection,
    Component,
    ReplicaRequirements,
)

__all__ = ["GeneralEstimator", "estimate_cluster", "estimate_component_sets", "is_scalar_resource"]

NAME = "general-estimator"
MODEL_NODE_PODS = 110


class _ModelError(Exception):
    """The model path cannot answer; the summary path is used instead."""


def _saturate_int32(n: int) -> int:
    """The int32 answer, saturated: any amount from 2147483647 up is 2147483647 (every estimate is
    already clamped at 0 from below), as the accurate estimator's totals are.

    Deliberately not Karmada: ``maxAvailableReplicas`` in pkg/estimator/client/general.go returns
    ``int32(maximumReplicas)``, Go's conversion, which keeps the low 32 bits; and before that
    ``getAllowedPodNumber`` takes ``Quantity.Value()`` (apimachinery's ``scaledValue`` ends in
    ``big.Int.Int64()``, the low 64 bits) of a quantity beyond int64. A Cluster reporting
    ``pods: "999999999999E"`` wraps there to -1,734,606,848 and its bindings go Unschedulable; here
    it has room for 2147483647, which the scheduler reads as "no bound"."""
    return max(min(n, MAX_INT32), -MAX_INT32 - 1)


def _ceil(x: Fraction) -> int:
    """Quantity.Value(): rounded up, away from zero: -0.5 is -1."""
    return math.ceil(x) if x >= 0 else math.floor(x)


def _ceil_milli(x: Fraction) -> int:
    """Quantity.MilliValue(), rounded the same way."""
    return _ceil(x * 1000)


class _ClusterBase:
    """What the estimate needs from one cluster, computed once per cluster value: headroom per
    resource already rounded as the summary arithmetic rounds it, so a request costs integer
    divisions only."""

    __slots__ = (
        "assumed_pods",
        "assumed_units",
        "available",
        "available_units",
        "cpu_milli",
        "model_error",
        "model_nodes",
        "pods",
        "status_pods",
    )

    def __init__(self, cluster: ClusterInfo) -> None:
        s = cluster.resource_summary
        self.available: dict[str, Fraction] = {}
        # Quantity.Value() of each resource's headroom, and Quantity.MilliValue() of cpu's.
        self.available_units: dict[str, int] = {}
        self.cpu_milli = 0
        self.pods = 0
        # The component-set path (§5.2) reads the status' pod headroom and deducts the assumptions in
        # its own units: pods, and per resource Σ replicas × Quantity.format_units(request).
        self.status_pods = 0
        self.assumed_pods = 0
        self.assumed_units: dict[str, int] = {}
        self.model_nodes: list[tuple[int, dict[str, int]]] = []  # (count, capacity) in grade order
        self.model_error = True
        if s is None:
            return
        zero = Fraction(0)

        def exact(m: object, name: str) -> Fraction:
            q = m.get(name)  # type: ignore[attr-defined]
            return q.value_exact if q is not None else zero

        # Assumed workloads join ``allocating`` as Karmada's deductAssumedWorkloadsFromSummary adds
        # them; the component-set path deducts them in its own units.
        load = cluster.assumed_load
        if load is None and cluster.assumed:
            load = AssumedLoad.of(cluster.assumed)
        assumed_pods = 0
        assumed: Mapping[str, Fraction] = {}
        if load is not None:
            assumed_pods, assumed = load.pods, load.resources
            self.assumed_pods, self.assumed_units = load.set_pods, dict(load.set_units)
        status_pods = _ceil(exact(s.allocatable, "pods")) - _ceil(exact(s.allocated, "pods"))
        allocating_pods = _ceil(exact(s.allocating, "pods"))
        self.status_pods = max(status_pods - allocating_pods, 0)
        self.pods = max(status_pods - allocating_pods - assumed_pods, 0)
        for name, q in s.allocatable.items():
            avail = q.value_exact - exact(s.allocated, name) - exact(s.allocating, name)
            avail -= assumed.get(name, zero)
            self.available[name] = avail
            self.available_units[name] = _ceil(avail)
            if name == "cpu":
                self.cpu_milli = _ceil_milli(avail)
        if s.allocatable_modelings:
            self._build_models(cluster)
            if not self.model_error and cluster.assumed:
                self._preplace(cluster.assumed)

    def _build_models(self, cluster: ClusterInfo) -> None:
        s = cluster.resource_summary
        assert s is not None
        if not cluster.resource_models:
            return
        count: dict[int, int] = {}
        for grade, n in s.allocatable_modelings:
            if n < 0:
                return
            count[grade] = count.get(grade, 0) + n
        templates: dict[int, dict[str, int]] = {}
        for model in cluster.resource_models:
            cap: dict[str, int] = {}
            for name, low, _high in model.ranges:
                if name == "cpu":
                    cap[name] = low.milli_value()
                elif name in ("memory", "ephemeral-storage") or is_scalar_resource(name):
                    cap[name] = low.value()
            cap["pods"] = MODEL_NODE_PODS
            templates[model.grade] = cap
        for grade in sorted(templates):
            n = count.get(grade, 0)
            if n > 0:
                self.model_nodes.append((n, templates[grade]))
        self.model_error = False

    def _preplace(self, assumed: Sequence[AssumedWorkload]) -> None:
        """Each assumed workload placed once, first fit, on the model nodes before any estimate
        (Karmada's SimulateScheduling(components, 1) per workload; what a set that does not fit
        consumed stays consumed). Identical nodes stay grouped: a group splits where placement
        stops inside it."""
        groups = [[count, dict(cap)] for count, cap in self.model_nodes]
        for workload in assumed:
            for c in workload.components:
                requirements = c.replica_requirements
                request = requirements.resource_request if requirements is not None else ()
                if not _place_first_fit(groups, _model_demand(request), c.replicas):
                    break
        self.model_nodes = [(count, cap) for count, cap in groups if count > 0]


def _fit(cap: dict[str, int], demand: Sequence[tuple[str, int]]) -> int:
    fit = cap["pods"]
    for name, need in demand:
        fit = min(fit, cap.get(name, 0) // need)
    return max(fit, 0)


def _place_first_fit(groups: list[list], demand: Sequence[tuple[str, int]], replicas: int) -> bool:
    """``replicas`` one-pod replicas of ``demand`` placed first fit over ``groups`` of identical
    nodes ([count, capacity], in node order), in place; whether all of them found a node."""
    remaining = replicas
    i = 0
    while remaining > 0 and i < len(groups):
        count, cap = groups[i]
        fit = _fit(cap, demand)
        if fit <= 0 or count <= 0:
            i += 1
            continue
        full, rest = divmod(remaining, fit)
        filled = dict(cap)
        filled["pods"] -= fit
        for name, need in demand:
            filled[name] = filled.get(name, 0) - fit * need
        split: list[list] = []
        if full >= count:
            split.append([count, filled])
            remaining -= count * fit
        else:
            if full:
                split.append([full, filled])
            partial = dict(cap)
            partial["pods"] -= rest
            for name, need in demand:
                partial[name] = partial.get(name, 0) - rest * need
            left = count - full
            if rest:
                split.append([1, partial])
                left -= 1
            if left:
                split.append([left, cap])
            remaining = 0
        groups[i : i + 1] = split
        i += len(split)
    return remaining <= 0


def _base(cluster: ClusterInfo) -> _ClusterBase:
    base = cluster.memo.get(_ClusterBase)
    if base is None:
        base = cluster.memo[_ClusterBase] = _ClusterBase(cluster)
    return base


class _Request:
    """One per-replica request converted once, whatever the number of clusters it is asked of.

    ``summary``: (name, Value(), MilliValue() for cpu else 0) for each resource whose Value() is
    positive (the others never limit, §7.2); ``model``: (name, need) as the first-fit simulation
    compares it with a model node's capacity (cpu in millicores, memory, ephemeral storage and
    scalar resources in units; other names ignored).
    """

    __slots__ = ("model", "summary")

    def __init__(self, request: tuple[tuple[str, Fraction], ...]) -> None:
        summary: list[tuple[str, int, int]] = []
        model: list[tuple[str, int]] = []
        for name, q in request:
            units = _ceil(q)
            if units > 0:
                summary.append((name, units, _ceil_milli(q) if name == "cpu" else 0))
            if name == "cpu":
                need = _ceil_milli(q)
            elif name in ("memory", "ephemeral-storage") or is_scalar_resource(name):
                need = units
            else:
                continue
            if need > 0:
                model.append((name, need))
        self.summary = tuple(summary)
        self.model = tuple(model)


def _summary_estimate(base: _ClusterBase, request: _Request) -> int | None:
    best: int | None = None
    available = base.available_units
    for name, units, milli in request.summary:
        avail = available.get(name)
        if avail is None or avail <= 0:
            return 0
        n = base.cpu_milli // milli if name == "cpu" else avail // units
        if best is None or n < best:
            best = n
    return best


def _model_estimate(base: _ClusterBase, request: _Request) -> int:
    # Closed form of the first-fit simulation for identical one-pod replicas: every virtual node
    # takes as many replicas as fit it.
    total = 0
    needs = request.model
    for count, cap in base.model_nodes:
        fit = cap["pods"]
        for name, need in needs:
            fit = min(fit, cap.get(name, 0) // need)
        total += count * fit
    return total


# Converted requests, bounded: a live scheduler meets an unbounded number of distinct requests.
_REQUESTS: dict[tuple[tuple[str, Fraction], ...], _Request] = {}
_REQUESTS_LIMIT = 4096


def _converted(request: tuple[tuple[str, Fraction], ...]) -> _Request:
    converted = _REQUESTS.get(request)
    if converted is None:
        if len(_REQUESTS) >= _REQUESTS_LIMIT:
            # Evict the oldest quarter (dicts keep insertion order), not everything at once.
            for key in list(_REQUESTS)[: _REQUESTS_LIMIT // 4]:
                del _REQUESTS[key]
        converted = _REQUESTS[request] = _Request(request)
    return converted


def _estimate(base: _ClusterBase, request: _Request | None, resource_modeling: bool) -> int:
    if base.pods <= 0:
        return 0
    if request is None:
        return _saturate_int32(base.pods)
    if resource_modeling and not base.model_error:
        # The first-fit simulation stops at its upper bound, 2147483647 (MaxInt32).
        return _saturate_int32(min(_model_estimate(base, request), MAX_INT32, base.pods))
    summary = _summary_estimate(base, request)
    return _saturate_int32(base.pods if summary is None else min(summary, base.pods))


# ---- the vectorised path: the same arithmetic over arrays, for calls over many clusters ----------

VECTOR_MIN = 32  # fewer clusters than this in one call: the scalar loop is cheaper than numpy's setup
# Every value a table holds and every need a request brings stays below this, so no int64 product,
# difference or floor division below can overflow; a call that meets a larger one is answered by the
# scalar path (Python integers), which is exact for any size.
_SAFE = 2**62
_TABLE_ROWS_MIN = 4096
# A cluster's code in a table: (stamp << _ROW_BITS) | row, the stamp unique per assignment in the
# process, so a table whose ``codes[row]`` equals a cluster's code was filled from that very object.
_ROW_BITS = 20
_ROW_MASK = (1 << _ROW_BITS) - 1
_HISTORY = 4  # tables a lineage keeps (newest last): workers on a slightly older snapshot find theirs
# The code of a row no cluster was placed in; a cluster without a code reads as -1: never equal.
_NO_CODE = -2
# Superseded model nodes a derived table may carry beyond its live ones before it is built afresh.
_NODE_SLACK = 1024


class _CodeKey:
    """Private key of a cluster's row code in ``ClusterInfo.memo``."""


class _LineageKey:
    """Private key of the ``_Lineage`` a cluster last got a row in, in ``ClusterInfo.memo``."""


_stamps = itertools.count(1)


def _row_values(
    b: _ClusterBase, resources: dict[str, int], node_names: dict[str, int]
) -> tuple[int, int, dict[int, int], bool, bool, list[int], list[list[int]]] | None:
    """One row of a table from a cluster's prepared values: (pods, cpu_milli, units by resource
    column, model ok, unsafe, model node counts, their capacities per node column); None when the
    cluster names a resource or a model range the table has no column for."""
    bad = b.pods >= _SAFE or not -_SAFE < b.cpu_milli < _SAFE
    units: dict[int, int] = {}
    for name, v in b.available_units.items():
        r = resources.get(name)
        if r is None:
            return None
        if not -_SAFE < v < _SAFE:
            bad = True
            v = max(min(v, _SAFE), -_SAFE)
        units[r] = v
    counts: list[int] = []
    caps: list[list[int]] = [[] for _ in node_names]
    total = 0
    worst = MODEL_NODE_PODS
    for count, cap in b.model_nodes:
        if any(name not in node_names for name in cap):
            return None
        total += count
        counts.append(min(count, _SAFE))
        for name, k in node_names.items():
            v = cap.get(name, 0)
            if not -_SAFE < v < _SAFE:
                bad = True
                v = max(min(v, _SAFE), -_SAFE)
            worst = max(worst, -v)
            caps[k].append(v)
    # A node's fit is at most 110 and at least its most negative capacity: the row's model total
    # (and the running sums over rows, which wrap but difference exactly) stays exact.
    if total * worst >= _SAFE:
        bad = True
    pods = min(b.pods, _SAFE)
    cpu_milli = max(min(b.cpu_milli, _SAFE), -_SAFE)
    return pods, cpu_milli, units, not b.model_error, bad, counts, caps


class _Table:
    """The prepared values of many clusters (each one's ``_ClusterBase``) as numpy columns, one row
    per cluster name of its ``_Lineage``.

    A table is immutable once built. A call whose clusters all sit in one table (each one's code,
    in its memo, equal to ``codes`` at its row) is answered by fancy indexing and integer operations
    over the columns. A status heartbeat makes a new value of one cluster: the next call that meets
    it derives a new table from the newest one with that cluster's row replaced (``derive``: column
    copies, one row computed), so the cost of a change does not grow with the rows' Python work.

    Columns: ``pods`` (pod headroom, already clamped at 0), ``cpu_milli``, ``units[r]`` (Value()
    headroom of resource ``r``) with ``present[r]`` (False where the cluster lacks it), ``model_ok``
    (not ``model_error``) and, for the model nodes of all rows flattened, ``node_count`` and
    ``node_cap[r]`` (0 where the grade has no such range, as ``cap.get(name, 0)``) with each row's
    nodes in grade order at ``node_start[row]:node_end[row]`` (a replaced row's nodes are appended;
    the superseded ones stay unreferenced until a rebuild). ``unsafe`` marks a row whose values are
    too large for int64 arithmetic (see ``_SAFE``).
    """

    __slots__ = (
        "bases",
        "codes",
        "cpu_milli",
        "live_nodes",
        "model_ok",
        "names",
        "node_cap",
        "node_count",
        "node_end",
        "node_names",
        "node_start",
        "pods",
        "present",
        "resources",
        "units",
        "unsafe",
    )

    def __init__(self, bases: list[_ClusterBase], codes: list[int], names: list[str]) -> None:
        self.bases = bases
        self.codes = np.array(codes, dtype=np.int64)
        self.names = names
        n = len(bases)
        resources: dict[str, int] = {}
        node_names: dict[str, int] = {}
        for b in bases:
            for name in b.available_units:
                resources.setdefault(name, len(resources))
            for _count, cap in b.model_nodes:
                for name in cap:  # "pods" too: assumptions placed on a node leave it fewer than 110
                    node_names.setdefault(name, len(node_names))
        self.resources = resources
        self.node_names = node_names
        units = [[0] * n for _ in resources]
        present = [[False] * n for _ in resources]
        pods = [0] * n
        cpu_milli = [0] * n
        model_ok = [False] * n
        unsafe = [False] * n
        node_count: list[int] = []
        node_cap: list[list[int]] = [[] for _ in node_names]
        node_start = [0] * n
        node_end = [0] * n
        for row, b in enumerate(bases):
            values = _row_values(b, resources, node_names)
            assert values is not None  # the columns were taken from these very rows
            pods[row], cpu_milli[row], row_units, model_ok[row], unsafe[row], counts, caps = values
            for r, v in row_units.items():
                units[r][row] = v
                present[r][row] = True
            node_start[row] = len(node_count)
            node_count.extend(counts)
            for k, column in enumerate(caps):
                node_cap[k].extend(column)
            node_end[row] = len(node_count)
        i64 = np.int64
        self.pods = np.array(pods, dtype=i64)
        self.cpu_milli = np.array(cpu_milli, dtype=i64)
        self.units = np.array(units, dtype=i64).reshape(len(resources), n)
        self.present = np.array(present, dtype=bool).reshape(len(resources), n)
        self.model_ok = np.array(model_ok, dtype=bool)
        self.unsafe = np.array(unsafe, dtype=bool)
        self.node_count = np.array(node_count, dtype=i64)
        self.node_cap = np.array(node_cap, dtype=i64).reshape(len(node_names), len(node_count))
        self.node_start = np.array(node_start, dtype=np.intp)
        self.node_end = np.array(node_end, dtype=np.intp)
        self.live_nodes = len(node_count)

    def derive(self, updates: dict[int, tuple[_ClusterBase, int, str]]) -> _Table:
        """This table with the rows of ``updates`` (row -> base, code, name) replaced or appended:
        the columns copied and only those rows computed; a full build when a new row names a
        resource the columns lack, or when superseded model nodes outnumber the live ones."""
        n = len(self.bases)
        size = max(n, max(updates) + 1)
        bases = self.bases + [_EMPTY_BASE] * (size - n)
        names = self.names + [""] * (size - n)
        for row, (base, _code, name) in updates.items():
            bases[row] = base
            names[row] = name

        def rebuilt() -> _Table:
            codes = self.codes.tolist() + [_NO_CODE] * (size - n)
            for row, (_base, code, _name) in updates.items():
                codes[row] = code
            return _Table(bases, codes, names)

        if size > n:
            return rebuilt()
        rows: list[tuple[int, tuple[int, int, dict[int, int], bool, bool, list[int], list[list[int]]]]] = []
        live = self.live_nodes
        for row in updates:
            values = _row_values(bases[row], self.resources, self.node_names)
            if values is None:
                return rebuilt()
            rows.append((row, values))
            live += len(values[5]) - int(self.node_end[row] - self.node_start[row])
        appended = sum(len(values[5]) for _row, values in rows)
        if len(self.node_count) + appended > 2 * live + _NODE_SLACK:
            return rebuilt()
        new = _Table.__new__(_Table)
        new.bases, new.names = bases, names
        new.resources, new.node_names = self.resources, self.node_names
        new.codes = self.codes.copy()
        new.pods = self.pods.copy()
        new.cpu_milli = self.cpu_milli.copy()
        new.units = self.units.copy()
        new.present = self.present.copy()
        new.model_ok = self.model_ok.copy()
        new.unsafe = self.unsafe.copy()
        new.node_start = self.node_start.copy()
        new.node_end = self.node_end.copy()
        new.live_nodes = live
        counts: list[int] = []
        caps: list[list[int]] = [[] for _ in self.node_names]
        end = len(self.node_count)
        for row, (pods, cpu_milli, units, model_ok, unsafe, row_counts, row_caps) in rows:
            new.codes[row] = updates[row][1]
            new.pods[row] = pods
            new.cpu_milli[row] = cpu_milli
            new.units[:, row] = 0
            new.present[:, row] = False
            for r, v in units.items():
                new.units[r, row] = v
                new.present[r, row] = True
            new.model_ok[row] = model_ok
            new.unsafe[row] = unsafe
            new.node_start[row] = end + len(counts)
            counts.extend(row_counts)
            for k, column in enumerate(row_caps):
                caps[k].extend(column)
            new.node_end[row] = end + len(counts)
        if counts:
            new.node_count = np.concatenate([self.node_count, np.array(counts, dtype=np.int64)])
            extra = np.array(caps, dtype=np.int64).reshape(len(self.node_names), len(counts))
            new.node_cap = np.concatenate([self.node_cap, extra], axis=1)
        else:
            new.node_count, new.node_cap = self.node_count, self.node_cap
        return new

    def summary(self, request: _Request) -> np.ndarray:
        """``_summary_estimate`` for every row; ``pods`` where the request has no positive resource."""
        if not request.summary:
            return self.pods
        best: np.ndarray | None = None
        bad: np.ndarray | None = None
        for name, units, milli in request.summary:
            r = self.resources.get(name)
            if r is None:
                return np.zeros_like(self.pods)
            avail = self.units[r]
            missing = ~self.present[r] | (avail <= 0)
            n = self.cpu_milli // milli if name == "cpu" else avail // units
            best = n if best is None else np.minimum(best, n)
            bad = missing if bad is None else bad | missing
        assert best is not None and bad is not None
        return np.where(bad, 0, best)

    def model(self, request: _Request) -> np.ndarray:
        """``_model_estimate`` for every row."""
        pods = self.node_names.get("pods")
        if pods is None:
            fit = np.full(len(self.node_count), MODEL_NODE_PODS, dtype=np.int64)
        else:
            fit = self.node_cap[pods]
        for name, need in request.model:
            k = self.node_names.get(name)
            fit = np.minimum(fit, 0) if k is None else np.minimum(fit, self.node_cap[k] // need)
        sums = np.zeros(len(fit) + 1, dtype=np.int64)
        np.cumsum(self.node_count * fit, out=sums[1:])
        return sums[self.node_end] - sums[self.node_start]  # type: ignore[no-any-return]


_EMPTY_BASE = _ClusterBase(ClusterInfo(name=""))


class _Lineage:
    """The tables that follow one fleet through its changes: a cluster name keeps its row, and each
    new value of a cluster (a heartbeat) replaces the row in a table derived from the newest one.
    The newest ``_HISTORY`` tables are kept; the lineage's lock orders derivations."""

    __slots__ = ("lock", "rows", "tables")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: dict[str, int] = {}
        self.tables: list[_Table] = []

    @staticmethod
    def start(clusters: Sequence[ClusterInfo]) -> tuple[_Table, np.ndarray] | None:
        """A new lineage whose one table holds ``clusters``."""
        lineage = _Lineage()
        with lineage.lock:
            return lineage._place(clusters, np.full(len(clusters), -1, dtype=np.int64))

    def place(self, clusters: Sequence[ClusterInfo], codes: np.ndarray) -> tuple[_Table, np.ndarray] | None:
        """The newest table, derived if need be so that it holds every one of ``clusters`` (whose
        memo codes were ``codes``), and their rows in it; None when the call holds two values of one
        cluster name (the scalar path answers it)."""
        with self.lock:
            return self._place(clusters, codes)

    def _place(self, clusters: Sequence[ClusterInfo], codes: np.ndarray) -> tuple[_Table, np.ndarray] | None:
        table = self.tables[-1] if self.tables else None
        rows = codes & _ROW_MASK
        if table is not None:
            n = len(table.bases)
            missing = np.flatnonzero(table.codes[np.minimum(rows, n - 1)] != codes)
            if not len(missing):
                return table, rows  # another thread derived it meanwhile
        else:
            missing = np.arange(len(clusters))
        limit = max(4 * len(clusters), _TABLE_ROWS_MIN)
        updates: dict[int, tuple[_ClusterBase, int, str]] = {}
        placed: dict[int, ClusterInfo] = {}
        assigned: list[tuple[int, int]] = []
        for p in missing.tolist():
            c = clusters[p]
            row = self.rows.get(c.name)
            if row is None:
                if len(self.rows) >= min(limit, _ROW_MASK):
                    return _Lineage.start(clusters) if self.tables else None
                row = self.rows[c.name] = len(self.rows)
            other = placed.get(row)
            if other is not None:
                if other is not c:
                    return None
                assigned.append((p, updates[row][1]))
                continue
            code = (next(_stamps) << _ROW_BITS) | row
            placed[row] = c
            updates[row] = (_base(c), code, c.name)
            assigned.append((p, code))
        if table is None:
            size = len(self.rows)
            bases = [_EMPTY_BASE] * size
            names = [""] * size
            row_codes = [_NO_CODE] * size
            for row, (base, code, name) in updates.items():
                bases[row], row_codes[row], names[row] = base, code, name
            table = _Table(bases, row_codes, names)
        else:
            table = table.derive(updates)
        for row, c in placed.items():
            c.memo[_CodeKey] = updates[row][1]
            c.memo[_LineageKey] = self
        self.tables.append(table)
        del self.tables[:-_HISTORY]
        codes = codes.copy()
        for p, code in assigned:
            codes[p] = code
        return table, codes & _ROW_MASK


def _request_safe(request: _Request | None) -> bool:
    if request is None:
        return True
    return all(units < _SAFE and milli < _SAFE for _name, units, milli in request.summary) and all(
        need < _SAFE for _name, need in request.model
    )


def _table_rows(clusters: Sequence[ClusterInfo]) -> tuple[_Table, np.ndarray] | None:
    """A table holding every one of ``clusters`` and their rows in it, derived or built if there is
    none; None where the scalar path must answer (two values of one cluster name in the call)."""
    key = _CodeKey
    codes = np.fromiter((c.memo.get(key, -1) for c in clusters), dtype=np.int64, count=len(clusters))
    # The lineage of the first cluster that has one (a heartbeat's new value has none yet).
    lineage: _Lineage | None = next(
        (found for c in clusters if (found := c.memo.get(_LineageKey)) is not None), None
    )
    if lineage is None:
        return _Lineage.start(clusters)
    rows = codes & _ROW_MASK
    for table in lineage.tables[::-1]:
        n = len(table.bases)
        if (table.codes[np.minimum(rows, n - 1)] == codes).all():
            return table, rows
    return lineage.place(clusters, codes)


# Rows of whole snapshots, found by the snapshot's cluster tuple (kept here, so compared by
# identity): a ``ClusterSelection`` names its rows by position, so the per-cluster lookup of
# ``_table_rows`` runs once per snapshot (a heartbeat's snapshot derives its table from the
# lineage, one row replaced), not once per call.
_SNAPSHOT_TABLES: OrderedDict[int, tuple[tuple[ClusterInfo, ...], tuple[_Table, np.ndarray] | None]] = (
    OrderedDict()
)
_SNAPSHOT_TABLES_LIMIT = 4
_snapshot_tables_lock = threading.Lock()


def _snapshot_rows(selection: ClusterSelection) -> tuple[_Table, np.ndarray] | None:
    """The table of ``selection``'s snapshot and the selection's rows in it; None where the scalar
    path must answer (as ``_table_rows``)."""
    snapshot = selection.snapshot
    key = id(snapshot)
    with _snapshot_tables_lock:
        found = _SNAPSHOT_TABLES.get(key)
        if found is not None and found[0] is snapshot:
            _SNAPSHOT_TABLES.move_to_end(key)
            whole = found[1]
        else:
            found = None
    if found is None:
        whole = _table_rows(snapshot)
        with _snapshot_tables_lock:
            _SNAPSHOT_TABLES[key] = (snapshot, whole)
            _SNAPSHOT_TABLES.move_to_end(key)
            while len(_SNAPSHOT_TABLES) > _SNAPSHOT_TABLES_LIMIT:
                _SNAPSHOT_TABLES.popitem(last=False)
    if whole is None:
        return None
    table, rows = whole
    return table, rows[np.asarray(selection.positions, dtype=np.intp)]


def _estimate_many(
    clusters: Sequence[ClusterInfo], request: _Request | None, resource_modeling: bool
) -> list[int] | None:
    """``[_estimate(c) for c in clusters]`` over arrays; ``None`` where the scalar path must answer."""
    if not _request_safe(request):
        return None
    found = _snapshot_rows(clusters) if isinstance(clusters, ClusterSelection) else _table_rows(clusters)
    if found is None:
        return None
    table, rows = found
    if table.unsafe[rows].any():
        return None
    pods = table.pods[rows]
    if request is None:
        out = pods
    else:
        summary = np.minimum(table.summary(request)[rows], pods)
        if resource_modeling:
            model = np.minimum(np.minimum(table.model(request)[rows], MAX_INT32), pods)
            out = np.where(table.model_ok[rows], model, summary)
        else:
            out = summary
        out = np.where(pods <= 0, 0, out)
    # _saturate_int32: saturate at 2147483647 (never negative here: every column is clamped at 0).
    return np.minimum(out, MAX_INT32).tolist()  # type: ignore[no-any-return]


def estimate_cluster(
    cluster: ClusterInfo,
    request: tuple[tuple[str, Fraction], ...] | None,
    *,
    resource_modeling: bool = True,
) -> int:
    """Replicas of one per-replica request (``None`` = no requirements) that fit ``cluster``."""
    converted = _converted(request) if request is not None else None
    return _estimate(_base(cluster), converted, resource_modeling)


class GeneralEstimator:
    """The estimator every scheduler has (Karmada's "general-estimator"); never raises, never -1."""

    name = NAME

    def __init__(self, *, resource_modeling: bool = True) -> None:
        # Feature gate CustomizedClusterResourceModeling (beta, on by default).
        self.resource_modeling = resource_modeling

    def max_available_replicas(
        self, clusters: Sequence[ClusterInfo], replica_requirements: ReplicaRequirements | None
    ) -> list[int]:
        request = replica_requirements.request_key() if replica_requirements is not None else None
        converted = _converted(request) if request is not None else None
        modeling = self.resource_modeling
        if len(clusters) >= VECTOR_MIN:
            answer = _estimate_many(clusters, converted, modeling)
            if answer is not None:
                return answer
        return [_estimate(_base(c), converted, modeling) for c in clusters]

    def max_available_component_sets(
        self, clusters: Sequence[ClusterInfo], components: Sequence[Component]
    ) -> list[int]:
        modeling = self.resource_modeling
        return [estimate_component_sets(c, components, resource_modeling=modeling) for c in clusters]


# ---- component sets (gate MultiplePodTemplatesScheduling, alpha) ------------------------


def _model_demand(request: tuple[tuple[str, Quantity], ...]) -> list[tuple[str, int]]:
    demand: list[tuple[str, int]] = []
    for name, q in request:
        if name == "cpu":
            need = q.milli_value()
        elif name in ("memory", "ephemeral-storage") or is_scalar_resource(name):
            need = q.value()
        else:
            continue
        if need > 0:
            demand.append((name, need))
    return demand


def _simulate_sets(base: _ClusterBase, components: Sequence[Component], upper: int) -> int:
    """First fit of whole component sets over the virtual model nodes, at most ``upper`` sets."""
    nodes: list[dict[str, int]] = []
    for count, cap in base.model_nodes:
        nodes.extend(dict(cap) for _ in range(count))
    parts = []
    for c in components:
        request = c.replica_requirements.resource_request if c.replica_requirements is not None else ()
        parts.append((_model_demand(request), c.replicas))
    cursors = [0] * len(parts)
    sets = 0
    while sets < upper:
        for index, (demand, replicas) in enumerate(parts):
            remaining = replicas
            # Nodes only lose capacity, so a node that fits none of a component never will again.
            i = cursors[index]
            while remaining > 0 and i < len(nodes):
                node = nodes[i]
                fit = node["pods"]
                for name, need in demand:
                    fit = min(fit, node.get(name, 0) // need)
                if fit <= 0:
                    if i == cursors[index]:
                        cursors[index] += 1
                    i += 1
                    continue
                take = min(fit, remaining)
                node["pods"] -= take
                for name, need in demand:
                    node[name] = max(node.get(name, 0) - take * need, 0)
                remaining -= take
                if remaining > 0:
                    i += 1
            if remaining > 0:
                return sets  # what this set consumed is not given back
        sets += 1
    return sets


def estimate_component_sets(
    cluster: ClusterInfo, components: Sequence[Component], *, resource_modeling: bool = True
) -> int:
    """Complete sets of ``components`` that fit ``cluster`` (general estimator, component-set path)."""
    s = cluster.resource_summary
    if s is None:
        return 0
    base = _base(cluster)
    pods = base.status_pods
    if pods <= 0:
        return 0
    if cluster.assumed:
        # The assumptions leave the status' headroom in this path's units.
        pods -= base.assumed_pods
        if pods <= 0:
            return 0
    per_set_pods = sum(c.replicas for c in components)
    if per_set_pods <= 0:
        return _saturate_int32(pods)
    sets = pods // per_set_pods
    per_set: dict[str, int] = {}
    for c in components:
        if c.replica_requirements is None:
            continue
        for name, q in c.replica_requirements.resource_request:
            per_set[name] = per_set.get(name, 0) + c.replicas * q.format_units()
    if any(v > 0 for v in per_set.values()):
        for name, need in per_set.items():
            if need <= 0:
                continue
            q = s.allocatable.get(name)
            if q is None:
                return 0
            zero = Quantity(0)
            avail = (q - s.allocated.get(name, zero) - s.allocating.get(name, zero)).format_units()
            avail -= base.assumed_units.get(name, 0)
            if avail <= 0:
                return 0
            sets = min(sets, avail // need)
    if resource_modeling and s.allocatable_modelings and not base.model_error:
        sets = min(sets, _simulate_sets(base, components, sets))
    return _saturate_int32(sets)
