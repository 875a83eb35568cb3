"""The framework runtime: one ``Framework`` per profile, built from a registry, running the plugins.

Owns the construction of a profile's plugins (args validated by each plugin's ``args_model``, the
point's Protocol checked once), the run order of the extension points, weights and NormalizeScore,
extenders' filter and prioritize, timing per plugin and point through an injected observer (no
metrics import here), the attribution of errors and overruns to a plugin (or their skipping, for the
profile's ignorable plugins), and ALL memoisation of plugin answers, keyed by the inputs each plugin
declares and stored per cluster (the contract is written down in ``interface.py``).

Network calls: the runtime states the extender calls of a step as request values and hands them to
a ``Driver``; prioritize requests of all extenders go in one batch, and the algorithm
(``pipeline.py``) does the same for all estimators' requests. ``SerialDriver`` performs them in turn
in the calling thread (``fleetsched simulate``, in-process estimators); ``ConcurrentDriver`` performs
one batch at once on an executor (the operator's worker pool), so the slowest call, not the sum,
bounds a step. A driver turns failures into answers; the algorithm decides what they mean (an
estimator's is ignored, an extender's fails the binding unless it is ignorable). Nothing here waits
on a network itself, and results do not depend on the driver.

Budgets: after each extension point, each filter and score plugin and each extender call the
runtime calls ``groups.checkpoint()`` (never inside a plugin's try block), so a caller that bounds
one binding's time (the operator's ``compute.observe_step`` budget) can stop the attempt there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import operator
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Protocol

from fleetsched.scheduler.config.types import ExtensionPoint, Profile
from fleetsched.scheduler.framework.containment import (
    Call,
    PluginError,
    PluginHealth,
    check_scores,
    describe,
    entering,
    escapes,
    leaving,
    quote,
)
from fleetsched.scheduler.framework.interface import (
    MAX_EXTENDER_PRIORITY,
    MAX_SCORE,
    MIN_SCORE,
    BatchFilterPlugin,
    BatchScorePlugin,
    ClusterFacet,
    Code,
    DeclaresInputs,
    EstimateRequest,
    Extender,
    ExtenderFilterRequest,
    ExtenderPrioritizeRequest,
    FilterContext,
    FilterPlugin,
    NormalizeScorePlugin,
    PermitPlugin,
    Plugin,
    PluginArgsError,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueuedBindingInfo,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
)
from fleetsched.scheduler.framework.registry import Registry
from fleetsched.scheduler.groups import checkpoint
from fleetsched.scheduler.outcome import (
    ClusterVerdict,
    ExtenderVerdict,
    FilterSummary,
    PluginScore,
    SkippedPlugin,
)
from fleetsched.scheduler.types import ClusterInfo, ClusterSelection, FrozenDict, TargetCluster

__all__ = [
    "POINT_PROTOCOLS",
    "STEPS",
    "STEP_ASSIGN_REPLICAS",
    "STEP_FILTER",
    "STEP_SCORE",
    "STEP_SELECT",
    "BindingCycle",
    "ClusterSnapshot",
    "ConcurrentDriver",
    "Driver",
    "ExtenderSkipObserver",
    "ExtenderVerdict",
    "FitOutcome",
    "Framework",
    "FrameworkError",
    "Observer",
    "PluginError",
    "PluginScore",
    "PointObserver",
    "SerialDriver",
    "SkippedPlugin",
]

# The generic scheduler's steps, under Karmada's names (the ``schedule_step`` label of
# karmada_scheduler_scheduling_algorithm_duration_seconds).
STEP_FILTER = "Filter"
STEP_SCORE = "Score"
STEP_SELECT = "Select"
STEP_ASSIGN_REPLICAS = "AssignReplicas"
STEPS: tuple[str, ...] = (STEP_FILTER, STEP_SCORE, STEP_SELECT, STEP_ASSIGN_REPLICAS)

# Karmada's extension point labels (karmada_scheduler_framework_extension_point_duration_seconds).
POINT_NAMES: dict[ExtensionPoint, str] = {
    ExtensionPoint.QUEUE_SORT: "QueueSort",
    ExtensionPoint.PRE_FILTER: "PreFilter",
    ExtensionPoint.FILTER: "Filter",
    ExtensionPoint.POST_FILTER: "PostFilter",
    ExtensionPoint.PRE_SCORE: "PreScore",
    ExtensionPoint.SCORE: "Score",
    ExtensionPoint.RESERVE: "Reserve",
    ExtensionPoint.PERMIT: "Permit",
    ExtensionPoint.PRE_BIND: "PreBind",
    ExtensionPoint.POST_BIND: "PostBind",
}
NORMALIZE_SCORE = "NormalizeScore"
UNRESERVE = "Unreserve"

# Called with (plugin, extension point, result, seconds) once per plugin and point per attempt;
# the operator exports it as karmada_scheduler_plugin_execution_duration_seconds. ``result`` is a
# ``Code`` value ("Success", "Unschedulable", "Error", ...).
Observer = Callable[[str, str, str, float], None]
# Called with (extension point, result, seconds) once per point per attempt; the operator exports it as
# karmada_scheduler_framework_extension_point_duration_seconds.
PointObserver = Callable[[str, str, float], None]
# Called with (extender name, verb "filter"/"prioritize", the exception raised or what was wrong with
# the answer) when an ignorable extender failed and was skipped; the scheduler process counts it as
# fleetsched_scheduler_extender_ignored_failures_total.
ExtenderSkipObserver = Callable[[str, str, "BaseException | str"], None]

# Per extension point: the Protocol a plugin enabled there must implement, and how errors name it.
POINT_PROTOCOLS: dict[ExtensionPoint, type] = {
    ExtensionPoint.QUEUE_SORT: QueueSortPlugin,
    ExtensionPoint.PRE_FILTER: PreFilterPlugin,
    ExtensionPoint.FILTER: FilterPlugin,
    ExtensionPoint.POST_FILTER: PostFilterPlugin,
    ExtensionPoint.PRE_SCORE: PreScorePlugin,
    ExtensionPoint.SCORE: ScorePlugin,
    ExtensionPoint.RESERVE: ReservePlugin,
    ExtensionPoint.PERMIT: PermitPlugin,
    ExtensionPoint.PRE_BIND: PreBindPlugin,
    ExtensionPoint.POST_BIND: PostBindPlugin,
}
_METHODS: dict[ExtensionPoint, str] = {
    ExtensionPoint.QUEUE_SORT: "less(a, b)",
    ExtensionPoint.PRE_FILTER: "pre_filter(ctx)",
    ExtensionPoint.FILTER: "filter(ctx, cluster)",
    ExtensionPoint.POST_FILTER: "post_filter(ctx, diagnosis)",
    ExtensionPoint.PRE_SCORE: "pre_score(ctx, clusters)",
    ExtensionPoint.SCORE: "score(ctx, cluster)",
    ExtensionPoint.RESERVE: "reserve(ctx, targets) and unreserve(ctx, targets)",
    ExtensionPoint.PERMIT: "permit(ctx, targets)",
    ExtensionPoint.PRE_BIND: "pre_bind(ctx, targets)",
    ExtensionPoint.POST_BIND: "post_bind(ctx, targets)",
}

DEFAULT_MEMO_LIMIT = 20_000
# kube-scheduler's rule: an extender's 0..MAX_EXTENDER_PRIORITY score counts x MAX_SCORE/10, so an
# extender of weight 1 weighs as much as a score plugin of weight 1.
EXTENDER_SCALE = MAX_SCORE // MAX_EXTENDER_PRIORITY
# Answers (one per plugin, binding key and cluster) the memo holds at most: ~4M pointers.
DEFAULT_MEMO_CELLS = 4_000_000


class FrameworkError(ValueError):
    """A profile cannot be built: an unknown plugin, a plugin lacking a point's method, bad args.
    One line, naming the profile and the plugin (``PluginArgsError`` is the args case)."""


class ClusterSnapshot(Protocol):
    """What the runtime reads of a cluster snapshot (``pipeline.Snapshot``): immutable clusters,
    their names, a process-unique ``generation`` (memo validity), and positions by deletion."""

    clusters: tuple[ClusterInfo, ...]
    names: tuple[str, ...]
    generation: int

    def deleting_index(self) -> list[int]: ...

    def live_index(self) -> list[int]: ...

    def base_verdicts(self) -> tuple[ClusterVerdict, ...]: ...


class Driver(Protocol):
    """Performs the requests of one step; returns one answer per request, in order, where an answer
    is the call's value or the exception it raised (never raised itself)."""

    def perform(self, requests: Sequence[Any]) -> list[Any]: ...


