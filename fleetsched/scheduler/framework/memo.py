"""The memo of plugin answers: per plugin and binding key, the answers by cluster, valid while the
cluster facets the plugin declares are unchanged (the contract is in ``interface.py``), and whole
filter+score outcomes shared by snapshots in which nothing the profile reads changed.

``Tokens`` gives per cluster and facet set a version that changes exactly when the facets' values
change; ``MemoEntry`` holds one plugin's answers over one snapshot layout; ``OutcomeMemo`` is the
Framework's part that keeps whole outcomes for the two newest snapshots. Bounded: ``LRU`` evicts the
least recently used entries one at a time, by count and by the answers they hold.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fleetsched.scheduler.framework.interface import ClusterFacet, DeclaresInputs, Status
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo

if TYPE_CHECKING:
    from fleetsched.scheduler.framework.fit import FitOutcome

DEFAULT_MEMO_LIMIT = 20_000
# Answers (one per plugin, binding key and cluster) the memo holds at most: ~4M pointers.
DEFAULT_MEMO_CELLS = 4_000_000


class LRU:
    """A bounded mapping that evicts its least recently used entries one at a time.

    Bounded twice: by the number of entries, and by their total ``cost`` (an entry costs one per
    cluster it holds an answer for), so a fleet of thousands of clusters keeps fewer entries
    instead of more memory."""

    __slots__ = ("_cost", "_data", "cost_limit", "limit")

    def __init__(self, limit: int, cost_limit: int | None = None) -> None:
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self.limit = limit
        self.cost_limit = cost_limit
        self._cost = 0

    def get(self, key: Hashable) -> Any:
        found = self._data.get(key)
        if found is None:
            return None
        self._data.move_to_end(key)
        return found[0]

    def put(self, key: Hashable, value: Any, cost: int = 1) -> None:
        old = self._data.pop(key, None)
        if old is not None:
            self._cost -= old[1]
        self._data[key] = (value, cost)
        self._cost += cost
        while len(self._data) > self.limit or (
            self.cost_limit is not None and self._cost > self.cost_limit and len(self._data) > 1
        ):
            _, (_, evicted) = self._data.popitem(last=False)
            self._cost -= evicted

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        self._data.clear()
        self._cost = 0


@dataclass(slots=True)
class MemoEntry:
    """One plugin's answers for one binding-side key, over the snapshot layout ``names``.

    Kept small for the garbage collector (a memo holds thousands): the declared facets' versions
    per cluster as a tuple of ints, and only the non-trivial answers: a filter's rejections by
    position (every other asked cluster passed), a score plugin's raw scores as a tuple of ints.
    ``unasked`` are the positions with no answer (clusters being deleted then)."""

    generation: int
    names: tuple[str, ...]
    versions: tuple[int, ...]
    rejections: dict[int, Status] | None = None
    vector: tuple[int, ...] | None = None
    unasked: tuple[int, ...] = ()


FACET_READERS: tuple[tuple[ClusterFacet, Callable[[ClusterInfo], Any]], ...] = (
    (ClusterFacet.LABELS, lambda c: c.labels),
    (ClusterFacet.FIELDS, lambda c: (c.provider, c.region, c.zones)),
    (ClusterFacet.TAINTS, lambda c: c.taints),
    (ClusterFacet.API_ENABLEMENTS, lambda c: c.api_enablements),
    (ClusterFacet.RESOURCES, lambda c: (c.resource_summary, c.resource_models)),
    (ClusterFacet.DELETION, lambda c: c.deleting),
)


class Tokens:
    """Per cluster and facet set, a version number that changes exactly when the declared facets'
    values change (compared exactly, never by a hash). The values are read once per cluster
    version: the ClusterInfo last seen per name is kept with its facet values and version.

    ``changes`` gives, once per pair of snapshots and facet set, the positions whose versions
    differ (or None when the cluster list itself changed); a memo entry then revalidates in the time
    of the changed clusters."""

    __slots__ = ("_by_snapshot", "_changes", "_counter", "_last", "_lock")

    def __init__(self) -> None:
        self._by_snapshot = LRU(32)
        self._changes = LRU(256)
        # per facet set: cluster name -> (the ClusterInfo last seen, its facet values, their version)
        self._last: dict[ClusterFacet, dict[str, tuple[ClusterInfo, Any, int]]] = {}
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def of(self, snapshot: Snapshot, facets: ClusterFacet) -> tuple[int, ...]:
        key = (snapshot.generation, facets)
        with self._lock:
            found = self._by_snapshot.get(key)
            if found is not None:
                return found  # type: ignore[no-any-return]
            readers = [read for facet, read in FACET_READERS if facet in facets]
            last = self._last.setdefault(facets, {})
            clusters = snapshot.clusters
            # A snapshot derived from one already seen (``Snapshot.replaced``): its versions, with
            # the changed positions read again (the others are the same ClusterInfo objects); the
            # very same tuple when those kept their versions, as a heartbeat keeps all but RESOURCES'.
            parent = getattr(snapshot, "parent", None)
            inherited = self._by_snapshot.get((parent[0], facets)) if parent is not None else None
            if inherited is not None and len(inherited) == len(clusters):
                positions: Sequence[int] = parent[1]  # type: ignore[index]
            else:
                inherited = None
                positions = range(len(clusters))
            found_versions: dict[int, int] = {}
            for i in positions:
                cluster = clusters[i]
                seen = last.get(cluster.name)
                if seen is not None and seen[0] is cluster:
                    found_versions[i] = seen[2]
                    continue
                values = tuple(read(cluster) for read in readers)
                version = seen[2] if seen is not None and seen[1] == values else next(self._counter)
                last[cluster.name] = (cluster, values, version)
                found_versions[i] = version
            if len(last) > 4 * max(1, len(snapshot.clusters)):
                names = set(snapshot.names)
                for name in [n for n in last if n not in names]:
                    del last[name]
            if inherited is None:
                out = tuple(found_versions[i] for i in range(len(clusters)))
            elif all(inherited[i] == v for i, v in found_versions.items()):
                out = inherited
            else:
                versions = list(inherited)
                for i, v in found_versions.items():
                    versions[i] = v
                out = tuple(versions)
            self._by_snapshot.put(key, out)
            return out

    def known(self, generation: int, facets: ClusterFacet) -> tuple[int, ...] | None:
        """The versions of snapshot ``generation`` for ``facets``, if still remembered."""
        with self._lock:
            return self._by_snapshot.get((generation, facets))  # type: ignore[no-any-return]

    def changes(
        self, entry: MemoEntry, snapshot: Snapshot, facets: ClusterFacet, versions: tuple[int, ...]
    ) -> tuple[int, ...] | None:
        """Positions whose versions differ between the entry's snapshot and ``snapshot``; None when
        the two snapshots do not list the same clusters in the same order."""
        if not (entry.names is snapshot.names or entry.names == snapshot.names):
            return None
        old = entry.versions
        if old == versions:
            return ()
        key = (entry.generation, snapshot.generation, facets)
        with self._lock:
            found = self._changes.get(key)
        if found is not None:
            return found  # type: ignore[no-any-return]
        changed = tuple(i for i, v in enumerate(versions) if old[i] != v)
        with self._lock:
            self._changes.put(key, changed)
        return changed


class OutcomeMemo:
    """The Framework's memo of whole filter+score outcomes (set up in its constructor)."""

    _memo_lock: threading.Lock
    _outcomes: dict[int, LRU]
    _tokens: Tokens
    _outcome_facets: ClusterFacet
    outcome_limit: int

    def _outcome_memo(self, snapshot: Snapshot) -> LRU | None:
        """The memo of whole outcomes valid for ``snapshot``: its own, or the one of the snapshot it
        was derived from when the plugins' facets are unchanged between the two (then shared)."""
        generation = snapshot.generation
        with self._memo_lock:
            memo = self._outcomes.get(generation)
        if memo is not None:
            return memo
        parent = getattr(snapshot, "parent", None)
        if parent is None:
            return None
        with self._memo_lock:
            inherited = self._outcomes.get(parent[0])
        if inherited is None:
            return None
        before = self._tokens.known(parent[0], self._outcome_facets)
        if before is None or before != self._tokens.of(snapshot, self._outcome_facets):
            return None
        with self._memo_lock:
            return self._keep_outcomes(generation, inherited)

    def _keep_outcomes(self, generation: int, memo: LRU) -> LRU | None:
        """Under the memo lock: ``memo`` as the outcome memo of ``generation``, the two newest kept."""
        found = self._outcomes.get(generation)
        if found is not None:
            return found
        if len(self._outcomes) >= 2 and generation < min(self._outcomes):
            return None  # a worker still on an older snapshot: not worth keeping
        self._outcomes[generation] = memo
        while len(self._outcomes) > 2:
            del self._outcomes[min(self._outcomes)]
        return memo

    def _remember_outcome(self, snapshot: Snapshot, key: Hashable, out: FitOutcome, cost: int) -> None:
        memo = self._outcome_memo(snapshot)
        if memo is None:
            # Its versions, for the snapshots that will be derived from this one.
            self._tokens.of(snapshot, self._outcome_facets)
            with self._memo_lock:
                memo = self._keep_outcomes(
                    snapshot.generation, LRU(self.outcome_limit, DEFAULT_MEMO_CELLS // 4)
                )
        if memo is None:
            return
        with self._memo_lock, contextlib.suppress(TypeError):  # an unhashable key was named already
            memo.put(key, out, cost)


def declared_inputs(plugin: Any) -> ClusterFacet | None:
    """The cluster facets a plugin declares, or None when it declares nothing (never reused)."""
    if isinstance(plugin, DeclaresInputs):
        facets = plugin.cluster_inputs
        if isinstance(facets, ClusterFacet):
            return facets
    return None


def unasked_positions(answers: list[Any], snapshot: Snapshot) -> tuple[int, ...]:
    """Positions left without an answer: the clusters being deleted (never asked)."""
    return tuple(i for i in snapshot.deleting_index() if answers[i] is None)


def gather(values: Sequence[int], positions: Sequence[int]) -> list[int]:
    """``[values[i] for i in positions]``, gathered in C."""
    if not positions:
        return []
    if len(positions) == 1:
        return [values[positions[0]]]
    return list(operator.itemgetter(*positions)(values))


def reuse_answers(
    entry: MemoEntry,
    snapshot: Snapshot,
    versions: tuple[int, ...],
    answers: list[Any],
    *,
    filters: bool,
) -> None:
    """The cluster list changed (added, removed, reordered): copy into ``answers`` the entry's answers
    of clusters, by name, whose declared facets are unchanged."""
    position = {name: j for j, name in enumerate(entry.names)}
    unasked = set(entry.unasked)
    clusters = snapshot.clusters
    old = entry.versions
    rejections = entry.rejections or {}
    vector = entry.vector
    for i, name in enumerate(snapshot.names):
        j = position.get(name)
        if j is None or j in unasked or old[j] != versions[i] or clusters[i].deleting:
            continue
        if filters:
            answers[i] = rejections.get(j, PASSED)
        elif vector is not None:
            answers[i] = vector[j]


PASSED = Status.success()
