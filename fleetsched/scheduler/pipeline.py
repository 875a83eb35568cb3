"""filter -> score -> estimate -> select -> assign for one binding against one cluster snapshot.

Owns Karmada's generic scheduler for one affinity term (scheduler.md §4-§9) and the ``Scheduler``
entry point that runs it for a binding (the affinity-group loop lives in ``groups.py``). Work that
only depends on the snapshot and on the binding's placement (filter verdicts and scores) is
memoised on the snapshot, so bindings sharing a placement pay for it once. Pure: estimators are
passed in; nothing here waits on a network.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from fleetsched.estimator.general import GeneralEstimator
from fleetsched.scheduler import framework
from fleetsched.scheduler.assign import ClusterDetail, assign_replicas, strategy_of
from fleetsched.scheduler.errors import FitError, SchedulingError
from fleetsched.scheduler.framework import (
    STEP_ASSIGN_REPLICAS,
    STEP_FILTER,
    STEP_SCORE,
    STEP_SELECT,
    UNAUTHENTIC_REPLICA,
    Code,
    FilterContext,
    FilterPlugin,
    ReplicaEstimator,
    Result,
    ScorePlugin,
)
from fleetsched.scheduler.matching import cluster_matches
from fleetsched.scheduler.outcome import (
    ClusterNumbers,
    ClusterVerdict,
    FilterSummary,
    GroupAttempt,
    ScheduleResult,
)
from fleetsched.scheduler.select import order_key, select_clusters
from fleetsched.scheduler.types import (
    MAX_INT32,
    BindingStatus,
    ClusterInfo,
    PeerBinding,
    SchedulingBinding,
    TargetCluster,
)

__all__ = ["Scheduler", "Settings", "Snapshot", "multi_template_applicable", "reschedule_required"]


class Snapshot:
    """An immutable list of clusters for one scheduling cycle, plus memos valid while it lives."""

    __slots__ = ("_base_verdicts", "_memo", "clusters", "peers")

    def __init__(self, clusters: Iterable[ClusterInfo], peers: Iterable[PeerBinding] = ()) -> None:
        self.clusters: tuple[ClusterInfo, ...] = tuple(clusters)
        # ResourceBindings and their targets, for the gated workload (anti-)affinity plugins only.
        self.peers: tuple[PeerBinding, ...] = tuple(peers)
        self._memo: dict[Any, Any] = {}
        self._base_verdicts: tuple[ClusterVerdict, ...] | None = None

    def deleting_index(self) -> list[int]:
        return [i for i, v in enumerate(self.base_verdicts()) if v.deleting]

    def base_verdicts(self) -> tuple[ClusterVerdict, ...]:
        """Per cluster: feasible unless being deleted, before any plugin has spoken."""
        if self._base_verdicts is None:
            self._base_verdicts = tuple(
                ClusterVerdict(c.name, False, deleting=True) if c.deleting else ClusterVerdict(c.name, True)
                for c in self.clusters
            )
        return self._base_verdicts

    def __len__(self) -> int:
        return len(self.clusters)

    # A long-lived snapshot (an operator whose clusters do not change) must not grow without bound.
    MEMO_LIMIT = 20_000

    def remember(self, key: Any, value: Any) -> None:
        if len(self._memo) >= self.MEMO_LIMIT:
            self._memo.clear()
        self._memo[key] = value


@dataclass(frozen=True, slots=True)
class Settings:
    """Scheduler options that change results (scheduler.md §1)."""

    plugins: str = "*"
    enable_empty_workload_propagation: bool = False
    # Feature gate CustomizedClusterResourceModeling (beta, default on).
    customized_cluster_resource_modeling: bool = True
    # Feature gate WorkloadAffinity (alpha, default off): registers the workload (anti-)affinity filters.
    workload_affinity: bool = False
    # Feature gate MultiplePodTemplatesScheduling (alpha, default off): component-set scheduling (§12).
    multiple_pod_templates: bool = False


def reschedule_required(triggered_at: dt.datetime | None, last_scheduled: dt.datetime | None) -> bool:
    """§3.4 rule 3: an explicit reschedule newer than the last schedule."""
    return triggered_at is not None and last_scheduled is not None and triggered_at > last_scheduled


@dataclass(slots=True)
class _FilterOutcome:
    feasible: list[ClusterInfo]
    totals: list[int]  # total score per feasible cluster
    snapshot: Snapshot
    # Per filter plugin (in order): its name and its rejections by snapshot index.
    failures: tuple[tuple[str, dict[int, Result]], ...]
    # For explanations: per score plugin, its name and scores by snapshot index; feasible indices.
    score_vectors: tuple[tuple[str, list[int]], ...]
    feasible_index: list[int]
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
        return self._summary

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

    def scores_of(self, position: int) -> tuple[tuple[str, int], ...]:
        i = self.feasible_index[position]
        return tuple((name, vector[i]) for name, vector in self.score_vectors)


@dataclass(slots=True)
class AttemptOutput:
    targets: list[TargetCluster]
    attempt: GroupAttempt


@dataclass(slots=True)
class _Attempt:
    """Explanation being built for one affinity term."""

    affinity_name: str
    verdicts_factory: Any = None
    summary_factory: Any = None
    selected: tuple[str, ...] = ()
    overflow: bool = False
    numbers_factory: Any = None

    def freeze(self, targets: list[TargetCluster] | None, error: SchedulingError | None) -> GroupAttempt:
        return GroupAttempt(
            affinity_name=self.affinity_name,
            verdicts_factory=self.verdicts_factory,
            summary_factory=self.summary_factory,
            numbers_factory=self.numbers_factory,
            selected=self.selected,
            targets=tuple(targets) if targets is not None else None,
            error=str(error) if error is not None else "",
            error_reason=error.reason if error is not None else "",
            overflow=self.overflow,
        )


class AttemptFailed(Exception):
    def __init__(self, error: SchedulingError, attempt: GroupAttempt) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempt = attempt


class Scheduler:
    """Schedules one binding (RB or CRB, one code path) against an immutable cluster snapshot."""

    def __init__(
        self,
        *,
        settings: Settings | None = None,
        estimators: Sequence[ReplicaEstimator] = (),
        observe_step: Callable[[str, float], None] | None = None,
    ) -> None:
        self.settings = settings or Settings()
        # Called with (step, seconds) for each step of each attempt (Karmada's step names, STEPS);
        # the operator exports it as karmada_scheduler_scheduling_algorithm_duration_seconds.
        self.observe_step = observe_step
        registry = framework.in_tree_registry(workload_affinity=self.settings.workload_affinity)
        enabled = framework.select_plugins(
            self.settings.plugins,
            framework.defaults.karmada_plugin_names(workload_affinity=self.settings.workload_affinity),
        )
        self.enabled_plugins = enabled
        instances = {name: registry[name](None, None) for name in enabled}  # type: ignore[arg-type]
        self.filters: tuple[FilterPlugin, ...] = tuple(
            instances[n]
            for n in framework.DEFAULT_FILTERS
            if n in instances  # type: ignore[misc]
        )
        self.scorers: tuple[ScorePlugin, ...] = tuple(
            instances[n]
            for n in framework.DEFAULT_SCORES
            if n in instances  # type: ignore[misc]
        )
        self.general = GeneralEstimator(resource_modeling=self.settings.customized_cluster_resource_modeling)
        self.estimators: tuple[ReplicaEstimator, ...] = (self.general, *estimators)
        self._filter_key = tuple(p.name for p in self.filters) + tuple(p.name for p in self.scorers)

    # ---- entry point -------------------------------------------------------------------------

    def schedule(
        self, binding: SchedulingBinding, status: BindingStatus, snapshot: Snapshot
    ) -> ScheduleResult:
        """One scheduling attempt (§3.5-§3.7) for ``binding``; never raises for scheduling failures."""
        from fleetsched.scheduler import groups

        return groups.schedule_binding(self, binding, status, snapshot)

    # ---- one affinity term -------------------------------------------------------------------

    def run_algorithm(
        self, binding: SchedulingBinding, status: BindingStatus, snapshot: Snapshot, observed_name: str
    ) -> AttemptOutput:
        """Karmada's generic scheduler for one term; raises ``AttemptFailed`` with the explanation."""
        attempt = _Attempt(affinity_name=observed_name)
        ctx = FilterContext(
            binding=binding,
            observed_affinity_name=observed_name,
            target_names=binding.target_names(),
            is_workload=binding.is_workload(),
            peers=snapshot.peers,
        )
        fo = self._find_clusters_that_fit(ctx, snapshot)
        attempt.verdicts_factory = fo.verdicts
        attempt.summary_factory = fo.summary
        if not fo.feasible:
            diagnosis = {v.cluster: v.reasons for v in fo.verdicts() if not v.feasible and not v.deleting}
            err = FitError(len(snapshot.clusters), diagnosis)
            raise AttemptFailed(err, attempt.freeze(None, err))
        overflow_term = _overflow_term(binding, observed_name)
        attempt.overflow = overflow_term is not None
        allocatable = self._allocatable_replicas(binding, fo.feasible)
        held: dict[str, int] = {}
        for t in binding.clusters:
            held.setdefault(t.name, t.replicas)
        details: list[ClusterDetail] = []
        totals = fo.totals
        for i, c in enumerate(fo.feasible):
            order = 0 if overflow_term is None else _overflow_order(c, overflow_term)
            details.append(
                ClusterDetail(c, totals[i], order, allocatable[i], allocatable[i] + held.get(c.name, 0))
            )
        unsorted = list(details)
        details.sort(key=order_key)

        def numbers() -> tuple[ClusterNumbers, ...]:
            # Built only when an explanation is asked for.
            position = {id(d.cluster): i for i, d in enumerate(unsorted)}
            return tuple(
                ClusterNumbers(
                    d.name,
                    fo.scores_of(position[id(d.cluster)]),
                    d.score,
                    d.overflow_order,
                    d.allocatable,
                    d.available,
                )
                for d in details
            )

        attempt.numbers_factory = numbers
        multi_template = self.settings.multiple_pod_templates and multi_template_applicable(binding)
        started = time.perf_counter()
        try:
            selected = select_clusters(details, binding, multi_template=multi_template)
        except SchedulingError as e:
            err = e.wrapped("failed to select clusters")
            raise AttemptFailed(err, attempt.freeze(None, err)) from None
        finally:
            self._step(STEP_SELECT, started)
        attempt.selected = tuple(c.name for c in selected)
        fresh = reschedule_required(binding.reschedule_triggered_at, status.last_scheduled_time)
        started = time.perf_counter()
        try:
            targets = assign_replicas(
                selected,
                binding,
                fresh=fresh,
                overflow=overflow_term is not None,
                empty_workload_propagation=self.settings.enable_empty_workload_propagation,
                multi_template=multi_template,
            )
        except SchedulingError as e:
            err = e.wrapped("failed to assign replicas")
            raise AttemptFailed(err, attempt.freeze(None, err)) from None
        finally:
            self._step(STEP_ASSIGN_REPLICAS, started)
        return AttemptOutput(targets, attempt.freeze(targets, None))

    def strategy(self, binding: SchedulingBinding) -> str:
        return strategy_of(binding) or "unsupported"

    # ---- stages ------------------------------------------------------------------------------

    def _step(self, step: str, started: float) -> float:
        """Report a step's duration since ``started``; returns the time it ended."""
        ended = time.perf_counter()
        if self.observe_step is not None:
            self.observe_step(step, ended - started)
        return ended

    def _find_clusters_that_fit(self, ctx: FilterContext, snapshot: Snapshot) -> _FilterOutcome:
        # Each plugin states what of the binding its verdicts depend on (``cache_key``); verdict
        # vectors are memoised per snapshot under that key, and so is the combined outcome.
        started = time.perf_counter()
        keys = []
        for plugin in (*self.filters, *self.scorers):
            key_fn = getattr(plugin, "binding_key", None)
            keys.append(key_fn(ctx) if key_fn is not None else None)
        combined_key = None if None in keys else ("fit", self._filter_key, tuple(keys))
        if combined_key is not None:
            cached = snapshot._memo.get(combined_key)
            if cached is not None:
                # Verdicts and scores reused from this snapshot: the filter step was the lookup,
                # and no scoring work was done.
                self._step(STEP_SCORE, self._step(STEP_FILTER, started))
                return cached  # type: ignore[no-any-return]
        n_filters = len(self.filters)
        failures = [self._filter_vector(p, keys[i], ctx, snapshot) for i, p in enumerate(self.filters)]
        filtered = self._step(STEP_FILTER, started)
        score_vectors = tuple(
            (p.name, self._score_vector(p, keys[n_filters + i], ctx, snapshot))
            for i, p in enumerate(self.scorers)
        )
        self._step(STEP_SCORE, filtered)
        clusters = snapshot.clusters
        rejected: set[int] = set(snapshot.deleting_index())
        for failed in failures:
            rejected.update(failed)
        feasible_index = [i for i in range(len(clusters)) if i not in rejected]
        feasible = [clusters[i] for i in feasible_index]
        if len(score_vectors) == 1:
            vector = score_vectors[0][1]
            totals = [vector[i] for i in feasible_index]
        else:
            totals = [sum(v[i] for _, v in score_vectors) for i in feasible_index]
        named_failures = tuple(zip((p.name for p in self.filters), failures, strict=True))
        out = _FilterOutcome(feasible, totals, snapshot, named_failures, score_vectors, feasible_index)
        if combined_key is not None:
            snapshot.remember(combined_key, out)
        return out

    @staticmethod
    def _filter_vector(
        plugin: FilterPlugin, key: Any, ctx: FilterContext, snapshot: Snapshot
    ) -> dict[int, Result]:
        """Rejections of one plugin by cluster index (deleting clusters are never asked)."""
        memo_key = ("filter", plugin.name, key)
        if key is not None:
            cached = snapshot._memo.get(memo_key)
            if cached is not None:
                return cached  # type: ignore[no-any-return]
        failed: dict[int, Result] = {}
        # A plugin may answer for all clusters at once (work shared across clusters done once).
        batch = getattr(plugin, "filter_clusters", None)
        results: list[Result] | None = None
        if batch is not None:
            try:
                results = batch(ctx, snapshot.clusters)
            except Exception:
                results = None  # fall back to one call per cluster, which attributes the error
        for i, cluster in enumerate(snapshot.clusters):
            if cluster.deleting:
                continue
            if results is not None:
                result = results[i]
                if result.code is not Code.SUCCESS:
                    failed[i] = result
                continue
            try:
                result = plugin.filter(ctx, cluster)
            except Exception as e:  # a plugin bug: Karmada's Error code, attributed to the plugin
                result = Result(Code.ERROR, (f"plugin {plugin.name} failed: {e}",), plugin.name)
            if result.code is not Code.SUCCESS:
                failed[i] = result
        if key is not None:
            snapshot.remember(memo_key, failed)
        return failed

    @staticmethod
    def _score_vector(plugin: ScorePlugin, key: Any, ctx: FilterContext, snapshot: Snapshot) -> list[int]:
        memo_key = ("score", plugin.name, key)
        if key is not None:
            cached = snapshot._memo.get(memo_key)
            if cached is not None:
                return cached  # type: ignore[no-any-return]
        # Score plugin errors abort the attempt in Karmada (§5.8); ours are total functions.
        vector = [0 if c.deleting else plugin.score(ctx, c) for c in snapshot.clusters]
        if key is not None:
            snapshot.remember(memo_key, vector)
        return vector

    def _allocatable_replicas(self, binding: SchedulingBinding, clusters: list[ClusterInfo]) -> list[int]:
        """§7.1: the minimum over estimators; -1 answers and failing estimators are ignored."""
        result = [MAX_INT32] * len(clusters)
        if binding.replicas == 0 and not binding.components:
            return result
        if self.settings.multiple_pod_templates and multi_template_applicable(binding):
            for estimator in self.estimators:
                sets = getattr(estimator, "max_available_component_sets", None)
                if sets is None:
                    continue
                try:
                    answer = sets(clusters, binding.components)
                except Exception:
                    continue
                for i, n in enumerate(answer[: len(clusters)]):
                    if n != UNAUTHENTIC_REPLICA and n < result[i]:
                        result[i] = n
            return [binding.replicas if n == MAX_INT32 else n for n in result]
        for estimator in self.estimators:
            try:
                answer = estimator.max_available_replicas(clusters, binding.replica_requirements)
            except Exception:  # the whole estimator is ignored for this attempt
                continue
            for i, n in enumerate(answer[: len(clusters)]):
                if n == UNAUTHENTIC_REPLICA:
                    continue
                if n < result[i]:
                    result[i] = n
        return [binding.replicas if n == MAX_INT32 else n for n in result]


def multi_template_applicable(binding: SchedulingBinding) -> bool:
    """§12: components present and a cluster spread constraint with minGroups == maxGroups == 1."""
    if not binding.components or binding.placement is None:
        return False
    return any(
        sc.spread_by_field == "cluster" and sc.min_groups == 1 and sc.max_groups == 1
        for sc in binding.placement.spread_constraints
    )


def _overflow_term(binding: SchedulingBinding, observed_name: str) -> Any:
    placement = binding.placement
    if placement is None or placement.cluster_affinity is not None or placement.cluster_affinities is None:
        return None
    if not observed_name:
        return None
    for term in placement.cluster_affinities:
        if term.name == observed_name:
            return term if term.overflow is not None else None
    return None


def _overflow_order(cluster: ClusterInfo, term: Any) -> int:
    if cluster_matches(cluster, term.affinity):
        return 0
    for i, o in enumerate(term.overflow):
        if cluster_matches(cluster, o.affinity):
            return i + 1
    return 1000