# The package of fleetsched's own plugins (plugins/registry.py); an out-of-tree plugin lives elsewhere.
IN_TREE_PREFIX = "fleetsched.scheduler.plugins."


class SerialDriver:
    """Performs each request in turn, in the calling thread."""

    def perform(self, requests: Sequence[Any]) -> list[Any]:
        answers: list[Any] = []
        for request in requests:
            try:
                answers.append(_perform_one(request))
            except BaseException as e:  # an answer, not a crash: the algorithm decides what it means
                if escapes(e):
                    raise
                answers.append(_as_exception(e))
        return answers


class ConcurrentDriver:
    """Performs the requests of one step at the same time on an executor (e.g. the operator's
    thread pool), so a slow estimator or extender costs its own latency, not the sum. The answers
    are the same as ``SerialDriver``'s, in request order."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor

    def perform(self, requests: Sequence[Any]) -> list[Any]:
        if len(requests) <= 1:
            return SerialDriver().perform(requests)
        futures = [self.executor.submit(_perform_one, r) for r in requests]
        answers: list[Any] = []
        for future in futures:
            try:
                answers.append(future.result())
            except BaseException as e:
                if escapes(e):
                    raise
                answers.append(_as_exception(e))
        return answers


class CallRaised(Exception):
    """An estimator or extender call raised something other than an ``Exception`` (a SystemExit, a
    KeyboardInterrupt of its own): an answer like any failure, not the end of the process."""


def _as_exception(e: BaseException) -> Exception:
    return e if isinstance(e, Exception) else CallRaised(describe(e))


def _perform_one(request: Any) -> Any:
    if isinstance(request, EstimateRequest):
        if request.components:
            return request.estimator.max_available_component_sets(  # type: ignore[attr-defined]
                request.clusters, request.components
            )
        return request.estimator.max_available_replicas(request.clusters, request.replica_requirements)
    if isinstance(request, ExtenderFilterRequest):
        return request.extender.filter(request.binding, request.clusters)
    if isinstance(request, ExtenderPrioritizeRequest):
        return request.extender.prioritize(request.binding, request.clusters)
    raise TypeError(f"unknown request {type(request).__name__}")


# ---- the memo ------------------------------------------------------------------------------------


class _LRU:
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
class _Entry:
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


_FACET_READERS: tuple[tuple[ClusterFacet, Callable[[ClusterInfo], Any]], ...] = (
    (ClusterFacet.LABELS, lambda c: c.labels),
    (ClusterFacet.FIELDS, lambda c: (c.provider, c.region, c.zones)),
    (ClusterFacet.TAINTS, lambda c: c.taints),
    (ClusterFacet.API_ENABLEMENTS, lambda c: c.api_enablements),
    (ClusterFacet.RESOURCES, lambda c: (c.resource_summary, c.resource_models)),
    (ClusterFacet.DELETION, lambda c: c.deleting),
)


class _Tokens:
    """Per cluster and facet set, a version number that changes exactly when the declared facets'
    values change (compared exactly, never by a hash). The values are read once per cluster
    version: the ClusterInfo last seen per name is kept with its facet values and version.

    ``changes`` gives, once per pair of snapshots and facet set, the positions whose versions
    differ (or None when the cluster list itself changed); a memo entry then revalidates in the time
    of the changed clusters."""

    __slots__ = ("_by_snapshot", "_changes", "_counter", "_last", "_lock")

    def __init__(self) -> None:
        self._by_snapshot = _LRU(32)
        self._changes = _LRU(256)
        # per facet set: cluster name -> (the ClusterInfo last seen, its facet values, their version)
        self._last: dict[ClusterFacet, dict[str, tuple[ClusterInfo, Any, int]]] = {}
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def of(self, snapshot: ClusterSnapshot, facets: ClusterFacet) -> tuple[int, ...]:
        key = (snapshot.generation, facets)
        with self._lock:
            found = self._by_snapshot.get(key)
            if found is not None:
                return found  # type: ignore[no-any-return]
            readers = [read for facet, read in _FACET_READERS if facet in facets]
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
        self, entry: _Entry, snapshot: ClusterSnapshot, facets: ClusterFacet, versions: tuple[int, ...]
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


# ---- one attempt's outcome of the filter and score points ----------------------------------------


@dataclass(slots=True)
class FitOutcome:
    """Filter and score results of one attempt (one affinity term) over one snapshot.

    ``failures``: per filter plugin, extender or PreFilter rejection (in run order), its name and its
    rejections by snapshot index; the first one listed for a cluster is the one reported.
    ``rows`` per feasible cluster (same order as ``feasible``): each score plugin's and extender's part.
    """

    feasible: list[ClusterInfo]
    totals: list[int]
    snapshot: ClusterSnapshot
    failures: tuple[tuple[str, dict[int, Status]], ...]
    feasible_index: list[int]
    score_names: tuple[str, ...] = ()
    raw: tuple[Sequence[int], ...] = ()  # per score plugin: raw scores by snapshot index
    normalized: tuple[Sequence[int] | None, ...] = ()  # per score plugin: by feasible position
    weights: tuple[int, ...] = ()
    extender_scores: tuple[tuple[str, int, Sequence[int]], ...] = ()  # (name, weight, by feasible position)
    extender_verdicts: tuple[ExtenderVerdict, ...] = ()
    skipped: tuple[SkippedPlugin, ...] = ()
    post_filter: tuple[tuple[str, PostFilterResult], ...] = ()
    _verdicts: tuple[ClusterVerdict, ...] | None = None
    _summary: FilterSummary | None = None

    def summary(self) -> FilterSummary:
        """The verdicts' counts, from the rejection vectors (no verdict object per cluster)."""
        if self._summary is None:
            deleting = self.snapshot.deleting_index()
            rejected: dict[str, int] = {"Deleting": len(deleting)} if deleting else {}
            claimed = set(deleting)
            for name, failed in self.failures:  # in filter order: the first rejection counts
                for i, r in failed.items():
                    if i not in claimed:
                        claimed.add(i)
                        label = r.plugin or name
                        rejected[label] = rejected.get(label, 0) + 1
            self._summary = FilterSummary(
                len(self.snapshot.clusters) - len(claimed), tuple(sorted(rejected.items()))
            )
        return self._summary  # type: ignore[no-any-return]

    def verdicts(self) -> tuple[ClusterVerdict, ...]:
        """Per cluster in snapshot order: feasible, being deleted, or the first rejecting plugin."""
        if self._verdicts is None:
            out = []
            for i, base in enumerate(self.snapshot.base_verdicts()):
                verdict = base
                if base.feasible:
                    for name, failed in self.failures:
                        r = failed.get(i)
                        if r is not None:
                            verdict = ClusterVerdict(base.cluster, False, r.plugin or name, r.reasons)
                            break
                out.append(verdict)
            self._verdicts = tuple(out)
        return self._verdicts

    def diagnosis(self) -> dict[str, tuple[str, ...]]:
        """Rejected clusters (not being deleted) and their reasons, for the FitError message."""
        return {v.cluster: v.reasons for v in self.verdicts() if not v.feasible and not v.deleting}

    def plugin_scores(self, position: int) -> tuple[PluginScore, ...]:
        """Each score plugin's and extender's part of the feasible cluster at ``position``."""
        i = self.feasible_index[position]
        out = []
        for k, name in enumerate(self.score_names):
            raw = self.raw[k][i]
            normalized = self.normalized[k]
            out.append(
                PluginScore(name, raw, raw if normalized is None else normalized[position], self.weights[k])
            )
        for name, weight, scores in self.extender_scores:
            raw = scores[position]
            out.append(PluginScore(name, raw, raw * EXTENDER_SCALE, weight, extender=True))
        return tuple(out)


@dataclass(slots=True)
class _ScoreSlot:
    plugin: ScorePlugin
    name: str
    weight: int
    normalize: bool
    batch: bool
    inputs: ClusterFacet | None
    # The binding side of the Score answers: ``score_key`` where the plugin has one, else
    # ``binding_key`` (named in errors by ``key_name``).
    key_name: str = "binding_key"


@dataclass(slots=True)
class _FilterSlot:
    plugin: FilterPlugin
    name: str
    batch: bool
    inputs: ClusterFacet | None


