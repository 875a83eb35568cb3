"""The framework runtime: one ``Framework`` per profile, built from a registry, running the plugins.

Owns the construction of a profile's plugins (args validated by each plugin's ``args_model``, the
point's Protocol checked once), the run order of the scheduling cycle's points (PreFilter, Filter,
PostFilter, PreScore, Score, NormalizeScore), weights, and the attribution of errors and overruns to
a plugin (or their skipping, for the profile's ignorable plugins). The rest is in modules of its own,
which the Framework is composed of:

* ``memo.py``: ALL memoisation of plugin answers, keyed by the inputs each plugin declares and stored
  per cluster (the contract is written down in ``interface.py``), and of whole outcomes;
* ``cycle.py``: the binding cycle (Reserve, Permit and the bindings waiting there, PreBind, PostBind,
  Unreserve) and the ``Handle`` plugins are given;
* ``extenders.py``: extenders' filter and prioritize, and the drivers that perform one step's requests;
* ``instrumentation.py``: step and point names, the injected observers (no metrics import here), and
  the one way a plugin is called (``Instrumented._call``: timed, attributed, contained);
* ``containment.py``: what keeps a plugin inside its binding (any exception, scores, broken plugins);
* ``fit.py``: one attempt's ``FitOutcome``; ``checkpoint.py``: the budget checkpoints.

The names other code imports from here (``Framework``, ``BindingCycle``, the drivers, the steps, the
observer types, ``PluginError``, ...) stay importable from this module.
"""

from __future__ import annotations

