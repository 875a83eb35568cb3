"""filter -> score -> estimate -> select -> assign for one binding against one cluster snapshot.

Owns Karmada's generic scheduler for one affinity term (scheduler.md §4-§9) over a ``Framework``
handle (``framework/runtime.py`` runs the profile's plugins and owns every memo), and the
``Scheduler`` facade that runs it for a binding (the affinity-group loop lives in ``groups.py``).

Network calls: estimates are stated as ``EstimateRequest`` values, all estimators' requests of the
step in one batch, and performed by the Framework's ``Driver`` (in turn by default; a concurrent
driver overlaps them). The core itself never waits on a network.
"""

from __future__ import annotations

import datetime as dt
import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetsched.estimator.general import GeneralEstimator
from fleetsched.scheduler.assign import ClusterDetail, assign_replicas, strategy_of
from fleetsched.scheduler.config.types import Profile
from fleetsched.scheduler.errors import FitError, SchedulingError
from fleetsched.scheduler.framework.defaults import default_profile, in_tree_registry
from fleetsched.scheduler.framework.interface import (
    UNAUTHENTIC_REPLICA,
    ComponentSetEstimator,
    EstimateRequest,
    Extender,
    ReplicaEstimator,
)
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
from fleetsched.scheduler.matching import cluster_matches
from fleetsched.scheduler.outcome import (
    ClusterNumbers,
    ClusterVerdict,
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

_generations = itertools.count(1)


class Snapshot:
    """An immutable list of clusters for one scheduling cycle.

    Holds only what follows from the clusters themselves; plugin answers are memoised by the
    Framework, keyed by ``generation`` (unique per snapshot in the process) and per cluster.

    ``replaced`` derives the snapshot after some clusters changed in place (a status heartbeat): the
    same names in the same order, shared, and ``parent`` = (the generation derived from, the changed
    positions), so the Framework revalidates its memos in the time of the changed clusters.
    """

    __slots__ = (
        "_base_verdicts",
        "_deleting",
        "_live",
        "clusters",
        "generation",
        "names",
        "parent",
        "peers",
    )

    def __init__(self, clusters: Iterable[ClusterInfo], peers: Iterable[PeerBinding] = ()) -> None:
        self.clusters: tuple[ClusterInfo, ...] = tuple(clusters)
        self.names: tuple[str, ...] = tuple(c.name for c in self.clusters)
        # ResourceBindings and their targets, for the gated workload (anti-)affinity plugins only.
        self.peers: tuple[PeerBinding, ...] = tuple(peers)
        self.generation = next(_generations)
        self.parent: tuple[int, tuple[int, ...]] | None = None
        self._base_verdicts: tuple[ClusterVerdict, ...] | None = None
        self._deleting: list[int] | None = None
        self._live: list[int] | None = None

    def replaced(self, changes: Mapping[int, ClusterInfo]) -> Snapshot:
        """This snapshot with the cluster at each position of ``changes`` replaced by a new value of
        the same cluster (same name); the other clusters, the names and the peers are shared."""
        clusters = list(self.clusters)
        deletion_changed = False
        for i, cluster in changes.items():
            old = clusters[i]
            if old.name != cluster.name:
                raise ValueError(f"replaced: position {i} holds cluster {old.name!r}, not {cluster.name!r}")
            deletion_changed = deletion_changed or old.deleting != cluster.deleting
            clusters[i] = cluster
        new = Snapshot.__new__(Snapshot)
        new.clusters = tuple(clusters)
        new.names = self.names
        new.peers = self.peers
        new.generation = next(_generations)
        new.parent = (self.generation, tuple(sorted(changes)))
        if deletion_changed:
            new._base_verdicts = new._deleting = new._live = None
        else:  # they follow from names and deletion only
            new._base_verdicts, new._deleting, new._live = self._base_verdicts, self._deleting, self._live
        return new

    def deleting_index(self) -> list[int]:
        """Positions of the clusters being deleted (never offered to a plugin)."""
        if self._deleting is None:
            self._deleting = [i for i, c in enumerate(self.clusters) if c.deleting]
        return self._deleting

    def live_index(self) -> list[int]:
        """Positions of the clusters not being deleted."""
        if self._live is None:
            self._live = [i for i, c in enumerate(self.clusters) if not c.deleting]
        return self._live

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


class AttemptFailed(Exception):
    def __init__(self, error: SchedulingError, attempt: GroupAttempt) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempt = attempt


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
        )
        self.profile = profile
        self.general = GeneralEstimator(resource_modeling=self.settings.customized_cluster_resource_modeling)
        self.estimators: tuple[ReplicaEstimator, ...] = (self.general, *estimators)
        self.set_estimators: tuple[Any, ...] = tuple(
            e for e in self.estimators if isinstance(e, ComponentSetEstimator)
        )

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
            out = []
            for d in details:
                parts = fo.plugin_scores(position[id(d.cluster)])
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

    def _allocatable_replicas(self, binding: SchedulingBinding, clusters: list[ClusterInfo]) -> list[int]:
        """§7.1: the minimum over estimators; -1 answers and failing estimators are ignored.

        Every estimator's request goes to the driver in one batch (they are independent)."""
        result = [MAX_INT32] * len(clusters)
        if binding.replicas == 0 and not binding.components:
            return result
        targets = tuple(clusters)
        if self.settings.multiple_pod_templates and multi_template_applicable(binding):
            requests = [
                EstimateRequest(e, targets, binding.replica_requirements, binding.components)
                for e in self.set_estimators
            ]
        else:
            requests = [EstimateRequest(e, targets, binding.replica_requirements) for e in self.estimators]
        for answer in self.driver.perform(requests):
            if isinstance(answer, BaseException):  # the whole estimator is ignored for this attempt
                continue
            for i, n in enumerate(answer[: len(clusters)]):
                if n != UNAUTHENTIC_REPLICA and n < result[i]:
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
