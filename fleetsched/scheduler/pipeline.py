"""filter -> score -> estimate -> select -> assign for one binding against one cluster snapshot.

Owns Karmada's generic scheduler for one affinity term (Karmada's
``genericScheduler.Schedule``, pkg/scheduler/core/generic_scheduler.go) over a ``Framework``
handle (``framework/runtime.py`` runs the profile's plugins and owns every memo), and the
``Scheduler`` facade that runs it for a binding (the affinity-group loop lives in ``groups.py``).

Network calls: estimates are stated as ``EstimateRequest`` values, all estimators' requests of the
step in one batch, and performed by the Framework's ``Driver`` (in turn by default; a concurrent
driver overlaps them). The core itself never waits on a network.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fleetsched.scheduler import groups
from fleetsched.scheduler.assign import ClusterDetail, assign_replicas, strategy_of
from fleetsched.scheduler.errors import FitError, SchedulingError
from fleetsched.scheduler.framework.defaults import default_profile, in_tree_registry
from fleetsched.scheduler.framework.interface import (
    UNAUTHENTIC_REPLICA,
    ComponentSetEstimator,
    EstimateRequest,
    Extender,
    ReplicaEstimator,
)
from fleetsched.scheduler.framework.listers import Listers
from fleetsched.scheduler.framework.profile import Profile
from fleetsched.scheduler.framework.registry import Registry
from fleetsched.scheduler.framework.runtime import (
    STEP_ASSIGN_REPLICAS,
    STEP_SELECT,
    Driver,
    ExtenderSkipObserver,
    FitOutcome,
    Framework,
    Observer,
    PluginError,
    PointObserver,
    SerialDriver,
)
from fleetsched.scheduler.general_estimator import GeneralEstimator
from fleetsched.scheduler.matching import compile_affinity
from fleetsched.scheduler.outcome import (
    AttemptFailed,
    AttemptOutput,
    ClusterNumbers,
    GroupAttempt,
    ScheduleResult,
)
from fleetsched.scheduler.select import select_clusters
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import (
    MAX_INT32,
    BindingStatus,
    ClusterInfo,
    ClusterSelection,
    SchedulingBinding,
    TargetCluster,
)

__all__ = ["Scheduler", "Settings", "multi_template_applicable"]

@dataclass(frozen=True, slots=True)
class Settings:
    """Scheduler options that change results (karmada-scheduler's flags and feature gates)."""

    plugins: str = "*"
    enable_empty_workload_propagation: bool = False
    # Feature gate CustomizedClusterResourceModeling (beta, default on).
    customized_cluster_resource_modeling: bool = True
    # Feature gate WorkloadAffinity (alpha, default off): registers the workload (anti-)affinity filters.
    workload_affinity: bool = False
    # Feature gate MultiplePodTemplatesScheduling (alpha, default off): component-set scheduling (§12).
    multiple_pod_templates: bool = False


@dataclass(slots=True)
class _Attempt:
    """Explanation being built for one affinity term."""

    affinity_name: str
    verdicts_factory: Any = None
    summary_factory: Any = None
    selected: tuple[str, ...] = ()
    overflow: bool = False
    numbers_factory: Any = None
    fit: FitOutcome | None = None
    context: Any = None

    def freeze(self, targets: list[TargetCluster] | None, error: SchedulingError | None) -> GroupAttempt:
        fit = self.fit
        return GroupAttempt(
            skipped=fit.skipped if fit is not None else (),
            extenders=fit.extender_verdicts if fit is not None else (),
            post_filter=tuple(
                (name, r.explanation + (f" (proposal: {r.proposal})" if r.proposal else ""))
                for name, r in fit.post_filter
            )
            if fit is not None
            else (),
            context=self.context,
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


class Scheduler:
    """Schedules one binding (RB or CRB, one code path) against an immutable cluster snapshot.

    A synchronous facade over one profile's ``Framework``: without ``profile`` it runs the default
    profile of ``settings.plugins`` (Karmada's ``--plugins``), giving exactly Karmada's results.
    """

    def __init__(
        self,
        *,
        settings: Settings | None = None,
        estimators: Sequence[ReplicaEstimator] = (),
        observe_step: Callable[[str, float], None] | None = None,
        profile: Profile | None = None,
        registry: Registry | None = None,
        extenders: Sequence[Extender] = (),
        observe_plugin: Observer | None = None,
        observe_point: PointObserver | None = None,
        extender_skipped: ExtenderSkipObserver | None = None,
        driver: Driver | None = None,
        clock: Callable[[], float] = time.monotonic,
        timer: Callable[[], float] = time.perf_counter,
        listers: Listers | None = None,
    ) -> None:
        self.settings = settings or Settings()
        # Called with (step, seconds) for each step of each attempt (Karmada's step names, STEPS);
        # the operator exports it as karmada_scheduler_scheduling_algorithm_duration_seconds.
        self.observe_step = observe_step
        if registry is None:
            registry = in_tree_registry(workload_affinity=self.settings.workload_affinity)
        if profile is None:
            profile = default_profile(
                self.settings.plugins, workload_affinity=self.settings.workload_affinity
            )
        self.driver: Driver = driver or SerialDriver()
        self.framework = Framework(
            registry,
            profile,
            extenders=extenders,
            observer=observe_plugin,
            point_observer=observe_point,
            extender_skipped=extender_skipped,
            driver=self.driver,
            clock=clock,
            timer=timer,
            listers=listers,
        )
        self.profile = profile
        self.general = GeneralEstimator(resource_modeling=self.settings.customized_cluster_resource_modeling)
        self.estimators: tuple[ReplicaEstimator, ...] = (self.general, *estimators)
        self.set_estimators: tuple[Any, ...] = tuple(
            e for e in self.estimators if isinstance(e, ComponentSetEstimator)
        )

    @property
    def computes_only(self) -> bool:
        """An attempt never waits on I/O: in-tree plugins run serially, no extender, and no
        estimator but the general one (an accurate estimator is a gRPC call)."""
        return self.framework.computes_only and self.estimators == (self.general,)

    # ---- entry point -------------------------------------------------------------------------

    def schedule(
        self, binding: SchedulingBinding, status: BindingStatus, snapshot: Snapshot
    ) -> ScheduleResult:
        """One scheduling attempt (§3.5-§3.7) for ``binding``; never raises for scheduling failures."""
        return groups.schedule_binding(self, binding, status, snapshot)

    # ---- one affinity term -------------------------------------------------------------------

    def run_algorithm(
        self, binding: SchedulingBinding, status: BindingStatus, snapshot: Snapshot, observed_name: str
    ) -> AttemptOutput:
        """Karmada's generic scheduler for one term; raises ``AttemptFailed`` with the explanation."""
        attempt = _Attempt(affinity_name=observed_name)
        ctx = self.framework.new_context(binding, observed_name, snapshot.peers)
        attempt.context = ctx
        try:
            fo = self.framework.run_filter_and_score(ctx, snapshot, step=self._step)
        except PluginError as e:
            raise AttemptFailed(e, attempt.freeze(None, e)) from None
        attempt.fit = fo
        attempt.verdicts_factory = fo.verdicts
        attempt.summary_factory = fo.summary
        if not fo.feasible:
            err = FitError(len(snapshot.clusters), fo.diagnosis())
            raise AttemptFailed(err, attempt.freeze(None, err))
        overflow_term = _overflow_term(binding, observed_name)
        attempt.overflow = overflow_term is not None
        feasible = fo.feasible
        # The Select step starts here, as Karmada's selectClusters does: the clusters' available
        # replicas (the estimators) and the order by score and availability are part of it.
        started = time.perf_counter()
        allocatable = self._allocatable_replicas(binding, feasible, snapshot, fo.feasible_index)
        available = _available(binding, allocatable, snapshot, fo.feasible_index)
        totals = fo.totals
        orders = _overflow_orders(feasible, overflow_term) if overflow_term is not None else None
        perm = _global_order(snapshot, fo.feasible_index, orders, totals, available)
        if orders is None:
            details = [ClusterDetail(feasible[j], totals[j], 0, allocatable[j], available[j]) for j in perm]
        else:
            details = [
                ClusterDetail(feasible[j], totals[j], orders[j], allocatable[j], available[j]) for j in perm
            ]

        def numbers() -> tuple[ClusterNumbers, ...]:
            # Built only when an explanation is asked for.
            out = []
            for k, d in enumerate(details):
                parts = fo.plugin_scores(perm[k])
                out.append(
                    ClusterNumbers(
                        d.name,
                        tuple((p.plugin, p.raw) for p in parts if not p.extender),
                        d.score,
                        d.overflow_order,
                        d.allocatable,
                        d.available,
                        parts,
                    )
                )
            return tuple(out)

        attempt.numbers_factory = numbers
        multi_template = self.settings.multiple_pod_templates and multi_template_applicable(binding)
        try:
            selected = select_clusters(details, binding, multi_template=multi_template)
        except SchedulingError as e:
            err = e.wrapped("failed to select clusters")
            raise AttemptFailed(err, attempt.freeze(None, err)) from None
        finally:
            self._step(STEP_SELECT, started)
        attempt.selected = tuple([c.name for c in selected])
        fresh = groups.reschedule_required(binding.reschedule_triggered_at, status.last_scheduled_time)
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

    def _allocatable_replicas(
        self,
        binding: SchedulingBinding,
        clusters: list[ClusterInfo],
        snapshot: Snapshot | None = None,
        positions: Sequence[int] | None = None,
    ) -> list[int]:
        """§7.1: the minimum over estimators; -1 answers and failing estimators are ignored.

        Every estimator's request goes to the driver in one batch (they are independent). With the
        clusters' ``positions`` in ``snapshot`` the request carries them (``ClusterSelection``), so
        the general estimator indexes its per-snapshot table instead of finding each cluster."""
        replicas = binding.replicas
        if replicas == 0 and not binding.components:
            return [MAX_INT32] * len(clusters)
        targets: tuple[ClusterInfo, ...] = (
            ClusterSelection(clusters, snapshot.clusters, positions)
            if snapshot is not None and positions is not None
            else tuple(clusters)
        )
        if self.settings.multiple_pod_templates and multi_template_applicable(binding):
            requests = [
                EstimateRequest(e, targets, binding.replica_requirements, binding.components)
                for e in self.set_estimators
            ]
        else:
            requests = [EstimateRequest(e, targets, binding.replica_requirements) for e in self.estimators]
        answers = [a for a in self.driver.perform(requests) if not isinstance(a, BaseException)]
        # A failing estimator is ignored for this attempt.
        n = len(clusters)
        if len(answers) == 1 and len(answers[0]) == n:
            # One answer (the general estimator alone): the minimum is the answer itself.
            return [a if a < MAX_INT32 and a != UNAUTHENTIC_REPLICA else replicas for a in answers[0]]
        result = [MAX_INT32] * n
        for answer in answers:
            for i, a in enumerate(answer[:n]):
                if a != UNAUTHENTIC_REPLICA and a < result[i]:
                    result[i] = a
        return [replicas if a == MAX_INT32 else a for a in result]


def _available(
    binding: SchedulingBinding, allocatable: list[int], snapshot: Snapshot, positions: Sequence[int]
) -> list[int]:
    """Per feasible cluster: its allocatable replicas plus what the binding holds there already
    (the first entry of a name in spec.clusters counts). ``positions`` are ascending."""
    if not binding.clusters:
        return allocatable
    available = list(allocatable)
    if not snapshot.unique_names():
        held: dict[str, int] = {}
        for t in binding.clusters:
            held.setdefault(t.name, t.replicas)
        clusters = snapshot.clusters
        return [a + held.get(clusters[p].name, 0) for a, p in zip(allocatable, positions, strict=True)]
    seen: set[str] = set()
    where = snapshot.position()
    for t in binding.clusters:
        if t.name in seen:
            continue
        seen.add(t.name)
        p = where.get(t.name)
        if p is None:
            continue
        k = bisect.bisect_left(positions, p)
        if k < len(positions) and positions[k] == p:
            available[k] += t.replicas
    return available


# Below this many feasible clusters a Python sort is cheaper than numpy's setup.
_LEXSORT_MIN = 48
# Keys this large or larger are sorted by Python (exact for any size), not in int64.
_LEXSORT_SAFE = 2**62


def _global_order(
    snapshot: Snapshot,
    positions: Sequence[int],
    orders: list[int] | None,
    scores: list[int],
    available: list[int],
) -> list[int]:
    """The permutation of the feasible clusters into §6.2's order (``select.order_key``: overflow
    tier asc, score desc, available desc, name asc), stable where all four tie."""
    n = len(positions)
    if n >= _LEXSORT_MIN and not _too_large(scores) and not _too_large(available):
        keys = [
            snapshot.name_ranks()[np.asarray(positions, dtype=np.intp)],
            -np.array(available, dtype=np.int64),
            -np.array(scores, dtype=np.int64),
        ]
        if orders is not None:
            keys.append(np.array(orders, dtype=np.int64))
        return np.lexsort(keys).tolist()  # type: ignore[no-any-return]
    ranks = snapshot.name_rank_list()
    if orders is None:
        keys_t = [(-scores[k], -available[k], ranks[p]) for k, p in enumerate(positions)]
    else:
        keys_t = [(orders[k], -scores[k], -available[k], ranks[p]) for k, p in enumerate(positions)]
    return sorted(range(n), key=keys_t.__getitem__)


def _too_large(values: list[int]) -> bool:
    return bool(values) and (max(values) >= _LEXSORT_SAFE or min(values) <= -_LEXSORT_SAFE)


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


def _overflow_orders(clusters: list[ClusterInfo], term: Any) -> list[int]:
    """Per cluster: 0 when the term's own affinity matches, i + 1 for the first overflow tier i that
    does, else 1000 (Karmada's overflow order)."""
    tiers = [compile_affinity(term.affinity)] + [compile_affinity(o.affinity) for o in term.overflow]
    out = []
    for c in clusters:
        order = 1000
        for i, matches in enumerate(tiers):
            if matches(c):
                order = i
                break
        out.append(order)
    return out