import dataclasses
import operator
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from fleetsched.scheduler.framework.checkpoint import checkpoint
from fleetsched.scheduler.framework.containment import (
    PluginError,
    PluginHealth,
    check_scores,
    describe,
    escapes,
    quote,
)
from fleetsched.scheduler.framework.cycle import (
    BindingCycle,
    BindingCycleRunner,
    PluginHandle,
    WaitingAtPermit,
)
from fleetsched.scheduler.framework.extenders import (
    EXTENDER_SCALE,
    CallRaised,
    ConcurrentDriver,
    Driver,
    ExtenderCalls,
    SerialDriver,
)
from fleetsched.scheduler.framework.fit import FilterSlot, FitOutcome, ScoreSlot
from fleetsched.scheduler.framework.hints import ClusterEventWithHint, registrations_of
from fleetsched.scheduler.framework.instrumentation import (
    NORMALIZE_SCORE,
    POINT_NAMES,
    STEP_ASSIGN_REPLICAS,
    STEP_FILTER,
    STEP_SCORE,
    STEP_SELECT,
    STEPS,
    UNRESERVE,
    ExtenderSkipObserver,
    Observer,
    PointObserver,
)
from fleetsched.scheduler.framework.interface import (
    BatchFilterPlugin,
    BatchScorePlugin,
    ClusterFacet,
    Code,
    Extender,
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
from fleetsched.scheduler.framework.listers import Listers
from fleetsched.scheduler.framework.memo import (
    DEFAULT_MEMO_CELLS,
    DEFAULT_MEMO_LIMIT,
    LRU,
    MemoEntry,
    OutcomeMemo,
    Tokens,
    declared_inputs,
    gather,
    reuse_answers,
    unasked_positions,
)
from fleetsched.scheduler.framework.plugin_metrics import PluginMetrics
from fleetsched.scheduler.framework.profile import ExtensionPoint, Profile
from fleetsched.scheduler.framework.registry import Registry, validate_args
from fleetsched.scheduler.outcome import ExtenderVerdict, PluginScore, SkippedPlugin
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo, ClusterSelection, frozen_mapping

__all__ = [
    "EXTENDER_SCALE",
    "NORMALIZE_SCORE",
    "POINT_NAMES",
    "POINT_PROTOCOLS",
    "STEPS",
    "STEP_ASSIGN_REPLICAS",
    "STEP_FILTER",
    "STEP_SCORE",
    "STEP_SELECT",
    "UNRESERVE",
    "BindingCycle",
    "CallRaised",
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


class FrameworkError(ValueError):
    """A profile cannot be built: an unknown plugin, a plugin lacking a point's method, bad args.
    One line, naming the profile and the plugin (``PluginArgsError`` is the args case)."""


# The package of fleetsched's own plugins (plugins/registry.py); an out-of-tree plugin lives elsewhere.
IN_TREE_PREFIX = "fleetsched.scheduler.plugins."
_UNSET = object()  # a registration not looked up yet


# ---- the Framework -------------------------------------------------------------------------------


class Framework(OutcomeMemo, ExtenderCalls, BindingCycleRunner):
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
        listers: Listers | None = None,
    ) -> None:
        self.profile = profile
        # Read-only listers the plugins reach through the Handle (empty unless the edge attached some).
        self.listers = listers if listers is not None else Listers()
        # The collectors the plugins register (the edge exports them; ``plugin_metrics.py``).
        self.plugin_metrics = PluginMetrics()
        self.extenders: tuple[Extender, ...] = tuple(extenders)
        self.observer = observer
        self.point_observer = point_observer
        # Told of each failure of an ignorable extender that was skipped (the edge counts them).
        self.extender_skipped = extender_skipped
        self._clock = clock
        self._timer = timer
        self.driver: Driver = driver or SerialDriver()
        self._instances: dict[str, Plugin] = {}
        self._registrations: dict[str, object] = {}  # plugin -> its queueing-hint registrations
        self._waiting: dict[str, WaitingAtPermit] = {}
        self._waiting_lock = threading.Lock()
        # Overruns and broken plugins of this profile (``containment.PluginHealth``).
        self.health = PluginHealth(profile.scheduler_name, clock=clock)
        # What plugins are given at construction: the Handle's three calls, not this object.
        self._handle = PluginHandle(self)
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
        self.filters: tuple[FilterSlot, ...] = tuple(
            FilterSlot(p, p.name, isinstance(p, BatchFilterPlugin), declared_inputs(p))
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
                ScoreSlot(
                    p,
                    p.name,
                    entry.weight,
                    isinstance(p, NormalizeScorePlugin),  # type: ignore[arg-type]
                    isinstance(p, BatchScorePlugin),
                    declared_inputs(p),
                    "score_key" if callable(getattr(p, "score_key", None)) else "binding_key",
                )
            )
        self.scores: tuple[ScoreSlot, ...] = tuple(scores)
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
        self._memo = LRU(memo_limit, DEFAULT_MEMO_CELLS)
        # Whole outcomes are valid for one snapshot, and for the snapshots derived from it in which
        # nothing any of these plugins reads changed (``_outcome_facets``; a heartbeat changes only
        # RESOURCES): those share its memo, and a hit is re-pointed at the new cluster values. Kept
        # for the two newest snapshots, so the memo never outlives the clusters it was computed on.
        self.outcome_limit = max(1, memo_limit // 4)
        self._outcomes: dict[int, LRU] = {}
        facets = ClusterFacet.DELETION
        for slot in (*self.filters, *self.scores):
            facets |= slot.inputs or ClusterFacet.NONE
        self._outcome_facets = facets
        self._tokens = Tokens()
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
        args = validate_args(profile, name, registry.args_model(name), self.profile.plugin_args.get(name))
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

    def plugin(self, name: str) -> Plugin | None:
        """The instance of an enabled plugin (for tests and explanations)."""
        return self._instances.get(name)

    # ---- queueing hints ----------------------------------------------------------------------

    def events_to_register(self, plugin: str) -> tuple[ClusterEventWithHint, ...] | None:
        """What plugin ``plugin`` of this profile declared can help a binding it rejected (hints.py);
        None for a plugin that declares nothing or is not one of the profile's (an extender): every
        event may help then."""
        found = self._registrations.get(plugin, _UNSET)
        if found is _UNSET:
            instance = self._instances.get(plugin)
            found = None if instance is None else registrations_of(instance)
            self._registrations[plugin] = found
        return found  # type: ignore[return-value]

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
        snapshot: Snapshot,
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
                self._normalize(slot, ctx, offered, gather(vector, feasible_index), skipped)
                if slot.normalize
                else None
            )
        ext_scores = self._extender_prioritize(ctx, feasible, skipped)
        checkpoint()
        self._point("Score", Code.SUCCESS, point_started)
        if len(raws) == 1 and normalized[0] is None and weights[0] == 1 and not ext_scores:
            totals = gather(raws[0], feasible_index)
        else:
            totals = [0] * len(feasible_index)
            for k, vector in enumerate(raws):
                weight = weights[k]
                norm = normalized[k]
                part = gather(vector, feasible_index) if norm is None else list(norm)
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
        slot: FilterSlot,
        key: Hashable,
        ctx: FilterContext,
        snapshot: Snapshot,
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
        entry: MemoEntry | None = None
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
                new = MemoEntry(
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
            reuse_answers(entry, snapshot, tokens, answers, filters=True)
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
            unasked = unasked_positions(answers, snapshot)
        if inputs is not None and tokens is not None:
            new = MemoEntry(snapshot.generation, snapshot.names, tokens, failed, unasked=unasked)
            with self._memo_lock:
                self._memo.put(("F", slot.name, key), new, len(clusters))
        return failed

    def _score(
        self,
        slot: ScoreSlot,
        key: Hashable,
        ctx: FilterContext,
        snapshot: Snapshot,
        feasible_index: list[int],
        skipped: list[SkippedPlugin],
    ) -> Sequence[int] | None:
        """Raw scores by snapshot index (0 where not asked); None when it failed and was skipped.
        Declared plugins are asked for every cluster not being deleted (their answers are reusable
        by bindings with other feasible sets); undeclared ones for the feasible clusters only."""
        inputs = slot.inputs
        clusters = snapshot.clusters
        entry: MemoEntry | None = None
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
                new = MemoEntry(
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
                reuse_answers(entry, snapshot, tokens, answers, filters=False)
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
                got = check_scores(
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
                unasked = unasked_positions(answers, snapshot)
            new = MemoEntry(
                snapshot.generation, snapshot.names, tokens, vector=tuple(vector), unasked=unasked
            )
            with self._memo_lock:
                self._memo.put(("S", slot.name, key), new, len(clusters))
        return vector

    def _normalize(
        self,
        slot: ScoreSlot,
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
            got = check_scores(slot.name, NORMALIZE_SCORE, got, lambda j: feasible[j].name, bounded=True)
        except PluginError as e:
            self._observe(slot.name, NORMALIZE_SCORE, Code.ERROR, seconds)
            self._skip_or_raise(e, skipped)
            return [0] * len(raw)
        self._observe(slot.name, NORMALIZE_SCORE, Code.SUCCESS, seconds)
        return got

    def _post_filter(
        self,
        ctx: FilterContext,
        snapshot: Snapshot,
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
        diagnosis = frozen_mapping(found)  # one for every PostFilter plugin: none may change it for the next
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

    def memo_size(self) -> int:
        with self._memo_lock:
            return len(self._memo)
