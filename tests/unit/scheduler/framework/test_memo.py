"""The Framework's memo: keyed by each plugin's declared inputs, stored and invalidated per cluster."""

from __future__ import annotations

import dataclasses
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetsched.plugin import ClusterInfo, FilterContext, Status
from fleetsched.scheduler.framework import defaults
from fleetsched.scheduler.outcome import ScheduleResult
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.plugins.taint_toleration import TaintToleration
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ResourceSummary, Taint

from ..builders import BindingBuilder, a_binding, a_cluster

EXAMPLES = int(os.environ.get("SCHED_EXAMPLES", "60"))


class CountingTaintToleration(TaintToleration):
    """The in-tree plugin, recording which clusters the runtime asks it about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        self.asked.append(cluster.name)
        return super().filter(ctx, cluster)


def _scheduler() -> tuple[Scheduler, CountingTaintToleration]:
    counting = CountingTaintToleration()
    registry = defaults.in_tree_registry()
    registry.unregister("TaintToleration")
    registry.register("TaintToleration", lambda args, handle: counting)
    return Scheduler(registry=registry), counting


def _run(scheduler: Scheduler, snapshot: Snapshot, binding: BindingBuilder | None = None) -> ScheduleResult:
    binding = binding or a_binding().replicas(2).duplicated()
    return scheduler.schedule(binding.build(), binding.status(), snapshot)


def _feasible(result: ScheduleResult) -> set[str]:
    return {v.cluster for v in result.attempts[0].verdicts if v.feasible}


FLEET = [a_cluster(f"m{i}").free(10).build() for i in range(1, 5)]


def test_a_changed_taint_invalidates_that_clusters_entry_only() -> None:
    scheduler, counting = _scheduler()
    assert _feasible(_run(scheduler, Snapshot(FLEET))) == {"m1", "m2", "m3", "m4"}
    assert counting.asked == ["m1", "m2", "m3", "m4"]
    counting.asked.clear()
    tainted = dataclasses.replace(FLEET[1], taints=(Taint("dedicated", "gpu", "NoSchedule"),))
    result = _run(scheduler, Snapshot([FLEET[0], tainted, FLEET[2], FLEET[3]]))
    assert counting.asked == ["m2"]  # the other clusters' verdicts were reused
    assert _feasible(result) == {"m1", "m3", "m4"}  # and the new taint counts


def test_a_resource_heartbeat_invalidates_nothing_of_taint_toleration() -> None:
    scheduler, counting = _scheduler()
    _run(scheduler, Snapshot(FLEET))
    counting.asked.clear()
    summary = FLEET[2].resource_summary
    assert summary is not None
    beat = dataclasses.replace(
        FLEET[2],
        resource_summary=ResourceSummary(summary.allocatable, {"pods": summary.allocatable["pods"]}, {}),
        memo={},  # a new conversion starts without the estimator's per-cluster memo
    )
    # Equal taints in a new ClusterInfo (as a fresh conversion of a heartbeat gives): reused.
    rebuilt = dataclasses.replace(FLEET[3], taints=tuple(FLEET[3].taints))
    result = _run(scheduler, Snapshot([FLEET[0], FLEET[1], beat, rebuilt]))
    assert counting.asked == []
    # The heartbeat itself is seen: the estimate of the full cluster changed.
    numbers = {n.cluster: n.allocatable for n in result.attempts[0].numbers}
    assert numbers["m3"] == 0 and numbers["m1"] == 10


def test_the_memo_is_bounded_and_evicts_gradually() -> None:
    scheduler, counting = _scheduler()
    framework = scheduler.framework
    framework._memo.limit = 8  # small bounds for the test
    framework.outcome_limit = 2
    snapshot = Snapshot(FLEET)
    for i in range(20):
        _run(scheduler, snapshot, a_binding().replicas(1).duplicated().tolerating(f"k{i}"))
    assert framework.memo_size() == 8
    counting.asked.clear()
    # The most recent tolerations are still remembered; the oldest were evicted one by one.
    _run(scheduler, snapshot, a_binding().replicas(1).duplicated().tolerating("k19"))
    assert counting.asked == []
    _run(scheduler, snapshot, a_binding().replicas(1).duplicated().tolerating("k0"))
    assert counting.asked == ["m1", "m2", "m3", "m4"]


# ---- warm and cold runs agree -------------------------------------------------------------------

NAMES = [f"c{i}" for i in range(6)]


@st.composite
def cluster_versions(draw: st.DrawFn) -> list[ClusterInfo]:
    clusters = []
    for name in NAMES[: draw(st.integers(1, len(NAMES)))]:
        c = a_cluster(name).free(draw(st.integers(0, 30)))
        if draw(st.booleans()):
            c = c.region(draw(st.sampled_from(["r1", "r2"])))
        if draw(st.integers(0, 3)) == 0:
            c = c.tainted(draw(st.sampled_from(["k", "j"])), "NoSchedule")
        if draw(st.integers(0, 4)) == 0:
            c = c.labeled(tier=draw(st.sampled_from(["gold", "silver"])))
        if draw(st.integers(0, 9)) == 0:
            c = c.deleting()
        if draw(st.integers(0, 5)) == 0:
            c = c.without_api()
        clusters.append(c.build())
    return clusters


@st.composite
def some_binding(draw: st.DrawFn) -> BindingBuilder:
    b = a_binding().replicas(draw(st.integers(0, 20)))
    b = draw(st.sampled_from([b.duplicated(), b.dynamic(), b.aggregated(), b.weighted_evenly()]))
    if draw(st.booleans()):
        b = b.tolerating(draw(st.sampled_from(["k", "j"])))
    if draw(st.booleans()):
        b = b.targets(**{draw(st.sampled_from(NAMES)): draw(st.integers(0, 5))})
    if draw(st.integers(0, 3)) == 0:
        b = b.spread("region", 1, 2)
    return b


def _observable(result: ScheduleResult) -> tuple[object, ...]:
    return (
        result.condition,
        result.clusters,
        result.affinity_name,
        tuple((a.summary, a.verdicts, a.numbers, a.selected, a.error) for a in result.attempts),
    )


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(cluster_versions(), st.lists(some_binding(), min_size=1, max_size=4), st.booleans()),
        min_size=1,
        max_size=5,
    )
)
def test_warm_and_cold_runs_give_the_same_results(
    rounds: list[tuple[list[ClusterInfo], list[BindingBuilder], bool]],
) -> None:
    # One long-lived scheduler sees the fleet change between rounds (clusters re-created, tainted,
    # relabelled, deleted, added, removed; some kept as the very same objects, as the operator's
    # cluster cache keeps unchanged ones); every answer must equal a cold scheduler's.
    warm = Scheduler()
    previous: dict[str, ClusterInfo] = {}
    for fresh, bindings, keep_some in rounds:
        clusters = [
            previous[c.name] if keep_some and i % 2 == 0 and c.name in previous else c
            for i, c in enumerate(fresh)
        ]
        previous = {c.name: c for c in clusters}
        snapshot = Snapshot(clusters)
        for binding in bindings:
            cold = Scheduler().schedule(binding.build(), binding.status(), Snapshot(clusters))
            assert _observable(warm.schedule(binding.build(), binding.status(), snapshot)) == _observable(
                cold
            )


def test_the_memo_is_also_bounded_by_the_answers_it_holds() -> None:
    scheduler, _ = _scheduler()
    framework = scheduler.framework
    framework._memo.cost_limit = 3 * len(FLEET)  # room for three entries' answers on this fleet
    framework.outcome_limit = 1
    snapshot = Snapshot(FLEET)
    for i in range(10):
        _run(scheduler, snapshot, a_binding().replicas(1).duplicated().tolerating(f"k{i}"))
    assert framework.memo_size() == 3