# ---- waiting at Permit ---------------------------------------------------------------------------


class _WaitingBinding:
    """A binding held at Permit until every waiting plugin allows it, one rejects it, or time is up.

    Like kube-scheduler's waitingPod, whose channel receives the decision: whoever waits registers a
    callback (``on_decided``) that the last ``allow`` or the first ``reject`` calls, in the thread
    that decided. The timeout calls nothing (the core runs no timers): the waiter waits at most
    until ``deadline`` on the framework's clock, after which ``status`` is the timeout rejection."""

    __slots__ = ("_deadline", "_key", "_listeners", "_lock", "_pending", "_rejected")

    def __init__(self, key: str, pending: dict[str, float], now: float) -> None:
        self._key = key
        self._pending = dict(pending)  # plugin -> timeout
        self._deadline = now + min(pending.values())
        self._rejected: tuple[str, str] | None = None
        self._listeners: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    @property
    def key(self) -> str:
        return self._key

    def pending_plugins(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._pending)

    def allow(self, plugin: str) -> None:
        with self._lock:
            self._pending.pop(plugin, None)
            woken = self._take_listeners() if not self._pending else []
        _call_all(woken)

    def reject(self, plugin: str, reason: str) -> None:
        with self._lock:
            if self._rejected is None:
                self._rejected = (plugin, reason)
            woken = self._take_listeners()
        _call_all(woken)

    def on_decided(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once when every waiting plugin has allowed the binding or one rejected
        it; at once (in this thread) when that has already happened."""
        with self._lock:
            if self._rejected is None and self._pending:
                self._listeners.append(callback)
                return
        _call_all([callback])

    def _take_listeners(self) -> list[Callable[[], None]]:
        woken, self._listeners = self._listeners, []
        return woken

    def status(self, now: float) -> Status | None:
        """Success once all allowed, a rejection, or None while still waiting."""
        with self._lock:
            if self._rejected is not None:
                plugin, reason = self._rejected
                return Status(Code.UNSCHEDULABLE, (reason,), plugin)
            if not self._pending:
                return Status.success()
            if now >= self._deadline:
                plugins = ", ".join(sorted(self._pending))
                return Status(
                    Code.UNSCHEDULABLE,
                    (f"rejected due to timeout after waiting at Permit for {plugins}",),
                    next(iter(sorted(self._pending))),
                )
            return None

    @property
    def deadline(self) -> float:
        return self._deadline


def _call_all(callbacks: Sequence[Callable[[], None]]) -> None:
    """Wake the waiters; a waiter that is gone (its event loop closed) must not fail the plugin
    that allowed or rejected the binding."""
    for callback in callbacks:
        with contextlib.suppress(Exception):
            callback()


# ---- the Framework -------------------------------------------------------------------------------


class _Handle:
    """The ``Handle`` a plugin's factory is given: the profile's name, the clock and the bindings
    waiting at Permit, and nothing else of the Framework (no way to its plugins, memo or settings)."""

    __slots__ = ("_framework",)

    def __init__(self, framework: Framework) -> None:
        self._framework = framework

    @property
    def profile_name(self) -> str:
        return self._framework.profile_name

    def clock(self) -> float:
        return self._framework.clock()

    def waiting_binding(self, key: str) -> _WaitingBinding | None:
        return self._framework.waiting_binding(key)


class Framework:
    """The plugins of one profile, ready to run; safe to share between worker threads.

    Build it with ``Framework(registry, profile, ...)``; a bad profile raises ``FrameworkError`` (or
    its subclass-like ``PluginArgsError``) with one line naming the profile, the plugin and the field.
    """

    def __init__(
        self,
        registry: Registry,
        profile: Profile,
        *,
        extenders: Sequence[Extender] = (),
        observer: Observer | None = None,
        point_observer: PointObserver | None = None,
        clock: Callable[[], float] = time.monotonic,
        timer: Callable[[], float] = time.perf_counter,
        driver: Driver | None = None,
        memo_limit: int = DEFAULT_MEMO_LIMIT,
        extender_skipped: ExtenderSkipObserver | None = None,
    ) -> None:
        self.profile = profile
        self.extenders: tuple[Extender, ...] = tuple(extenders)
        self.observer = observer
        self.point_observer = point_observer
        # Told of each failure of an ignorable extender that was skipped (the edge counts them).
        self.extender_skipped = extender_skipped
        self._clock = clock
        self._timer = timer
        self.driver: Driver = driver or SerialDriver()
        self._instances: dict[str, Plugin] = {}
        self._waiting: dict[str, _WaitingBinding] = {}
        self._waiting_lock = threading.Lock()
        # Overruns and broken plugins of this profile (``containment.PluginHealth``).
        self.health = PluginHealth(profile.scheduler_name, clock=clock)
        # What plugins are given at construction: the Handle's three calls, not this object.
        self._handle = _Handle(self)
        for point in ExtensionPoint:
            for entry in profile.enabled(point):
                plugin = self._instance(registry, entry.name)
                protocol = POINT_PROTOCOLS[point]
                if not isinstance(plugin, protocol):
                    raise FrameworkError(
                        f"profiles[{profile.scheduler_name}].plugins.{point.value}: plugin {entry.name!r} "
                        f"does not implement {POINT_NAMES[point]} (it needs {_METHODS[point]})"
                    )
        for name in profile.plugin_args:
            if name not in self._instances and name in registry:
                # Args for a plugin no point enables are still validated: a typo must not hide.
                self._instance(registry, name)

        def enabled(point: ExtensionPoint) -> list[Any]:
            return [self._instances[e.name] for e in profile.enabled(point)]

        sorts = enabled(ExtensionPoint.QUEUE_SORT)
        if len(sorts) > 1:
            raise FrameworkError(
                f"profiles[{profile.scheduler_name}].plugins.queueSort: only one queue sort plugin may be "
                f"enabled, got {', '.join(p.name for p in sorts)}"
            )
        self.queue_sort: QueueSortPlugin | None = sorts[0] if sorts else None
        self.pre_filters: tuple[PreFilterPlugin, ...] = tuple(enabled(ExtensionPoint.PRE_FILTER))
        self.filters: tuple[_FilterSlot, ...] = tuple(
            _FilterSlot(p, p.name, isinstance(p, BatchFilterPlugin), _inputs(p))
            for p in enabled(ExtensionPoint.FILTER)
        )
        self.post_filters: tuple[PostFilterPlugin, ...] = tuple(enabled(ExtensionPoint.POST_FILTER))
        self.pre_scores: tuple[PreScorePlugin, ...] = tuple(enabled(ExtensionPoint.PRE_SCORE))
        scores = []
        for entry in profile.enabled(ExtensionPoint.SCORE):
            p = self._instances[entry.name]
            if entry.weight < 0:
                raise FrameworkError(
                    f"profiles[{profile.scheduler_name}].plugins.score[{entry.name}].weight: "
                    f"must not be negative, got {entry.weight}"
                )
            scores.append(
                _ScoreSlot(
                    p,
                    p.name,
                    entry.weight,
                    isinstance(p, NormalizeScorePlugin),  # type: ignore[arg-type]
                    isinstance(p, BatchScorePlugin),
                    _inputs(p),
                    "score_key" if callable(getattr(p, "score_key", None)) else "binding_key",
                )
            )
        self.scores: tuple[_ScoreSlot, ...] = tuple(scores)
        self.reserves: tuple[ReservePlugin, ...] = tuple(enabled(ExtensionPoint.RESERVE))
        self.permits: tuple[PermitPlugin, ...] = tuple(enabled(ExtensionPoint.PERMIT))
        self.pre_binds: tuple[PreBindPlugin, ...] = tuple(enabled(ExtensionPoint.PRE_BIND))
        self.post_binds: tuple[PostBindPlugin, ...] = tuple(enabled(ExtensionPoint.POST_BIND))
        self.filter_extenders = tuple(e for e in self.extenders if e.supports_filter)
        self.prioritize_extenders = tuple(e for e in self.extenders if e.supports_prioritize)
        self.ignorable = profile.ignorable_plugins
        self.budget = profile.plugin_timeout_seconds
        # Whether an attempt only computes: every plugin is one of fleetsched's own (pure, no I/O),
        # no extender is asked and the points run one after another on the caller's thread.
        self.computes_only = (
            not self.extenders
            and isinstance(self.driver, SerialDriver)
            and all(type(p).__module__.startswith(IN_TREE_PREFIX) for p in self._instances.values())
        )
        # Whole filter+score outcomes are reused only when every answer is declared and nothing
        # per-attempt (PreFilter/PreScore state, extenders, ignorable failures) could change them.
        self._outcome_memo_ok = (
            not self.pre_filters
            and not self.pre_scores
            and not self.extenders
            and all(s.inputs is not None for s in self.filters)
            and all(s.inputs is not None for s in self.scores)
        )
        self._memo_lock = threading.Lock()
        self._memo = _LRU(memo_limit, DEFAULT_MEMO_CELLS)
        # Whole outcomes are valid for one snapshot, and for the snapshots derived from it in which
        # nothing any of these plugins reads changed (``_outcome_facets``; a heartbeat changes only
        # RESOURCES): those share its memo, and a hit is re-pointed at the new cluster values. Kept
        # for the two newest snapshots, so the memo never outlives the clusters it was computed on.
        self.outcome_limit = max(1, memo_limit // 4)
        self._outcomes: dict[int, _LRU] = {}
        facets = ClusterFacet.DELETION
        for slot in (*self.filters, *self.scores):
            facets |= slot.inputs or ClusterFacet.NONE
        self._outcome_facets = facets
        self._tokens = _Tokens()
        self.memo_stats = {"hit": 0, "miss": 0}

    # ---- construction ------------------------------------------------------------------------

    def _instance(self, registry: Registry, name: str) -> Plugin:
        found = self._instances.get(name)
        if found is not None:
            return found
        profile = self.profile.scheduler_name
        factory = registry.get(name)
        if factory is None:
            known = ", ".join(sorted(registry))
            raise FrameworkError(f"profiles[{profile}].plugins: unknown plugin {name!r} (known: {known})")
        args = _validate_args(profile, name, registry.args_model(name), self.profile.plugin_args.get(name))
        try:
            plugin = factory(args, self._handle)
        except PluginArgsError:
            raise
        except BaseException as e:
            if escapes(e):
                raise
            detail = describe(e) if not isinstance(e, Exception) else str(e)
            raise PluginArgsError(profile, name, "", f"the plugin failed to start: {detail}") from None
        if getattr(plugin, "name", None) != name:
            raise FrameworkError(
                f"profiles[{profile}].plugins: the factory of {name!r} made a plugin named "
                f"{getattr(plugin, 'name', None)!r}"
            )
        self._instances[name] = plugin
        return plugin

    # ---- Handle ------------------------------------------------------------------------------

    @property
    def profile_name(self) -> str:
        return self.profile.scheduler_name

    def clock(self) -> float:
        return self._clock()

    def waiting_binding(self, key: str) -> _WaitingBinding | None:
        with self._waiting_lock:
            return self._waiting.get(key)

    def plugin(self, name: str) -> Plugin | None:
        """The instance of an enabled plugin (for tests and explanations)."""
        return self._instances.get(name)

    # ---- QueueSort ---------------------------------------------------------------------------

    def less(self, a: QueuedBindingInfo, b: QueuedBindingInfo) -> bool:
        if self.queue_sort is not None:
            try:
                return bool(self.queue_sort.less(a, b))
            except BaseException as e:  # a broken QueueSort must not stop the queue: Karmada's order then
                if escapes(e):
                    raise
        if a.priority != b.priority:
            return a.priority > b.priority
        return a.timestamp < b.timestamp

    # ---- timing and failure attribution ------------------------------------------------------

    def _point(self, point: str, code: Code, started: float) -> float:
        """Report one extension point's duration since ``started``; returns now. Then a budget
        checkpoint (``groups.checkpoint``): a budgeted caller may stop the attempt between points."""
        now = self._timer()
        if self.point_observer is not None:
            self.point_observer(point, code.value, now - started)
        checkpoint()
        return now

    def _observe(self, plugin: str, point: str, code: Code, seconds: float) -> None:
        if self.observer is not None:
            self.observer(plugin, point, code.value, seconds)

    def _overran(self, seconds: float) -> bool:
        return self.budget is not None and seconds > self.budget

    def _failed(self, plugin: str, point: str, message: str, skipped: list[SkippedPlugin]) -> None:
        """A plugin raised or overran: skip it (ignorable) or fail the binding naming it."""
        if plugin in self.ignorable:
            skipped.append(SkippedPlugin(plugin, point, message))
            return
        raise PluginError.failed(plugin, point, message)

    def _skip_or_raise(self, error: PluginError, skipped: list[SkippedPlugin]) -> None:
        """``_failed`` for an error already made: skip the plugin (ignorable) or raise it."""
        if error.plugin in self.ignorable:
            skipped.append(SkippedPlugin(error.plugin, error.point, error.detail))
            return
        raise error

    def _call(self, name: str, point: str, fn: Callable[[], Any]) -> tuple[Any, float]:
        """One call into a plugin: refused at once while the plugin is marked broken, recorded as
        this thread's current call (the edge names it when it gives up on the binding), timed and
        counted against the plugin's budget. Whatever it raises but the process's own shutdown comes
        back as a ``PluginError`` naming the plugin and the point. Returns (value, seconds)."""
        call: Call = self.health.admit(name, point)
        ident = entering(call)
        t0 = self._timer()
        try:
            value = fn()
        except BaseException as e:
            seconds = self._timer() - t0
            leaving(ident)
            if escapes(e):
                raise
            self.health.returned(call, overran=self._overran(seconds))
            self._observe(name, point, Code.ERROR, seconds)
            raise PluginError.failed(name, point, describe(e)) from None
        seconds = self._timer() - t0
        leaving(ident)
        self.health.returned(call, overran=self._overran(seconds))
        return value, seconds

    def _budget_message(self, seconds: float) -> str:
        return f"took {seconds:.3f}s, over its time budget of {self.budget:g}s"

    # ---- the scheduling cycle: PreFilter, Filter, PostFilter, PreScore, Score -----------------

    def new_context(
        self, binding: Any, observed_affinity_name: str, peers: tuple[Any, ...] = ()
    ) -> FilterContext:
        return FilterContext(
            binding=binding,
            observed_affinity_name=observed_affinity_name,
            target_names=binding.target_names(),
            is_workload=binding.is_workload(),
            peers=peers,
        )

    def run_filter_and_score(
        self,
        ctx: FilterContext,
        snapshot: ClusterSnapshot,
        *,
        step: Callable[[str, float], float] | None = None,
    ) -> FitOutcome:
        """PreFilter, Filter (plugins, then extenders), PostFilter when nothing fits, PreScore, Score
        and NormalizeScore over ``snapshot`` for one attempt. Raises ``PluginError`` for a failing
        plugin that is not ignorable. ``step(name, started)`` reports the Filter and Score steps."""
        started = self._timer()
        keys: list[Hashable] | None = None
        combined: Hashable | None = None
        if self._outcome_memo_ok:
            cached = None
            try:
                keys = [s.plugin.binding_key(ctx) for s in self.filters]  # type: ignore[attr-defined]
                keys += [getattr(s.plugin, s.key_name)(ctx) for s in self.scores]
                combined = tuple(keys)
                memo = self._outcome_memo(snapshot)
                with self._memo_lock:
                    cached = memo.get(combined) if memo is not None else None
            except BaseException as e:  # a broken (or unhashable) binding_key: its own call names it
                if escapes(e):
                    raise
                keys = combined = None
            if cached is not None:
                if cached.snapshot is not snapshot:
                    # Computed on an earlier snapshot with the same answers: the same verdicts
                    # and scores, over this snapshot's cluster values.
                    clusters = snapshot.clusters
                    cached = dataclasses.replace(
                        cached, feasible=[clusters[i] for i in cached.feasible_index], snapshot=snapshot
                    )
                    with self._memo_lock:
                        memo.put(combined, cached, len(clusters))  # type: ignore[union-attr]
                # Verdicts and scores reused: the filter step was the lookup, no scoring was done.
                if step is not None:
                    step(STEP_SCORE, step(STEP_FILTER, started))
                return cached  # type: ignore[no-any-return]
        skipped: list[SkippedPlugin] = []
        clusters = snapshot.clusters
        # PreFilter: a rejection rejects every cluster; Skip leaves the plugin's Filter out.
        failures: list[tuple[str, dict[int, Status]]] = []
        skip_filters: set[str] = set()
        rejected_by_pre_filter = False
        point_started = started
        for pre in self.pre_filters:
            status = self._call_status(pre.name, "PreFilter", lambda p=pre: p.pre_filter(ctx), skipped)
            if status is None or status.is_success:
                continue
            if status.code is Code.SKIP:
                skip_filters.add(pre.name)
                continue
            rejected = Status(status.code, status.reasons, status.plugin or pre.name)
            failures.append((pre.name, dict.fromkeys(snapshot.live_index(), rejected)))
            rejected_by_pre_filter = True
            break
        if self.pre_filters:
            point_started = self._point(
                "PreFilter", Code.UNSCHEDULABLE if rejected_by_pre_filter else Code.SUCCESS, point_started
            )
        if not rejected_by_pre_filter:
            for k, slot in enumerate(self.filters):
                if slot.name in skip_filters:
                    continue
                key = keys[k] if keys is not None else None
                failed = self._filter(slot, key, ctx, snapshot, skipped)
                checkpoint()  # per plugin: one slow filter is enough to use up a binding's budget
                if failed is None:
                    continue
                failures.append((slot.name, failed))
        rejected_index: set[int] = set(snapshot.deleting_index())
        for _, failed in failures:
            rejected_index.update(failed)
        feasible_index = [i for i in range(len(clusters)) if i not in rejected_index]
        verdicts: list[ExtenderVerdict] = []
        for extender in self.filter_extenders:
            if not feasible_index:
                break
            feasible_index = self._extender_filter(
                extender, ctx, snapshot, feasible_index, failures, verdicts, skipped
            )
            checkpoint()
        self._point("Filter", Code.SUCCESS if feasible_index else Code.UNSCHEDULABLE, point_started)
        filtered = step(STEP_FILTER, started) if step is not None else self._timer()
        feasible = [clusters[i] for i in feasible_index]
        post: list[tuple[str, PostFilterResult]] = []
        if not feasible:
            if self.post_filters:
                post = self._post_filter(ctx, snapshot, failures, skipped)
                self._point("PostFilter", Code.SUCCESS, filtered)
            if step is not None:
                step(STEP_SCORE, filtered)
            return FitOutcome(
                feasible,
                [],
                snapshot,
                tuple(failures),
                feasible_index,
                extender_verdicts=tuple(verdicts),
                skipped=tuple(skipped),
                post_filter=tuple(post),
            )
        skip_scores: set[str] = set()
        point_started = filtered
        offered = tuple(feasible)  # what plugins are given: never the list the runtime goes on with
        for pre in self.pre_scores:
            status = self._call_status(
                pre.name, "PreScore", lambda p=pre: p.pre_score(ctx, offered), skipped
            )
            if status is not None and status.code is Code.SKIP:
                skip_scores.add(pre.name)
            elif status is not None and not status.is_success:
                self._failed(pre.name, "PreScore", status.message() or status.code.value, skipped)
                skip_scores.add(pre.name)
        if self.pre_scores:
            point_started = self._point("PreScore", Code.SUCCESS, point_started)
        names: list[str] = []
        raws: list[Sequence[int]] = []
        normalized: list[Sequence[int] | None] = []
        weights: list[int] = []
        n_filters = len(self.filters)
        for k, slot in enumerate(self.scores):
            if slot.name in skip_scores:
                continue
            key = keys[n_filters + k] if keys is not None else None
            vector = self._score(slot, key, ctx, snapshot, feasible_index, skipped)
            checkpoint()
            if vector is None:
                continue
            names.append(slot.name)
            raws.append(vector)
            weights.append(slot.weight)
            normalized.append(
                self._normalize(slot, ctx, offered, _gather(vector, feasible_index), skipped)
                if slot.normalize
                else None
            )
        ext_scores = self._extender_prioritize(ctx, feasible, skipped)
        checkpoint()
        self._point("Score", Code.SUCCESS, point_started)
        if len(raws) == 1 and normalized[0] is None and weights[0] == 1 and not ext_scores:
            totals = _gather(raws[0], feasible_index)
        else:
            totals = [0] * len(feasible_index)
            for k, vector in enumerate(raws):
                weight = weights[k]
                norm = normalized[k]
                part = _gather(vector, feasible_index) if norm is None else list(norm)
                if not any(part):
                    continue  # e.g. ClusterAffinity's constant 0
                if weight != 1:
                    part = [v * weight for v in part]
                totals = list(map(operator.add, totals, part))
            for _, weight, scores in ext_scores:
                for pos in range(len(feasible_index)):
                    totals[pos] += scores[pos] * EXTENDER_SCALE * weight
        if step is not None:
            step(STEP_SCORE, filtered)
        out = FitOutcome(
            feasible,
            totals,
            snapshot,
            tuple(failures),
            feasible_index,
            tuple(names),
            tuple(raws),
            tuple(normalized),
            tuple(weights),
            tuple(ext_scores),
            tuple(verdicts),
            tuple(skipped),
            tuple(post),
        )
        if combined is not None and not skipped:
            self._remember_outcome(snapshot, combined, out, len(clusters))
        return out

    def _outcome_memo(self, snapshot: ClusterSnapshot) -> _LRU | None:
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

    def _keep_outcomes(self, generation: int, memo: _LRU) -> _LRU | None:
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

    def _remember_outcome(self, snapshot: ClusterSnapshot, key: Hashable, out: FitOutcome, cost: int) -> None:
        memo = self._outcome_memo(snapshot)
        if memo is None:
            # Its versions, for the snapshots that will be derived from this one.
            self._tokens.of(snapshot, self._outcome_facets)
            with self._memo_lock:
                memo = self._keep_outcomes(
                    snapshot.generation, _LRU(self.outcome_limit, DEFAULT_MEMO_CELLS // 4)
                )
        if memo is None:
            return
        with self._memo_lock, contextlib.suppress(TypeError):  # an unhashable key was named already
            memo.put(key, out, cost)

    def _call_status(
        self, name: str, point: str, call: Callable[[], Status], skipped: list[SkippedPlugin]
    ) -> Status | None:
        """One timed plugin call answering a Status; None when it failed and was skipped."""
        try:
            status, seconds = self._call(name, point, call)
        except PluginError as e:
            self._skip_or_raise(e, skipped)
            return None
        if not isinstance(status, Status):
            self._observe(name, point, Code.ERROR, seconds)
            self._failed(name, point, f"returned {quote(status)}, not a Status", skipped)
            return None
        self._observe(name, point, status.code, seconds)
        if status.code is Code.ERROR:
            self._failed(name, point, status.message() or "error", skipped)
            return None
        if self._overran(seconds):
            self._failed(name, point, self._budget_message(seconds), skipped)
            return None
        return status

    def _filter(
        self,
        slot: _FilterSlot,
        key: Hashable,
        ctx: FilterContext,
        snapshot: ClusterSnapshot,
        skipped: list[SkippedPlugin],
    ) -> dict[int, Status] | None:
        """Rejections of one filter plugin by snapshot index; None when it failed and was skipped."""
        inputs = slot.inputs
        if inputs is not None and key is None:
            try:
                key = slot.plugin.binding_key(ctx)  # type: ignore[attr-defined]
                hash(key)
            except BaseException as e:
                if escapes(e):
                    raise
                self._failed(slot.name, "Filter", f"binding_key: {describe(e)}", skipped)
                return None
        clusters = snapshot.clusters
        entry: _Entry | None = None
        tokens: tuple[int, ...] | None = None
        if inputs is not None:
            memo_key = ("F", slot.name, key)
            try:
                with self._memo_lock:
                    entry = self._memo.get(memo_key)
            except BaseException as e:  # the key's __eq__ is the plugin's code too
                if escapes(e):
                    raise
                self._failed(slot.name, "Filter", f"binding_key: {describe(e)}", skipped)
                return None
            if entry is not None and entry.generation == snapshot.generation and entry.rejections is not None:
                self.memo_stats["hit"] += 1
                return entry.rejections
            tokens = self._tokens.of(snapshot, inputs)
        live: list[int] = snapshot.live_index()
        # Rejections carried over from the entry for clusters whose facets did not change.
        carried: dict[int, Status] | None = None
        unasked: tuple[int, ...] | None = None
        changed = None
        if entry is not None and tokens is not None and entry.rejections is not None:
            changed = self._tokens.changes(entry, snapshot, inputs, tokens)  # type: ignore[arg-type]
            if changed == () and entry.unasked == tuple(snapshot.deleting_index()):
                # Nothing it reads changed (a heartbeat elsewhere): the same answers, now for this
                # snapshot too.
                self.memo_stats["hit"] += 1
                new = _Entry(
                    snapshot.generation, snapshot.names, tokens, entry.rejections, unasked=entry.unasked
                )
                with self._memo_lock:
                    self._memo.put(("F", slot.name, key), new, len(clusters))
                return entry.rejections
        answers: list[Any] = [None] * len(clusters)
        if changed is not None and entry is not None and entry.rejections is not None:
            redo = set(changed)
            redo.update(entry.unasked)
            misses = sorted(i for i in redo if not clusters[i].deleting)
            # Rejections of clusters being deleted are dropped, so those count as not asked.
            unasked = tuple(snapshot.deleting_index())
            carried = {
                i: st for i, st in entry.rejections.items() if i not in redo and not clusters[i].deleting
            }
        elif entry is not None and tokens is not None:
            _reuse(entry, snapshot, tokens, answers, filters=True)
            misses = [i for i in live if answers[i] is None]
        else:
            misses = live
        self.memo_stats["miss" if misses else "hit"] += 1
        if misses:
            plugin = slot.plugin

            def ask() -> None:
                if slot.batch:
                    asked = ClusterSelection([clusters[i] for i in misses], clusters, tuple(misses))
                    got = plugin.filter_clusters(ctx, asked)  # type: ignore[attr-defined]
                    for i, status in zip(misses, got, strict=True):
                        answers[i] = status
                else:
                    filter_one = plugin.filter
                    for i in misses:
                        answers[i] = filter_one(ctx, clusters[i])

            try:
                _, seconds = self._call(slot.name, "Filter", ask)
            except PluginError as e:
                self._skip_or_raise(e, skipped)
                return None
            self._observe(slot.name, "Filter", Code.SUCCESS, seconds)
            if self._overran(seconds):
                self._failed(slot.name, "Filter", self._budget_message(seconds), skipped)
                return None
        failed: dict[int, Status] = carried if carried is not None else {}
        success, error = Code.SUCCESS, Code.ERROR
        try:
            for i in misses if carried is not None else live:
                status = answers[i]
                code = status.code
                if code is success:
                    continue
                if code is error:
                    self._failed(slot.name, "Filter", status.message() or "error", skipped)
                    return None
                failed[i] = status
        except BaseException as e:  # not a Status (its ``code`` is whatever the plugin made it)
            if escapes(e):
                raise
            self._failed(slot.name, "Filter", f"returned {quote(status)}, not a Status", skipped)
            return None
        if unasked is None:
            unasked = _unasked(answers, snapshot)
        if inputs is not None and tokens is not None:
            new = _Entry(snapshot.generation, snapshot.names, tokens, failed, unasked=unasked)
            with self._memo_lock:
                self._memo.put(("F", slot.name, key), new, len(clusters))
        return failed

    def _score(
        self,
        slot: _ScoreSlot,
        key: Hashable,
        ctx: FilterContext,
        snapshot: ClusterSnapshot,
        feasible_index: list[int],
        skipped: list[SkippedPlugin],
    ) -> Sequence[int] | None:
        """Raw scores by snapshot index (0 where not asked); None when it failed and was skipped.
        Declared plugins are asked for every cluster not being deleted (their answers are reusable
        by bindings with other feasible sets); undeclared ones for the feasible clusters only."""
        inputs = slot.inputs
        clusters = snapshot.clusters
        entry: _Entry | None = None
        tokens: tuple[int, ...] | None = None
        if inputs is not None:
            if key is None:
                try:
                    key = getattr(slot.plugin, slot.key_name)(ctx)
                    hash(key)
                except BaseException as e:
                    if escapes(e):
                        raise
                    self._failed(slot.name, "Score", f"{slot.key_name}: {describe(e)}", skipped)
                    return None
            try:
                with self._memo_lock:
                    entry = self._memo.get(("S", slot.name, key))
            except BaseException as e:
                if escapes(e):
                    raise
                self._failed(slot.name, "Score", f"{slot.key_name}: {describe(e)}", skipped)
                return None
            if entry is not None and entry.generation == snapshot.generation and entry.vector is not None:
                self.memo_stats["hit"] += 1
                return entry.vector
            tokens = self._tokens.of(snapshot, inputs)
            wanted = snapshot.live_index()
        else:
            wanted = feasible_index
        vector: list[int] | None = None
        unasked: tuple[int, ...] | None = None
        changed = None
        if entry is not None and tokens is not None and entry.vector is not None:
            changed = self._tokens.changes(entry, snapshot, inputs, tokens)  # type: ignore[arg-type]
            if changed == () and entry.unasked == tuple(snapshot.deleting_index()):
                self.memo_stats["hit"] += 1
                new = _Entry(
                    snapshot.generation, snapshot.names, tokens, vector=entry.vector, unasked=entry.unasked
                )
                with self._memo_lock:
                    self._memo.put(("S", slot.name, key), new, len(clusters))
                return entry.vector
        answers: list[Any] = [None] * len(clusters)
        if changed is not None and entry is not None and entry.vector is not None:
            vector = list(entry.vector)
            redo = set(changed)
            redo.update(entry.unasked)
            for i in redo:
                vector[i] = 0
            misses = sorted(i for i in redo if not clusters[i].deleting)
            unasked = tuple(sorted(i for i in redo if clusters[i].deleting))
        else:
            if entry is not None and tokens is not None:
                _reuse(entry, snapshot, tokens, answers, filters=False)
                misses = [i for i in wanted if answers[i] is None]
            else:
                misses = wanted
        self.memo_stats["miss" if misses else "hit"] += 1
        if misses:
            plugin = slot.plugin

            def ask() -> list[Any]:
                if slot.batch:
                    asked = ClusterSelection([clusters[i] for i in misses], clusters, tuple(misses))
                    got = list(plugin.score_clusters(ctx, asked))  # type: ignore[attr-defined]
                    if len(got) != len(misses):
                        raise ValueError(f"returned {len(got)} scores for {len(misses)} clusters")
                    return got
                score_one = plugin.score
                return [score_one(ctx, clusters[i]) for i in misses]

            try:
                got, seconds = self._call(slot.name, "Score", ask)
            except PluginError as e:
                # Karmada aborts the attempt on a score error (§5.8): the binding fails, named.
                self._skip_or_raise(e, skipped)
                return None
            try:
                # kube-scheduler's checks: an int; a plugin without NormalizeScore within 0..100
                check_scores(
                    slot.name, "Score", got, lambda j: clusters[misses[j]].name, bounded=not slot.normalize
                )
            except PluginError as e:
                self._observe(slot.name, "Score", Code.ERROR, seconds)
                # Karmada aborts the attempt on a score error (§5.8): the binding fails, named.
                self._skip_or_raise(e, skipped)
                return None
            for i, score in zip(misses, got, strict=True):
                answers[i] = score
            if vector is not None:
                for i in misses:
                    vector[i] = answers[i]
            self._observe(slot.name, "Score", Code.SUCCESS, seconds)
            if self._overran(seconds):
                self._failed(slot.name, "Score", self._budget_message(seconds), skipped)
                return None
        if vector is None:
            vector = [0 if a is None else a for a in answers]
        if inputs is not None and tokens is not None:
            # ``answers`` keeps None for clusters not asked (deleting, or not feasible), so a later
            # snapshot asks them rather than reusing a 0 nobody computed.
            if unasked is None:
                unasked = _unasked(answers, snapshot)
            new = _Entry(snapshot.generation, snapshot.names, tokens, vector=tuple(vector), unasked=unasked)
            with self._memo_lock:
                self._memo.put(("S", slot.name, key), new, len(clusters))
        return vector

    def _normalize(
        self,
        slot: _ScoreSlot,
        ctx: FilterContext,
        feasible: tuple[ClusterInfo, ...],
        raw: list[int],
        skipped: list[SkippedPlugin],
    ) -> Sequence[int] | None:
        if not slot.normalize:
            return None
        normalize = slot.plugin.normalize_score  # type: ignore[attr-defined]
        try:
            got, seconds = self._call(
                slot.name, NORMALIZE_SCORE, lambda: list(normalize(ctx, feasible, tuple(raw)))
            )
        except PluginError as e:
            self._skip_or_raise(e, skipped)
            return [0] * len(raw)
        try:
            if len(got) != len(raw):
                raise PluginError.failed(
                    slot.name, NORMALIZE_SCORE, f"returned {len(got)} scores for {len(raw)} clusters"
                )
            # kube-scheduler: every normalised score an int within MinNodeScore..MaxNodeScore
            check_scores(slot.name, NORMALIZE_SCORE, got, lambda j: feasible[j].name, bounded=True)
        except PluginError as e:
            self._observe(slot.name, NORMALIZE_SCORE, Code.ERROR, seconds)
            self._skip_or_raise(e, skipped)
            return [0] * len(raw)
        self._observe(slot.name, NORMALIZE_SCORE, Code.SUCCESS, seconds)
        return got

    def _post_filter(
        self,
        ctx: FilterContext,
        snapshot: ClusterSnapshot,
        failures: list[tuple[str, dict[int, Status]]],
        skipped: list[SkippedPlugin],
    ) -> list[tuple[str, PostFilterResult]]:
        if not self.post_filters:
            return []
        found: dict[str, Status] = {}
        clusters = snapshot.clusters
        for name, failed in failures:
            for i, status in failed.items():
                found.setdefault(clusters[i].name, Status(status.code, status.reasons, status.plugin or name))
        diagnosis = FrozenDict(found)  # one for every PostFilter plugin: none may change it for the next
        out = []
        for plugin in self.post_filters:
            try:
                result, seconds = self._call(
                    plugin.name, "PostFilter", lambda p=plugin: p.post_filter(ctx, diagnosis)
                )
            except PluginError as e:
                self._skip_or_raise(e, skipped)
                continue
            if not isinstance(result, PostFilterResult) or not isinstance(result.status, Status):
                self._observe(plugin.name, "PostFilter", Code.ERROR, seconds)
                message = f"returned {quote(result)}, not a PostFilterResult"
                self._failed(plugin.name, "PostFilter", message, skipped)
                continue
            self._observe(plugin.name, "PostFilter", result.status.code, seconds)
            out.append((plugin.name, result))
        return out

    # ---- extenders ---------------------------------------------------------------------------

    def _extender_failed(
        self,
        extender: Extender,
        verb: str,
        message: str,
        skipped: list[SkippedPlugin],
        error: BaseException | None = None,
    ) -> None:
        if extender.ignorable:
            skipped.append(SkippedPlugin(extender.name, f"Extender{verb}", message))
            if self.extender_skipped is not None:
                self.extender_skipped(extender.name, verb.lower(), error if error is not None else message)
            return
        raise PluginError(
            extender.name, f"Extender{verb}", f"extender {extender.name} failed at {verb}: {message}"
        )

    def _extender_filter(
        self,
        extender: Extender,
        ctx: FilterContext,
        snapshot: ClusterSnapshot,
        feasible_index: list[int],
        failures: list[tuple[str, dict[int, Status]]],
        verdicts: list[ExtenderVerdict],
        skipped: list[SkippedPlugin],
    ) -> list[int]:
        clusters = snapshot.clusters
        request = ExtenderFilterRequest(extender, ctx.binding, tuple(clusters[i] for i in feasible_index))
        t0 = self._timer()
        (answer,) = self.driver.perform([request])
        seconds = self._timer() - t0
        # Any value of ExtenderFilterResult's shape will do (the HTTPS edge has its own class).
        kept_names = None if isinstance(answer, BaseException) else getattr(answer, "kept", None)
        failed_reasons = getattr(answer, "failed", None) or {}
        unresolvable = getattr(answer, "unresolvable", None) or {}
        if (
            kept_names is None
            or not isinstance(failed_reasons, Mapping)
            or not isinstance(unresolvable, Mapping)
        ):
            message = (
                _extender_message(answer)
                if isinstance(answer, BaseException)
                else f"malformed answer {type(answer).__name__}"
            )
            self._observe(extender.name, "ExtenderFilter", Code.ERROR, seconds)
            self._extender_failed(
                extender, "Filter", message, skipped, answer if isinstance(answer, BaseException) else None
            )
            verdicts.append(ExtenderVerdict(extender.name, len(feasible_index), 0, skipped=message))
            return feasible_index
        self._observe(extender.name, "ExtenderFilter", Code.SUCCESS, seconds)
        kept = set(kept_names)
        out: list[int] = []
        failed: dict[int, Status] = {}
        for i in feasible_index:
            name = clusters[i].name
            if name in kept:
                out.append(i)
            elif name in unresolvable:
                failed[i] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (unresolvable[name],), extender.name)
            else:
                reason = failed_reasons.get(name) or f"cluster(s) rejected by extender {extender.name}"
                failed[i] = Status(Code.UNSCHEDULABLE, (reason,), extender.name)
        if failed:
            failures.append((extender.name, failed))
        verdicts.append(ExtenderVerdict(extender.name, len(out), len(failed)))
        return out

    def _extender_prioritize(
        self, ctx: FilterContext, feasible: list[ClusterInfo], skipped: list[SkippedPlugin]
    ) -> list[tuple[str, int, Sequence[int]]]:
        if not self.prioritize_extenders:
            return []
        requests = [
            ExtenderPrioritizeRequest(e, ctx.binding, tuple(feasible)) for e in self.prioritize_extenders
        ]
        t0 = self._timer()
        answers = self.driver.perform(requests)
        seconds = self._timer() - t0
        out = []
        for extender, answer in zip(self.prioritize_extenders, answers, strict=True):
            if isinstance(answer, Exception) or not isinstance(answer, Mapping):
                message = (
                    _extender_message(answer)
                    if isinstance(answer, Exception)
                    else f"malformed answer {type(answer).__name__}"
                )
                self._observe(extender.name, "ExtenderPrioritize", Code.ERROR, seconds)
                error = answer if isinstance(answer, Exception) else None
                self._extender_failed(extender, "Prioritize", message, skipped, error)
                continue
            try:
                scores = [int(answer.get(c.name, 0)) for c in feasible]
                outside = [v for v in scores if not MIN_SCORE <= v <= MAX_EXTENDER_PRIORITY]
                if outside:
                    raise ValueError(f"score {outside[0]} outside {MIN_SCORE}..{MAX_EXTENDER_PRIORITY}")
            except (TypeError, ValueError) as e:
                self._observe(extender.name, "ExtenderPrioritize", Code.ERROR, seconds)
                self._extender_failed(extender, "Prioritize", f"malformed answer: {e}", skipped)
                continue
            self._observe(extender.name, "ExtenderPrioritize", Code.SUCCESS, seconds)
            out.append((extender.name, extender.weight, scores))
        return out

    # ---- the binding cycle: Reserve, Permit, PreBind, PostBind -------------------------------

    def run_reserve(
        self, ctx: FilterContext, targets: Sequence[TargetCluster]
    ) -> tuple[Status, Callable[[], None]]:
        """Reserve on every Reserve plugin in order. Returns the status and an ``undo`` that calls
        Unreserve on the plugins that reserved, in reverse order (idempotent). On a failure the
        plugins that had reserved are already unreserved."""
        done: list[ReservePlugin] = []
        undone = False

        def undo() -> None:
            nonlocal undone
            if undone:
                return
            undone = True
            for plugin in reversed(done):
                try:
                    _, seconds = self._call(
                        plugin.name, UNRESERVE, lambda p=plugin: p.unreserve(ctx, targets)
                    )
                except PluginError:  # Unreserve must not raise; one that does cannot stop the others
                    continue
                self._observe(plugin.name, UNRESERVE, Code.SUCCESS, seconds)

        started = self._timer()
        for plugin in self.reserves:
            status = self._binding_call(plugin.name, "Reserve", lambda p=plugin: p.reserve(ctx, targets))
            if not status.is_success:
                undo()
                self._point("Reserve", status.code, started)
                return status, undo
            done.append(plugin)
        if self.reserves:
            self._point("Reserve", Code.SUCCESS, started)
        return Status.success(), undo

    def run_permit(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        """Permit on every Permit plugin: Success, the first denial, or WAIT (then ``wait_on_permit``)."""
        waiting: dict[str, float] = {}
        started = self._timer()
        for plugin in self.permits:
            status = self._binding_call(plugin.name, "Permit", lambda p=plugin: p.permit(ctx, targets))
            if status.code is Code.WAIT:
                waiting[plugin.name] = max(0.0, status.timeout_seconds)
                continue
            if not status.is_success:
                self._point("Permit", status.code, started)
                return status
        if self.permits:
            self._point("Permit", Code.WAIT if waiting else Code.SUCCESS, started)
        if not waiting:
            return Status.success()
        held = _WaitingBinding(ctx.binding.key, waiting, self._clock())
        with self._waiting_lock:
            self._waiting[ctx.binding.key] = held
        return Status(
            Code.WAIT,
            (f"waiting at Permit for {', '.join(sorted(waiting))}",),
            timeout_seconds=held.deadline - self._clock(),
        )

    def wait_on_permit(self, key: str) -> Status | None:
        """The decision on a binding held at Permit, on the injected clock: Success once every waiting
        plugin allowed it, a denial (rejected, or timed out), or None while still waiting. A decided
        binding is no longer held."""
        with self._waiting_lock:
            held = self._waiting.get(key)
        if held is None:
            return Status.success()
        status = held.status(self._clock())
        if status is not None:
            with self._waiting_lock:
                self._waiting.pop(key, None)
        return status

    def run_pre_bind(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        started = self._timer()
        for plugin in self.pre_binds:
            status = self._binding_call(plugin.name, "PreBind", lambda p=plugin: p.pre_bind(ctx, targets))
            if not status.is_success:
                self._point("PreBind", status.code, started)
                return status
        if self.pre_binds:
            self._point("PreBind", Code.SUCCESS, started)
        return Status.success()

    def run_post_bind(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> None:
        started = self._timer()
        for plugin in self.post_binds:
            try:
                _, seconds = self._call(plugin.name, "PostBind", lambda p=plugin: p.post_bind(ctx, targets))
            except PluginError:  # informational: a failure changes nothing that was written
                continue
            self._observe(plugin.name, "PostBind", Code.SUCCESS, seconds)
        if self.post_binds:
            self._point("PostBind", Code.SUCCESS, started)

    def _binding_call(self, name: str, point: str, call: Callable[[], Status]) -> Status:
        """A binding-cycle call; a raise or overrun is an Error naming the plugin (ignorable: Success)."""
        try:
            status, seconds = self._call(name, point, call)
        except PluginError as e:
            if name in self.ignorable:
                return Status.success()
            return Status(Code.ERROR, (e.message,), name)
        if not isinstance(status, Status):
            self._observe(name, point, Code.ERROR, seconds)
            if name in self.ignorable:
                return Status.success()
            message = f"plugin {name} failed at {point}: returned {quote(status)}, not a Status"
            return Status(Code.ERROR, (message,), name)
        self._observe(name, point, status.code, seconds)
        if self._overran(seconds) and status.code is not Code.WAIT:
            if name in self.ignorable:
                return Status.success()
            return Status(
                Code.ERROR, (f"plugin {name} failed at {point}: {self._budget_message(seconds)}",), name
            )
        if status.is_success or status.code is Code.WAIT:
            return status
        return dataclasses.replace(status, plugin=status.plugin or name)

    @property
    def has_binding_cycle(self) -> bool:
        """True when some plugin runs at Reserve, Permit, PreBind or PostBind."""
        return bool(self.reserves or self.permits or self.pre_binds or self.post_binds)

    def binding_cycle(self, cycle_context: Any, targets: Sequence[TargetCluster]) -> BindingCycle:
        return BindingCycle(self, cycle_context, tuple(targets))

    def memo_size(self) -> int:
        with self._memo_lock:
            return len(self._memo)


@dataclass(slots=True)
class BindingCycle:
    """Reserve -> Permit -> PreBind -> (the edge writes) -> PostBind, or Unreserve when anything
    after Reserve fails (the write included). The edge calls these in that order."""

    framework: Framework
    ctx: FilterContext
    targets: tuple[TargetCluster, ...]
    _undo: Callable[[], None] | None = field(default=None, repr=False)

    def reserve(self) -> Status:
        status, self._undo = self.framework.run_reserve(self.ctx, self.targets)
        return status

    def permit(self) -> Status:
        status = self.framework.run_permit(self.ctx, self.targets)
        if status.is_rejection or status.code is Code.ERROR:
            self.unreserve()
        return status

    def wait_on_permit(self) -> Status | None:
        status = self.framework.wait_on_permit(self.ctx.binding.key)
        if status is not None and not status.is_success:
            self.unreserve()
        return status

    def on_permit_decided(self, callback: Callable[[], None]) -> None:
        """After a WAIT from ``permit``: call ``callback`` once (in the thread that decides, so an
        event loop's waiter passes ``loop.call_soon_threadsafe``) when every waiting plugin has
        allowed the binding or one rejected it; at once when it is no longer held. The timeout calls
        nothing: wait at most ``permit_seconds_left()``, then ask ``wait_on_permit``."""
        held = self.framework.waiting_binding(self.ctx.binding.key)
        if held is None:
            _call_all([callback])
        else:
            held.on_decided(callback)

    def permit_seconds_left(self) -> float:
        """Seconds on the framework's clock until the binding's Permit timeout (0 when not held)."""
        held = self.framework.waiting_binding(self.ctx.binding.key)
        return 0.0 if held is None else max(0.0, held.deadline - self.framework.clock())

    def pre_bind(self) -> Status:
        status = self.framework.run_pre_bind(self.ctx, self.targets)
        if not status.is_success:
            self.unreserve()
        return status

    def unreserve(self) -> None:
        if self._undo is not None:
            self._undo()

    def post_bind(self) -> None:
        self.framework.run_post_bind(self.ctx, self.targets)


def _inputs(plugin: Any) -> ClusterFacet | None:
    """The cluster facets a plugin declares, or None when it declares nothing (never reused)."""
    if isinstance(plugin, DeclaresInputs):
        facets = plugin.cluster_inputs
        if isinstance(facets, ClusterFacet):
            return facets
    return None


def _unasked(answers: list[Any], snapshot: ClusterSnapshot) -> tuple[int, ...]:
    """Positions left without an answer: the clusters being deleted (never asked)."""
    return tuple(i for i in snapshot.deleting_index() if answers[i] is None)


def _gather(values: Sequence[int], positions: Sequence[int]) -> list[int]:
    """``[values[i] for i in positions]``, gathered in C."""
    if not positions:
        return []
    if len(positions) == 1:
        return [values[positions[0]]]
    return list(operator.itemgetter(*positions)(values))


def _reuse(
    entry: _Entry, snapshot: ClusterSnapshot, versions: tuple[int, ...], answers: list[Any], *, filters: bool
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
            answers[i] = rejections.get(j, _PASSED)
        elif vector is not None:
            answers[i] = vector[j]


_PASSED = Status.success()


def _extender_message(error: BaseException) -> str:
    """What a failed extender call says, without its name (the runtime adds that once): the edge's
    error carries ``kind`` and ``detail``; any other exception is its type and text."""
    detail = getattr(error, "detail", None)
    if isinstance(detail, str):
        kind = getattr(error, "kind", None)
        return f"{kind}: {detail}" if kind else detail
    return str(error) or type(error).__name__


def _validate_args(profile: str, plugin: str, model: Any, raw: Mapping[str, Any] | None) -> Any:
    """The plugin's args as its typed model, or None; a one-line PluginArgsError otherwise."""
    if model is None:
        if raw:
            raise PluginArgsError(profile, plugin, "", "this plugin takes no args")
        return None
    raw = dict(raw or {})
    if hasattr(model, "model_validate"):  # a pydantic model (not imported here: the core stays light)
        try:
            return model.model_validate(raw)
        except Exception as e:
            errors = getattr(e, "errors", None)
            if callable(errors):
                first = errors()[0]
                loc = ".".join(str(p) for p in first.get("loc", ()))
                raise PluginArgsError(profile, plugin, loc, str(first.get("msg", e))) from None
            raise PluginArgsError(profile, plugin, "", str(e)) from None
    if dataclasses.is_dataclass(model):
        fields = {f.name: f for f in dataclasses.fields(model)}
        for name in raw:
            if name not in fields:
                raise PluginArgsError(
                    profile, plugin, name, f"unknown field (known: {', '.join(sorted(fields))})"
                )
        for name, f in fields.items():
            missing = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            if missing and name not in raw:
                raise PluginArgsError(profile, plugin, name, "required")
        try:
            return model(**raw)
        except (TypeError, ValueError) as e:
            raise PluginArgsError(profile, plugin, "", str(e)) from None
    raise PluginArgsError(
        profile, plugin, "", f"args_model {model!r} is neither a dataclass nor a pydantic model"
    )
